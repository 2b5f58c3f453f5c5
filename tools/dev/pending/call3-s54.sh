#!/usr/bin/env bash
# Session 54, call 3: A/B of mid_m_small_m_wins (the tree) against HEAD's dispatcher (overlay
# tools/dev/pending/base-s54), new - base < 0 = the new rule faster; then the Gpu* suite and a
# tune of the rule's untuned edges.
# Predicted (call 1-2 tunes, H100): new - base -1.3 to -3.1 us on the 64 < M <= 128 few-tile shapes,
# 128x1536x1024 ~0 (+0.05), controls (last 4 lines) unchanged.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call3-s54.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
AB_OVERLAY=$P/base-s54 AB_TREE=/tmp/ab-s54 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh midsm $P/shapes-mid-smallm.txt 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-s54 AB_TREE=/tmp/ab-s54 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh midsm $P/shapes-mid-smallm.txt 5
echo "ab rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-midsm.txt" "$o/" 2>/dev/null
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -6
# The rule's untuned edges: K = 512-768 and 5120-6144 with 18-62 tiles (paths fp8 and splitk).
for M in 72 128; do for K in 512 768 5120 6144; do for N in 640 1024 1984; do echo "$M $N $K"; done; done; done > /tmp/t4.txt
MXFP4_TUNE_CACHE=/tmp/t4.json timeout 150 build-device/mxfp4 tune --verbose --paths fp8,splitk --shapes /tmp/t4.txt > "$o/logs/tune-m128-edges-call3-session54.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-m128-edges-call3-session54.log" | grep -v "^--"
pack
