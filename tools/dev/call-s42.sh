#!/usr/bin/env bash
# Session 42's device call 5: build; at once (correctness) the cluster split-K and sanitize
# tests in 3 shards, racecheck / synccheck on GpuSanitize.GemmEveryPathSmall, the A/B base's
# build; then alone the A/B of MXFP4_EXP_NO_PUSH (tools/dev/pending/base/ = push) on the
# push shapes (M <= 16, split >= 4) and two copy controls.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 150 stdbuf -oL build-device/mxfp4_tests \
    --gtest_filter='GpuGemm.ClusterSplitK*:GpuSanitize.*:GpuGemm.SplitkWeightsStatic*:GpuCanary*:GpuGemm.K14*:GpuGemm.OddShapes*' \
    > "$o/logs/tests-$i.log" 2>&1 &
done
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in racecheck synccheck; do
    echo "===== $tool"
    timeout 100 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
printf '16 3072 1536\n16 7168 4096\n16 2880 2880\n12 4096 2048\n16 2112 2048\n10 5120 3072\n16 4096 1536\n16 7168 2048\n32 4096 512\n64 3072 1536\n' > /tmp/ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh nopush /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED" "$o"/logs/tests-*.log
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh nopush /tmp/ab.txt 3
echo "ab done $((SECONDS-t0)) s"
cd "$o" && tar czf /tmp/all.tgz logs 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
