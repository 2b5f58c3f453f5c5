#!/usr/bin/env bash
# Session 55, call 3: confirmation A/B of 76d1524's landed split-K rule (the tree) against
# 21a1510's dispatcher (overlay tools/dev/pending/base-cw/, written as call2-s55.sh says) on
# shapes-clusterwave2.txt (call 2's three losers and a neutral one, now back on 21a1510's
# configurations; the class where the landed form takes 128 x 64 split 2 instead of call 2's
# 128 x 128 split 4; winners; two untried M = 136/160 shapes); then a path fp8 tune at K = 3072
# and 5120 for few-tile M > 128 (is kFp8LongK = 6144 right? plan item c).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call3-s55.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
[ -d $P/base-cw ] || { echo "no $P/base-cw"; pack; exit 2; }
AB_OVERLAY=$P/base-cw AB_TREE=/tmp/ab-cw AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh cw2 $P/shapes-clusterwave2.txt 1 > "$o/logs/ab-build-cw2.txt" 2>&1 & b1=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $b1; r1=$?
[ $built = 0 ] && [ $r1 = 0 ] || { echo "build rc=$built base rc=$r1"; tail -20 "$o/logs/build.log" "$o/logs/ab-build-cw2.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-cw AB_TREE=/tmp/ab-cw AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh cw2 $P/shapes-clusterwave2.txt 5
echo "ab cw2 rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-cw2.txt" "$o/" 2>/dev/null
for M in 192 256 320 384; do for N in 1280 1600 2112; do for K in 3072 5120; do echo "$M $N $K"; done; done; done > /tmp/t-c.txt
MXFP4_TUNE_CACHE=/tmp/tc.json timeout 150 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/t-c.txt > "$o/logs/tune-fp8-m256-k3072-5120.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-fp8-m256-k3072-5120.log" | grep -v "^--"
pack
