#!/usr/bin/env bash
# Plan item b of session 48 (docs/perf-notes.md): the edges of the m256 rule, one
# `mxfp4 tune --verbose --paths fp8` (~3 minutes; any Hopper GPU, say which in the notes).
# - M = 384-768 with N = 2048-4096 and K = 1024 / 2048: around the rule's bound (fewer than
#   half the SMs with a 128 x 128 tile): 384x2048 and 512x2048 fall under it (64 x 128, 8 warps,
#   measured so far only at M <= 256), 384x4096, 512x3072, 640x2048 and 768x2048 above it
#   (128 x 128, 12 warps, untuned since session 19).
# - 256x3072x768 and 256x2048x768: the rule's K >= 1024 bound lies between the measured K = 512
#   (128 x 64 won) and 1024 (64-row tiles won).
# Writes $OUT/tune-fp8-edges.log (every candidate's time; the dispatcher's choice beside).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/fp8-edges-tune.sh
set -u
o=${OUT:?}; mkdir -p "$o"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/gpu0.txt"
[ -x build-device/mxfp4 ] || OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/build.log" 2>&1 ||
  { tail -20 "$o/build.log"; exit 1; }
cat > /tmp/fp8-edges.txt <<'SHAPES'
384 2048 1024
384 2048 2048
512 2048 1024
512 2048 2048
384 4096 1024
384 4096 2048
512 3072 1024
512 3072 2048
640 2048 1024
640 2048 2048
768 2048 1024
768 2048 2048
256 3072 768
256 2048 768
SHAPES
MXFP4_TUNE_CACHE=/tmp/tune-edges.json timeout 300 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/fp8-edges.txt > "$o/tune-fp8-edges.log" 2>&1
echo "tune rc=$?"; grep -B1 "dispatcher's choice" "$o/tune-fp8-edges.log"
exit 0
