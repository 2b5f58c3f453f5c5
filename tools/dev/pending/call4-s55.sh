#!/usr/bin/env bash
# Session 55, call 4 (not run in session 55: no device time left): A/B of session 55's dispatcher
# (the tree) against 21a1510's (overlay tools/dev/pending/base-cw/, written here first by:
#   mkdir -p tools/dev/pending/base-cw/src/dispatch && for f in rules.hpp fp8_rules.cpp; do
#   git show 21a1510:src/dispatch/$f > tools/dev/pending/base-cw/src/dispatch/$f; done
# ) on 24 shapes drawn at random (seed 55)
# from the 81,544 shapes of the CPU sweep (M 1-1024 x N 64-8192 x K 512-16384, 132 SMs) whose
# choice session 55 changed: 12 at M <= 128, 12 at M > 128 (shapes-clusterwave-random.txt).
# new - base < 0 = session 55's rule faster; the landing rule: no changed shape slower than
# max(0.05 us, 0.5%). Then remove the overlay here.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call4-s55.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
[ -d $P/base-cw ] || { echo "no $P/base-cw"; pack; exit 2; }
AB_OVERLAY=$P/base-cw AB_TREE=/tmp/ab-cw AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh cwr $P/shapes-clusterwave-random.txt 1 > "$o/logs/ab-build-cwr.txt" 2>&1 & b1=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $b1; r1=$?
[ $built = 0 ] && [ $r1 = 0 ] || { echo "build rc=$built base rc=$r1"; tail -20 "$o/logs/build.log" "$o/logs/ab-build-cwr.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-cw AB_TREE=/tmp/ab-cw AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh cwr $P/shapes-clusterwave-random.txt 3
echo "ab cwr rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-cwr.txt" "$o/" 2>/dev/null
pack
