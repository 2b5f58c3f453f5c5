#!/usr/bin/env bash
# Session 43's device call 2 (little device time left): build; the review's
# test additions (GpuSanitize.GemmEveryPathSmall with path splitk's 16-token kernel at split
# 4/5/8) under memcheck, racecheck and synccheck, the ClusterSplitK and sanitize tests, beside
# the A/B base's build; then what path fp8's fix-up launch costs when nothing is flagged: A/B
# of the tree against a base without the fp8_fixup launch (tools/dev/pending/base/src/cuda/
# gemm.cu; "new - base" = the launch's cost), 3 interleaved runs on the path fp8 shapes; on an
# H200 before it the workload bench, default and --weights-static (plan item w's first part).
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4 2880 512\n' > /tmp/ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh nofixup /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
timeout 100 build-device/mxfp4_tests --gtest_filter='GpuSanitize.*:GpuCanary*' > "$o/logs/tests-0.log" 2>&1 &
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    echo "===== $tool"
    timeout 80 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) " "$o"/logs/tests-*.log
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
if grep -q H200 "$o/logs/gpu0.txt"; then  # plan item w's bench part (the issues' targets are read on an H200)
  build-device/mxfp4 bench --out-dir $o/dc/default > $o/logs/bench-default.log 2>&1
  grep -h geomean $o/dc/default/*.md $o/dc/static/*.md
  echo "h200 bench $((SECONDS-t0)) s"
fi
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh nofixup /tmp/ab.txt 2
echo "ab done $((SECONDS-t0)) s"
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
