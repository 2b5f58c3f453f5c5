#!/usr/bin/env bash
# Session 45's call 2: the tree = session 44's hybrid (the fix-up as the GEMM's FIX template
# parameter) with FIX only where the grid covers every tile and split_k = 1. Base overlay
# (tools/dev/pending/base/): HEAD's separate fix-up kernel. Build both, Gpu* suite (3 shards)
# and memcheck / racecheck / synccheck on GpuSanitize.GemmEveryPathSmall of the tree, A/B
# (new - base = FIX hybrid - separate kernel: negative = the hybrid faster), the workload bench default and --weights-static. Logs in $OUT/logs.tgz.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '64 7168 2048\n' > /tmp/ab0.txt
AB_NEW_FILES=1 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh hyb4 /tmp/ab0.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 300 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 \
    > "$o/logs/tests-$i.log" 2>&1 &
done
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    echo "===== $tool"
    timeout 240 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
wait
echo "tests done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$o"/logs/tests-*.log
grep -hB5 "Failure" "$o"/logs/tests-*.log | head -30
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4096 7168 2048\n4 2880 512\n' > /tmp/ab3.txt
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh hyb4 /tmp/ab3.txt 6
echo "ab done $((SECONDS-t0)) s"
build-device/mxfp4 bench --out-dir "$o/default" > "$o/logs/bench-default.log" 2>&1
build-device/mxfp4 bench --weights-static --out-dir "$o/static" > "$o/logs/bench-static.log" 2>&1
grep -h geomean "$o"/default/*.md "$o"/static/*.md
echo "bench $((SECONDS-t0)) s"
cd "$o" && tar czf logs.tgz logs && rm -rf logs
