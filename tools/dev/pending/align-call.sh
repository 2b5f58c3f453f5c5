#!/usr/bin/env bash
# Session 51's first device call (~2.5 minutes, any Hopper GPU; written in session 50 after its
# budget ran out). Question: is path fp8's K loop slower when its first instruction is not
# 128-byte aligned? Session 50 call 1 rejected the epilogue patch v2
# (tools/dev/pending/fp8-epilogue-partial-n.patch): full tiles +1.0 to +7.7 us although its K-loop
# instructions are those of HEAD (sass-diff.sh); what moved is where the loop lies. HEAD's loop
# starts on a 128-byte boundary in the 128 x 128 (plain) and 192 x 128 kernels; v2 moved them by
# 16 and 48 bytes (tools/dev/sass_regions.py prints each kernel's K-loop offset mod 128).
# Two A/Bs, each HEAD (the tree) against HEAD with N NANOSLEEP instructions once per CTA before
# the consumers' tile loop (executed once per CTA, not per tile; ptxas places them before the
# loop, so the loop moves by 16 bytes per instruction, 32 in the 192 x 128 kernel):
#   pad1: 128 x 128 plain 0 -> 16, 192 x 128 0 -> 32, 64 x 128 FIX 48 -> 64 (bytes mod 128);
#   pad8: every kernel back on its own offset but 192 x 128 (0 -> 16).
# Predicted if alignment is the cause: pad1 slower by ~2.3 us at 1024x7168x2048, ~1 at
# 1024x2944x2048, several at 4096x7168x2048; pad8 as HEAD at the first two, 4096 slower. If pad1
# is as HEAD, alignment is not the cause (then: v2's register allocation or its larger tile loop).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/align-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
printf '1024 7168 2048\n4096 7168 2048\n1024 2944 2048\n256 3072 1536\n' > /tmp/pad-shapes.txt
overlay() {  # N: tools/dev/pending/base/ = the tree's kernel header with N NANOSLEEPs
  rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
  python3 - "$1" <<'PY'
import sys
f = "src/cuda/gemm_fp8_kernel.cuh"
src = open(f).read()
anchor = "    int it = 0;\n    for (int id = first; id < tiles_total; id += clusters) {\n"
assert src.count(anchor) == 1, "anchor not found"
pad = "".join('    asm volatile("nanosleep.u32 0;");\n' for _ in range(int(sys.argv[1])))
open("tools/dev/pending/base/" + f, "w").write(src.replace(anchor, pad + anchor))
PY
}
overlay 1
OUT=$o AB_BUILD_ONLY=1 tools/dev/ab.sh pad1 /tmp/pad-shapes.txt 1 > "$o/logs/ab-build1.txt" 2>&1 &
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; echo "build rc=$?"
wait; echo "builds $((SECONDS-t0)) s"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh pad1 /tmp/pad-shapes.txt 3; echo "ab pad1 rc=$? $((SECONDS-t0)) s"
overlay 8
OUT=$o tools/dev/ab.sh pad8 /tmp/pad-shapes.txt 3; echo "ab pad8 rc=$? $((SECONDS-t0)) s"
rm -rf tools/dev/pending/base
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
