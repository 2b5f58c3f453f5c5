#!/usr/bin/env bash
# Session 54, call 5: A/B of the tree (small_m_kernel_wins up to M = 384, path fp8 split-K for
# few-tile M > 128 from K = 4096) against 6240524's dispatcher (overlay tools/dev/pending/base-s54b);
# new - base < 0 = the tree faster; then the Gpu* suite.
# Predicted from call 4's tune (H100): 192x256x7168 -13, 384x256x7168 -12, 256x512x7168 -9,
# 256x1024x7168 -7, 256x256x4096 -6, 192x512x4096 -5, 384x1024x7168 -5, 384x512x4096 -4,
# 192x256x2048 -2.5, 72x960x7168 -2.4, 72x640x6144 -2.3, 128x768x5120 -1.8, 256x512x2048 -1.6,
# 192x1024x4096 -1.4, 384x1024x4096 -1.2, 384x512x2048 -0.9; 200x300x3008 and 320x200x4992
# untuned (the small-M kernel); the last 5 shapes are controls (same configuration both ways).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call5-s54.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending S=$P/shapes-fewtiles-m384.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-s54b AB_TREE=/tmp/ab-s54b AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh fewt $S 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-s54b AB_TREE=/tmp/ab-s54b AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh fewt $S 5
echo "ab rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-fewt.txt" "$o/" 2>/dev/null
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -6
pack
