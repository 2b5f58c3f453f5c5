#!/usr/bin/env bash
# Session 54, call 8: A/B of small_m_kernel_wins up to M = 512 (the tree) against M = 384
# (overlay tools/dev/pending/base-s54d = 62db39c); new - base < 0 = the tree faster; then the
# Gpu* suite on the tree. Predicted from call 7's tune (H100): 448x256x7168 -1.3 (14.92 against
# 16.18), 512x256x2048 -1.4 (8.66 / 10.09); 480x192x4096, 512x320x3072 and 416x128x6144
# untuned (same grids as M <= 384's winners); the last 3 shapes are controls.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call8-s54.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending S=$P/shapes-m512.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-s54d AB_TREE=/tmp/ab-s54d AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh m512 $S 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-s54d AB_TREE=/tmp/ab-s54d AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh m512 $S 5
echo "ab rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-m512.txt" "$o/" 2>/dev/null
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -6
pack
