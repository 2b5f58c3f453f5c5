#!/usr/bin/env bash
# Session 51's first device call (~3.5 minutes, any Hopper GPU; written in session 50 after its
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
#   v2pad7 (only if tools/dev/pending/base/ holds v2, see Usage): v2 with 7 NANOSLEEPs, which puts
#     the 128 x 128 plain kernel's loop back on 0 (192 x 128 stays at v2's 48).
# If alignment were the cause: pad1 slower by ~2.3 us at 1024x7168x2048, ~1 at 1024x2944x2048,
# several at 4096x7168x2048; pad8 as HEAD at the first two; v2pad7 as HEAD at 1024x7168x2048 and
# 1024x2944x2048, faster at 1024x2880x2048 (~1.7, v2's gain), slower at 4096x7168x2048.
# Predicted (written after a look at history): pad1 and pad8 within ~0.3 us of HEAD, v2pad7
# losing as v2 did. 879dde9 (session 44's standing code) had its 128 x 128 plain kernel's K loop
# at 0x2510, v2's address (16 mod 128), and its 192 x 128 loop at 16, and ran 1024x7168x2048 and
# 4096x7168x2048 within 0.3-0.7 us of ef3b66f, whose loops sit at 0 (session 45 call 4). What v2
# moved besides: the full-tile stores ~9 KB further from the K loop (HEAD's first 16-byte store
# of the 128 x 128 plain kernel at 0xd7f0, v2's at 0xfa10) and a tile loop 567 instructions
# longer; the same kind of loss came with the fix-up code compiled into the persistent kernels
# in session 44 call 5 (4096x7168x2048 +11 us, never executed).
# Usage (repository root): here `bash tools/dev/pending/prep-first-call.sh
# tools/dev/pending/fp8-epilogue-partial-n.patch` (writes the untracked overlay
# tools/dev/pending/base/ = v2; without it the v2pad7 A/B is skipped), then on the device (carry
# [".deps"]): bash tools/dev/pending/align-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
printf '1024 7168 2048\n4096 7168 2048\n1024 2944 2048\n256 3072 1536\n1024 2880 2048\n' > /tmp/pad-shapes.txt
k=src/cuda/gemm_fp8_kernel.cuh
v2=""; [ -f tools/dev/pending/base/$k ] && { cp tools/dev/pending/base/$k /tmp/v2.cuh; v2=/tmp/v2.cuh; }
overlay() {  # N [SRC]: tools/dev/pending/base/ = SRC (default the tree's kernel header) with N NANOSLEEPs
  rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
  python3 - "$1" "${2:-$k}" <<'PY'
import sys
f = "src/cuda/gemm_fp8_kernel.cuh"
src = open(sys.argv[2]).read()
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
if [ -n "$v2" ]; then
  overlay 7 "$v2"
  OUT=$o tools/dev/ab.sh v2pad7 /tmp/pad-shapes.txt 3; echo "ab v2pad7 rc=$? $((SECONDS-t0)) s"
fi
rm -rf tools/dev/pending/base
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
