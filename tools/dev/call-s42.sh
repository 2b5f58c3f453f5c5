#!/usr/bin/env bash
# Session 42's device call (plan item x): build, the workload bench default and
# --weights-static, then the whole Gpu* suite in 4 gtest shards at once (the CPU oracle is the
# long pole; shards overlap its serial parts). Logs under $OUT, packed into $OUT/all.tgz.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
for v in default static; do
  a=; [ $v = static ] && a=--weights-static
  timeout 200 build-device/mxfp4 bench $a --out-dir "$o/bench-$v" > "$o/logs/bench-$v.log" 2>&1
  echo "bench $v rc=$? $((SECONDS-t0)) s"; grep -h geomean "$o/bench-$v"/*.md
done
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout ${TEST_TIMEOUT:-300} stdbuf -oL build-device/mxfp4_tests \
    --gtest_filter="${FILTER:-Gpu*}" > "$o/logs/tests-$i.log" 2>&1 &
done
wait
echo "tests done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED) |tests ran|^\[  FAILED" "$o"/logs/tests-*.log
grep -hc "^\[       OK" "$o"/logs/tests-*.log
cd "$o" && tar czf /tmp/all.tgz logs bench-* 2>/dev/null && rm -rf logs bench-* dc && mv /tmp/all.tgz .
