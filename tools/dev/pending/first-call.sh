#!/usr/bin/env bash
# The next session's first device call (written at the end of session 44), ~4 minutes. Run
# tools/dev/pending/prep-first-call.sh HERE first (it writes the overlay tools/dev/pending/base/).
#   - build; at once: the base's build (session 44's hybrid fold), the whole Gpu* suite in 3
#     shards (session 44's new flagged tests have run only against the fold, never against the
#     separate fix-up kernel the tree has), memcheck / racecheck / synccheck on
#     GpuSanitize.GemmEveryPathSmall (new: M = 2200 with 64 x 64 fp8 tiles, split 3);
#   - A/B "hybrid": new = the tree (separate kernel), base = the hybrid (the fix-up as the GEMM
#     kernel's FIX template parameter, picked where every cluster stores one tile; persistent
#     grids run plain instantiations close to the tree's kernels): do the single-wave shapes
#     keep call 5's gains while 1024 and 4096 stay level (call 5: +0.5 and +11 us)?
#   - the flagged bench (16 flagged weight rows) of both;
#   - on an H200: the workload bench, default and --weights-static (bench/results/h200.md is
#     session 36's run).
# Usage (repository root, on the device): OUT=... bash tools/dev/pending/first-call.sh
#   (then copy $OUT/all.tgz back)
set -u
o=${OUT:?}; mkdir -p "$o/logs"
[ -f tools/dev/pending/base/src/cuda/gemm_fp8_exact.cuh ] || { echo "run tools/dev/pending/prep-first-call.sh first"; exit 2; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4096 7168 2048\n4 2880 512\n' > /tmp/ab.txt
AB_NEW_FILES=1 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh hybrid /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 300 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 \
    > "$o/logs/tests-$i.log" 2>&1 &
done
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    echo "===== $tool"
    timeout 200 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$o"/logs/tests-*.log
grep -hB5 "Failure" "$o"/logs/tests-*.log | head -40
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
AB_NEW_FILES=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh hybrid /tmp/ab.txt 3
printf '64 7168 2048\n256 3072 1536\n256 2880 512\n1024 7168 2048\n' > /tmp/abf.txt
AB_NEW_FILES=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh hybridflagged16 /tmp/abf.txt 1 --flagged-weight-rows 16
echo "ab done $((SECONDS-t0)) s"
if grep -q H200 "$o/logs/gpu0.txt"; then
  build-device/mxfp4 bench --out-dir "$o/dc/default" > "$o/logs/bench-default.log" 2>&1
  build-device/mxfp4 bench --weights-static --out-dir "$o/dc/static" > "$o/logs/bench-static.log" 2>&1
  grep -h geomean "$o"/dc/default/*.md "$o"/dc/static/*.md
  echo "h200 bench $((SECONDS-t0)) s"
fi
rm -rf tools/dev/pending/base
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
