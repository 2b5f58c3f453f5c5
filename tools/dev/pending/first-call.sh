#!/usr/bin/env bash
# The next session's first device call (written at the end of session 45), ~3 minutes:
#   - build; the whole Gpu* suite in 3 shards; memcheck / racecheck / synccheck on
#     GpuSanitize.GemmEveryPathSmall, which since 77b8ba1 has truly flagged lines (B row 11,
#     A row 5) and so reaches path fp8's exact fix-up in the FIX kernels (64 x 64, 128 x 128,
#     the 256 x 128 pair clipped at M = 130) and in fp8_fixup_kernel (split 3, 192 x 128,
#     M = 2200): never run on a GPU, and no sanitizer has run the fix-up's work before;
#   - on an H200 only: the workload bench, default and --weights-static (bench/results/h200.md
#     is session 36's run; commit both as bench/results/h200{,-static}.md).
# Logs go into $OUT/logs.tgz (a run returns at most ~20 files); the summary is printed.
# Usage (repository root, on the device): bash tools/dev/pending/first-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 300 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 \
    > "$o/logs/tests-$i.log" 2>&1 &
done
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  ( timeout 240 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?" ) > "$o/logs/san-$tool.log" 2>&1 &
done
wait
echo "tests done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$o"/logs/tests-*.log
grep -hB5 "Failure" "$o"/logs/tests-*.log | head -40
grep -hE "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o"/logs/san-*.log
if grep -q H200 "$o/logs/gpu0.txt"; then
  build-device/mxfp4 bench --out-dir "$o/default" > "$o/logs/bench-default.log" 2>&1
  build-device/mxfp4 bench --weights-static --out-dir "$o/static" > "$o/logs/bench-static.log" 2>&1
  grep -h geomean "$o"/default/*.md "$o"/static/*.md
  echo "h200 bench $((SECONDS-t0)) s"
fi
cd "$o" && tar czf logs.tgz logs && rm -rf logs
