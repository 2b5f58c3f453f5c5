#!/usr/bin/env bash
# Session 53 call 10: A/B of 64 x 64 tiles (8 warps) for few-tile M > 128 from K = 256 (was 512)
# where their grid fits the SMs (overlay base-r64k256; new - base > 0 = the overlay faster).
# Call 9 had 64 x 64 +0.37 to +0.59 us at K = 512-640 (ab-r64s-call9-session53-h100.txt).
# Predicted +0.2 to +0.5 on the K < 512 shapes; controls (K = 512, no fit at N = 2880, M = 256
# with N = 7168 on 128 x 128) unchanged. Lands when no changed shape is slower by more than
# max(0.05 us, 0.5%) and their mean gain > 0.1.
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-r64k256 AB_TREE=/tmp/ab-r64k256 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh r64k256 $P/shapes-r64k256.txt 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-r64k256 AB_TREE=/tmp/ab-r64k256 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh r64k256 $P/shapes-r64k256.txt 5
echo "ab rc=$? $((SECONDS-t0)) s"
cp "$o/logs/ab-r64k256.txt" "$o/" 2>/dev/null
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
