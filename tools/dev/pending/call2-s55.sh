#!/usr/bin/env bash
# Session 55, call 2: A/B of the cluster-wave split-K rule (fp8_cluster_wave, kFp8LongK in
# src/dispatch/fp8_rules.cpp) against HEAD's dispatcher (overlay tools/dev/pending/base-cw/, written
# here by: mkdir -p tools/dev/pending/base-cw/src/dispatch && for f in rules.hpp fp8_rules.cpp; do
# git show 21a1510:src/dispatch/$f > tools/dev/pending/base-cw/src/dispatch/$f; done) on
# shapes-clusterwave.txt (27 changed shapes, 3 controls; new - base < 0 = the rule faster); the
# Gpu* suite; the workload benches (bf16, f32, static; no workload shape changes path).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call2-s55.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
[ -d $P/base-cw ] || { echo "no $P/base-cw"; pack; exit 2; }
AB_OVERLAY=$P/base-cw AB_TREE=/tmp/ab-cw AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh cw $P/shapes-clusterwave.txt 1 > "$o/logs/ab-build-cw.txt" 2>&1 & b1=$!
OUT=$o/logs/dc bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "build + Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -6
wait $b1 || { echo "base build failed"; tail -20 "$o/logs/ab-build-cw.txt"; pack; exit 1; }
AB_OVERLAY=$P/base-cw AB_TREE=/tmp/ab-cw AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh cw $P/shapes-clusterwave.txt 5
echo "ab cw rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-cw.txt" "$o/" 2>/dev/null
for a in "" "--out-dtype f32" "--weights-static"; do
  n=bench$(echo $a | tr -d ' -')
  timeout 200 build-device/mxfp4 bench --out-dir "$o/results" $a > "$o/logs/$n.log" 2>&1
  echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$o/logs/$n.log" | head -1
done
pack
