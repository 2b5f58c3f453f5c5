#!/usr/bin/env bash
# Session 53: A/B of kFp8Row64MinK 768 -> 512 (overlay base-row64k512; new - base > 0 = the
# overlay faster): few-tile M > 128 on 64-row tiles (8 warps) from K = 512 instead of 128 x 64
# (12 warps). Session 53 call 1's H100 tune (tune-fp8-grid2-call1-session53-h100.log):
# 256x2880x512 64 x 128 5.97 us against 6.16, 256x4096x512 6.23 / 6.50, 192x2880x512 6.02 /
# 6.09 (session 47, before epilogue v4, had 128 x 64 ahead at K = 512). Predicted +0.07 to +0.27
# us on those three; 64 x 64 at K = 512 (256x2048x512, 256x2112x512) untuned: unknown; the
# controls (K = 1536, 2048, M = 160, K = 480) unchanged. Lands when no changed shape is slower by
# more than max(0.05 us, 0.5%) and their mean gain > 0.1 us.
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-row64k512 AB_TREE=/tmp/ab-r64 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh row64k512 $P/shapes-row64k512.txt 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-row64k512 AB_TREE=/tmp/ab-r64 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh row64k512 $P/shapes-row64k512.txt 5
echo "ab rc=$? $((SECONDS-t0)) s"
cp "$o/logs/ab-row64k512.txt" "$o/" 2>/dev/null
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
