#!/usr/bin/env bash
# Session 53: A/B of the M <= 128 rule's widening (overlay base-m128v2; new - base > 0 = the
# overlay faster): 64 x 64 unsplit at K <= 3072 from 2/3 of the SMs (was 3/4; N = 2880-3136),
# 64-row 64 x 128 unsplit up to K = 5120 (was 4096). From session 53 call 1's H100 tune
# (tune-fp8-grid2-call1-session53-h100.log): 72/128x2880x2560 64 x 64 11.42/11.52 against split
# 4's 13.38/13.79; 72/128x7168x5120 22.12/23.12 against split 2's 25.05/25.64; session 52's H200
# tune: 72-128x2880x3072 64 x 64 5-8% ahead of split 4, N = 7168 at K = 7168 split 7% ahead.
# Predicted: +1.5 to +2.3 us on the 2880 shapes at K = 2560, +0.7 to +1.1 at K = 3072, +2.5 to
# +3 at K = 5120 (H100; on an H200 the K = 5120 ones ~0); the four controls unchanged.
# Lands when no changed shape is slower by more than max(0.05 us, 0.5%) and their mean gain > 0.3.
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-m128v2 AB_TREE=/tmp/ab-m128v2 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh m128v2 $P/shapes-m128v2.txt 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-m128v2 AB_TREE=/tmp/ab-m128v2 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh m128v2 $P/shapes-m128v2.txt 4
echo "ab rc=$? $((SECONDS-t0)) s"
cp "$o/logs/ab-m128v2.txt" "$o/" 2>/dev/null
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
