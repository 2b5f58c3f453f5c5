#!/usr/bin/env bash
# Run HERE (not on the device) before the next session's first device call: writes the A/B
# overlay tools/dev/pending/base/ = the tree's src/cuda with tools/dev/pending/fp8-fixup-hybrid.patch
# applied (session 44's hybrid fold, last form: the fix-up as the GEMM kernel's FIX template
# parameter; never run on a GPU; also the local branch fixtmpl, 6bad9c0). The tree
# keeps the separate fix-up kernel, so first-call.sh's "new - base" = separate kernel - hybrid
# (positive: the hybrid is faster). The tree's gemm_fp8_fixup.cu, which the patch deletes,
# stays in the base build, compiled but unused.
set -eu
cd "$(git rev-parse --show-toplevel)"
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
(cd "$tmp" && git apply "$OLDPWD/tools/dev/pending/fp8-fixup-hybrid.patch")
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
for f in gemm.cu gemm_fp8.cu gemm_fp8_kernel.cuh gemm_fp8_common.cuh gemm_fp8_exact.cuh fp8_kernels.hpp; do
  cp "$tmp/src/cuda/$f" "tools/dev/pending/base/src/cuda/$f"
done
rm -rf "$tmp"
ls tools/dev/pending/base/src/cuda
