#!/usr/bin/env bash
# Session 54, call 7: (1) A/B of the small-M kernel's 16-warp condition at >= 8 K chunks per CTA
# (the tree) against >= 12 (41cd2fb; overlay tools/dev/pending/base-s54c); new - base < 0 = the
# tree faster. Predicted from calls 2 and 4's tunes (H100): -0.4 to -1.1 us at K = 4096-5120 with
# <= 12 tiles of 64 x 64 (72x256x4096 7.18 -> 6.73, 128x256x4096 8.05 -> 6.91, 192x256x4096
# 8.25 -> 7.89); the last 3 shapes are controls. (2) A tune of the few-tile edges left after
# 41cd2fb: M > 128 at K = 3072, 64 x 64 grids of 97-132 tiles at K >= 4096, M = 448-512.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call7-s54.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending S=$P/shapes-w16.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-s54c AB_TREE=/tmp/ab-s54c AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh w16 $S 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-s54c AB_TREE=/tmp/ab-s54c AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh w16 $S 5
echo "ab rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-w16.txt" "$o/" 2>/dev/null
printf '%s\n' "256 512 3072" "256 1024 3072" "384 1024 3072" "192 256 3072" "256 2112 7168" "256 1792 4096" \
  "192 2048 7168" "384 1344 4096" "512 256 2048" "512 512 4096" "448 256 7168" "512 1024 2048" > /tmp/t7.txt
MXFP4_TUNE_CACHE=/tmp/t7.json timeout 200 build-device/mxfp4 tune --verbose --paths fp8,splitk --shapes /tmp/t7.txt > "$o/logs/tune-fewtiles-edges-call7-session54.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-fewtiles-edges-call7-session54.log" | grep -v "^--"
pack
