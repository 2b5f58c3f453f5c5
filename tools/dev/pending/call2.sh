#!/usr/bin/env bash
# Session 44, call 2: the fold's upper bound. Base = no fp8_fixup launch AND the fp8 GEMM lets
# no dependent launch early (call 1: without the fix-up, the next call's image kernel launched
# during multi-wave GEMMs and cost 0.6-1.4 us); new - base = what folding the fix-up into the
# GEMM could save at most. Also the Gpu* suite on the tree (cluster-scope receive wait landed).
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
sed '/^ *fp8_fixup(A, M, K, lda, rule, a_img, B, C, c_f32, ldc, s);$/d' src/cuda/gemm.cu > tools/dev/pending/base/src/cuda/gemm.cu
sed 's/^  grid_dependents_launch();$/  \/\/ no early trigger/' src/cuda/gemm_fp8_kernel.cuh > tools/dev/pending/base/src/cuda/gemm_fp8_kernel.cuh
grep -q 'no early trigger' tools/dev/pending/base/src/cuda/gemm_fp8_kernel.cuh || { echo "call2: trigger line not found"; exit 2; }
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4096 7168 2048\n4 2880 512\n' > /tmp/ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh nofixnotrig /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 200 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 \
    > "$o/logs/tests-$i.log" 2>&1 &
done
wait
grep -hE "^\[  (PASSED|FAILED|SKIPPED) " "$o"/logs/tests-*.log
cat "$o/logs/ab-build.txt"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh nofixnotrig /tmp/ab.txt 3
echo "ab done $((SECONDS-t0)) s"
rm -rf tools/dev/pending/base
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
