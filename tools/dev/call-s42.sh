#!/usr/bin/env bash
# Session 42's device call 4: build; then at once (correctness only) the GPU tests without the
# 230 s workload test in 4 gtest shards, the workload test as a fifth process, memcheck /
# racecheck / synccheck on three GpuSanitize cases, and the A/B base's build; then alone
# (timing) the A/B of the workspace atomic, the copy path's proxy fences and the K <= 512 split
# rule (tools/dev/pending/base/ = before them), the workload bench default and --weights-static.
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
timeout 330 stdbuf -oL build-device/mxfp4_tests --gtest_filter='GpuGemm.WorkloadShapesEveryPathWithinContract' \
  > "$o/logs/tests-workload.log" 2>&1 &
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    echo "===== $tool"
    timeout 120 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall:GpuSanitize.GemmSplitkThroughWorkspaceSmall:GpuSanitize.Fp8*' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
printf '16 2112 7168\n8 2112 7168\n16 7168 4096\n32 4096 512\n64 2880 512\n64 3072 1536\n48 4096 1024\n24 2880 512\n64 7168 512\n48 7168 512\n32 5120 512\n16 3072 1536\n4 2880 512\n1 7168 2048\n' > /tmp/fp8ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh fences-rule /tmp/fp8ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED" "$o"/logs/tests-*.log
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh fences-rule /tmp/fp8ab.txt 3
echo "ab done $((SECONDS-t0)) s"
for v in default static; do
  a=; [ $v = static ] && a=--weights-static
  timeout 200 build-device/mxfp4 bench $a --out-dir "$o/bench-$v" > "$o/logs/bench-$v.log" 2>&1
  echo "bench $v rc=$? $((SECONDS-t0)) s"; grep -h geomean "$o/bench-$v"/*.md
done
cd "$o" && tar czf /tmp/all.tgz logs bench-* 2>/dev/null && rm -rf logs bench-* dc && mv /tmp/all.tgz .
