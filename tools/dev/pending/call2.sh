#!/usr/bin/env bash
# Session 53's second call (plan item b): the workload bench of the tree as it stands (after
# next-call.sh's landings were applied and committed here): bf16 C, fp32 C (--out-dtype f32,
# its first GPU run), weights_static. Results and logs under $OUT (bench/results layout).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call2.sh
set -u
o=${OUT:?}; mkdir -p "$o/results" "$o/logs"
t0=$SECONDS
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -30 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
for a in "" "--out-dtype f32" "--weights-static"; do
  timeout 200 build-device/mxfp4 bench --out-dir "$o/results" $a > "$o/logs/bench$(echo $a | tr -d ' -').log" 2>&1
  echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$o/logs/bench$(echo $a | tr -d ' -').log"
done
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
