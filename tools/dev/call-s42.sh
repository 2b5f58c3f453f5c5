#!/usr/bin/env bash
# Session 42's device call 3: build; then at once (correctness only) the GPU tests without the
# 230 s workload test in 4 gtest shards, memcheck / racecheck / synccheck on
# GpuSanitize.Fp8*:GpuSanitize.GemmEveryPathSmall, and the A/B base's build; then alone
# (timing) the A/B of cluster_sync_shared (tools/dev/pending/base/ = the releasing barrier),
# the workload bench default and --weights-static, and a tune of split 1 against 2 at K = 512.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 stdbuf -oL build-device/mxfp4_tests \
    --gtest_filter='Gpu*-GpuGemm.WorkloadShapesEveryPathWithinContract' > "$o/logs/tests-$i.log" 2>&1 &
done
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    echo "===== $tool"
    timeout 150 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.Fp8*:GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
printf '128 2112 7168\n96 2112 7168\n72 2112 7168\n128 1024 8192\n96 4096 4096\n80 2880 6144\n112 2048 4096\n128 4096 2048\n256 3072 1536\n64 7168 2048\n1024 7168 2048\n' > /tmp/fp8ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh shared-fence /tmp/fp8ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED" "$o"/logs/tests-*.log
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh shared-fence /tmp/fp8ab.txt 3
echo "ab done $((SECONDS-t0)) s"
for v in default static; do
  a=; [ $v = static ] && a=--weights-static
  timeout 200 build-device/mxfp4 bench $a --out-dir "$o/bench-$v" > "$o/logs/bench-$v.log" 2>&1
  echo "bench $v rc=$? $((SECONDS-t0)) s"; grep -h geomean "$o/bench-$v"/*.md
done
printf '32 4096 512\n64 2880 512\n24 2880 512\n48 4096 512\n64 7168 512\n32 4096 1024\n' > /tmp/k512.txt
MXFP4_TUNE_CACHE=/tmp/tune.json timeout 150 build-device/mxfp4 tune --verbose --paths splitk --shapes /tmp/k512.txt \
  > "$o/logs/tune-splitk-k512.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep -E "^ {1,5}[0-9]|dispatcher" "$o/logs/tune-splitk-k512.log" | grep -E "split_k=[12] |dispatcher|^ {1,5}[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ us +path" | head -80
cd "$o" && tar czf /tmp/all.tgz logs bench-* 2>/dev/null && rm -rf logs bench-* dc && mv /tmp/all.tgz .
