#!/usr/bin/env bash
# Session 54, call 9: the Gpu* suite and the workload benches (bf16, f32, static) on the
# session's final dispatcher (d91d5ee: no-image configs of 128-131 tiles back to split 2).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/final-s54.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
OUT=$o/logs/dc bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "build + Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -6
for a in "" "--out-dtype f32" "--weights-static"; do
  n=bench$(echo $a | tr -d ' -')
  timeout 200 build-device/mxfp4 bench --out-dir "$o/results" $a > "$o/logs/$n.log" 2>&1
  echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$o/logs/$n.log" | head -1
done
pack
