#!/usr/bin/env bash
# Session 53 call 9: A/B of 64 x 64 tiles (8 warps) for few-tile M > 128 at 512 <= K < 768
# where their grid fits the SMs (overlay base-r64s; new - base > 0 = the overlay faster); 64 x
# 128 stays out below K = 768. Call 8 (ab-row64k512-call8-session53-h100.txt) had 64 x 64 at K
# = 512 +0.40-0.42 us (256x2048x512, 256x2112x512) while 64 x 128 lost at 256x3072x640 (-0.24)
# and 192x2880x512 (-0.07). Predicted +0.3-0.4 us on the changed shapes, controls unchanged.
# Lands when no changed shape is slower by more than max(0.05 us, 0.5%) and their mean gain > 0.1.
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-r64s AB_TREE=/tmp/ab-r64s AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh r64s $P/shapes-r64s.txt 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-r64s AB_TREE=/tmp/ab-r64s AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh r64s $P/shapes-r64s.txt 5
echo "ab rc=$? $((SECONDS-t0)) s"
cp "$o/logs/ab-r64s.txt" "$o/" 2>/dev/null
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
