#!/usr/bin/env bash
# Run HERE (not on the device) before the next session's first device call: writes the A/B
# overlay tools/dev/pending/base/ = session 44's last hybrid fold (commit fe4ffc5, never run on
# a GPU; the same change as tools/dev/pending/fp8-fixup-hybrid.patch). The tree keeps the separate
# fix-up kernel, so first-call.sh's "new - base" = separate kernel - hybrid (positive: the
# hybrid is faster). The tree's gemm_fp8_fixup.cu stays in the base build, compiled but unused.
set -eu
cd "$(git rev-parse --show-toplevel)"
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
for f in gemm.cu gemm_fp8.cu gemm_fp8_kernel.cuh gemm_fp8_common.cuh gemm_fp8_exact.cuh fp8_kernels.hpp; do
  git show "fe4ffc5:src/cuda/$f" > "tools/dev/pending/base/src/cuda/$f"
done
ls tools/dev/pending/base/src/cuda
