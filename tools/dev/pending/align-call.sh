#!/usr/bin/env bash
# Session 51's first device call (~4 minutes, any Hopper GPU; written in session 50 after its
# budget ran out). Question: did v2 of the epilogue patch (tools/dev/pending/fp8-epilogue-partial-
# n.patch; session 50 call 1: full tiles +0.99 to +7.74 us, 1024x2880x2048 -1.70) lose for where
# its code lies rather than for what it executes? Its slice loop (the K loop the benchmark shapes
# run: chained narrow slices, holding the kernel's first MMA) and the wide k32 loop inside it
# moved (bytes mod 128, tools/dev/sass_regions.py, "MMA loops (first, last)"): 128 x 128 plain
# (48, 0) -> (64, 16), 192 x 128 (80, 0) -> (0, 48); its full-tile stores moved ~9 KB further on
# (128 x 128 plain: HEAD's first 16-byte store at 0xd7f0, v2's at 0xfa10) in a tile loop 567
# instructions longer; its slice loop has HEAD's opcodes, 125 of 325 in other positions.
# Three A/Bs against HEAD (the tree; ab.sh's new = HEAD, base = the overlay, so new - base < 0
# means the overlay is slower); N NANOSLEEPs go once per CTA before the consumers' tile
# loop (never in a loop; they move everything after them):
#   pad1: HEAD's code with v2's 128 x 128 plain offsets (64, 16); 192 x 128 (112, 32);
#   pad8: 128 x 128 plain at HEAD's (48, 0); 192 x 128 (96, 16);
#   v2pad7 (only if tools/dev/pending/base/ holds v2, see Usage): v2's code with HEAD's 128 x 128
#     plain offsets (48, 0); 192 x 128 at v2's (0, 48).
# Reading, at 1024x7168x2048 and 1024x2944x2048 (128 x 128 plain): pad1 slower by ~2.3 / ~1 us
# and v2pad7 as HEAD = the loops' offsets are v2's loss (then v3 = v2 with offsets restored, and
# a check of them here before each device A/B); pad1 as HEAD and v2pad7 losing = the code's size
# or order (then the tail tiles need a change that adds no code to the tile loop).
# Predicted: pad1 and pad8 within ~0.3 us of HEAD, v2pad7 losing as v2 did. History is against
# offsets alone: 879dde9 and ef3b66f had the 192 x 128 slice loop at v2's 0 (HEAD: 80) and ran
# 4096x7168x2048 at ~129-130 us, HEAD ~128, v2 ~136; ef3b66f moved 879dde9's 128 x 128 wide loop
# 16 -> 0 for -0.13 / -0.33 us at 1024x7168x2048 (session 45 call 4). Session 44 call 5's hybrid
# lost 4096x7168x2048 +11 us with fix-up code it never executed in the persistent kernels.
# Usage (repository root): here `bash tools/dev/pending/prep-first-call.sh
# tools/dev/pending/fp8-epilogue-partial-n.patch` (writes the untracked overlay
# tools/dev/pending/base/ = v2; without it the v2pad7 A/B is skipped), then on the device (carry
# [".deps"]): bash tools/dev/pending/align-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader
printf '1024 7168 2048\n4096 7168 2048\n1024 2944 2048\n256 3072 1536\n1024 2880 2048\n' > /tmp/pad-shapes.txt
k=src/cuda/gemm_fp8_kernel.cuh
v2=""  # the overlay of prep-first-call.sh, if it is v2's (its store_rows16 lambda)
[ -f tools/dev/pending/base/$k ] && grep -q "store_rows16(std::true_type" tools/dev/pending/base/$k &&
  { cp tools/dev/pending/base/$k /tmp/v2.cuh; v2=/tmp/v2.cuh; }
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
overlay 1 || { echo "overlay 1 failed"; pack; exit 1; }
OUT=$o AB_BUILD_ONLY=1 tools/dev/ab.sh pad1 /tmp/pad-shapes.txt 1 > "$o/logs/ab-build1.txt" 2>&1 &
base_pid=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; echo "build rc=$?"
wait $base_pid; echo "pad1 build rc=$? builds $((SECONDS-t0)) s"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh pad1 /tmp/pad-shapes.txt 3; echo "ab pad1 rc=$? $((SECONDS-t0)) s"
overlay 8 || { echo "overlay 8 failed"; pack; exit 1; }
OUT=$o tools/dev/ab.sh pad8 /tmp/pad-shapes.txt 3; echo "ab pad8 rc=$? $((SECONDS-t0)) s"
if [ -n "$v2" ]; then
  overlay 7 "$v2" || { echo "overlay v2pad7 failed"; pack; exit 1; }
  OUT=$o tools/dev/ab.sh v2pad7 /tmp/pad-shapes.txt 3; echo "ab v2pad7 rc=$? $((SECONDS-t0)) s"
fi
rm -rf tools/dev/pending/base
pack
