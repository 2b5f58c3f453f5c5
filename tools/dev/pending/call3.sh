#!/usr/bin/env bash
# Session 44, call 3: the exact fix-up folded into path fp8's GEMM kernel.
#   - build; at once: the "head" base's build (the separate fix-up kernel), the Gpu* suite in
#     3 shards, memcheck / racecheck / synccheck on GpuSanitize's fp8 cases and the new flagged test;
#   - A/B "head": the tree against the separate fix-up kernel, path fp8's workload shapes (3 runs);
#   - A/B "notrig": the tree against itself without the GEMM's early launch_dependents;
#   - flagged cost: A/B "head" with --flagged-weight-rows 16 (1 run);
#   - the workload bench, default and --weights-static.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4096 7168 2048\n4 2880 512\n' > /tmp/ab.txt
rm -rf tools/dev/pending/base && cp -r tools/dev/pending/base-head tools/dev/pending/base
AB_NEW_FILES=1 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh head /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 300 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 \
    > "$o/logs/tests-$i.log" 2>&1 &
done
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    echo "===== $tool"
    timeout 200 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall:GpuSanitize.Fp8ChainsOverSeveralChunks' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
  echo "===== memcheck flagged"
  timeout 200 "$san" --tool memcheck --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
    --gtest_filter='GpuFp8.Flagged*' --gtest_brief=1
  echo "===== memcheck flagged rc=$?"
) > "$o/logs/sanitizers.log" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$o"/logs/tests-*.log
grep -hB5 "Failure" "$o"/logs/tests-*.log | head -40
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
AB_NEW_FILES=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh head /tmp/ab.txt 3
echo "ab head done $((SECONDS-t0)) s"
printf '64 7168 2048\n256 3072 1536\n256 2880 512\n1024 7168 2048\n' > /tmp/abf.txt
AB_NEW_FILES=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh headflagged16 /tmp/abf.txt 1 --flagged-weight-rows 16
echo "ab flagged done $((SECONDS-t0)) s"
build-device/mxfp4 bench --out-dir "$o/dc/default" > "$o/logs/bench-default.log" 2>&1
build-device/mxfp4 bench --weights-static --out-dir "$o/dc/static" > "$o/logs/bench-static.log" 2>&1
grep -h geomean "$o"/dc/default/*.md "$o"/dc/static/*.md
echo "bench $((SECONDS-t0)) s"
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
sed 's/^  grid_dependents_launch();$/  \/\/ no early trigger/' src/cuda/gemm_fp8_kernel.cuh > tools/dev/pending/base/src/cuda/gemm_fp8_kernel.cuh
grep -q 'no early trigger' tools/dev/pending/base/src/cuda/gemm_fp8_kernel.cuh || { echo "call3: trigger line not found"; exit 2; }
OUT=$o tools/dev/ab.sh notrig /tmp/ab.txt 3
echo "ab notrig done $((SECONDS-t0)) s"
rm -rf tools/dev/pending/base
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
