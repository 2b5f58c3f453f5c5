#!/usr/bin/env bash
# The next session's first device call (written at the end of session 43, whose device starts
# mostly failed; plan items f, x and w's bench part in docs/perf-notes.md), ~6 minutes:
#   - build; at once: the A/B base's build, the whole Gpu* suite in 3 shards, and memcheck /
#     racecheck / synccheck on GpuSanitize.GemmEveryPathSmall (session 43 added path splitk's
#     16-token kernel at split 4/5/8 to it: never run on a GPU yet);
#   - on an H200 the workload bench, default and --weights-static (bench/results/h200.md and
#     h200-static.md to commit: h200.md is session 36's run);
#   - what path fp8's fix-up launch costs when nothing is flagged: A/B of the tree against a base
#     whose src/cuda/gemm.cu lacks the fp8_fixup launch (made here with sed: wrong results where a
#     group is flagged, none in the bench), "new - base" = the launch's cost, 3 interleaved runs;
#   - plan item q: the same A/B of the receive mbarrier's wait at cluster scope (made with python).
# Usage (repository root, on the device): OUT=... bash tools/dev/pending/first-call.sh
#   (then copy $OUT/all.tgz back)
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
sed '/^ *fp8_fixup(A, M, K, lda, rule, a_img, B, C, c_f32, ldc, s);$/d' src/cuda/gemm.cu > tools/dev/pending/base/src/cuda/gemm.cu
[ "$(grep -c 'fp8_fixup(A' tools/dev/pending/base/src/cuda/gemm.cu)" = 0 ] && grep -q 'fp8_fixup(A' src/cuda/gemm.cu ||
  { echo "first-call.sh: the fp8_fixup line was not found in src/cuda/gemm.cu"; exit 2; }
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4 2880 512\n' > /tmp/ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh nofixup /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
for i in 0 1 2; do  # the whole GPU suite (38 s in 4 shards on an H100, session 43)
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 200 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 \
    > "$o/logs/tests-$i.log" 2>&1 &
done
(
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck synccheck; do
    echo "===== $tool"
    timeout 120 "$san" --tool $tool --error-exitcode 9 --print-limit 20 build-device/mxfp4_tests \
      --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
    echo "===== $tool rc=$?"
  done
) > "$o/logs/sanitizers.log" 2>&1 &
wait
echo "parallel part done $((SECONDS-t0)) s"
grep -hE "^\[  (PASSED|FAILED|SKIPPED) " "$o"/logs/tests-*.log
grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers.log"
cat "$o/logs/ab-build.txt"
if grep -q H200 "$o/logs/gpu0.txt"; then
  build-device/mxfp4 bench --out-dir "$o/dc/default" > "$o/logs/bench-default.log" 2>&1
  build-device/mxfp4 bench --weights-static --out-dir "$o/dc/static" > "$o/logs/bench-static.log" 2>&1
  grep -h geomean "$o"/dc/default/*.md "$o"/dc/static/*.md
  echo "h200 bench $((SECONDS-t0)) s"
fi
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh nofixup /tmp/ab.txt 3
echo "ab done $((SECONDS-t0)) s"
# Plan item q: the receive mbarrier's wait with acquire at cluster scope (base) against the
# tree's CTA scope ("new - base" = what the CTA scope saves; SASS: one CCTL.IVALL per wait).
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base/src/cuda
python3 - <<'PY' || { echo "first-call.sh: the cluster-acquire variant did not apply"; exit 2; }
src, dst = "src/cuda/", "tools/dev/pending/base/src/cuda/"
b = open(src + "bulk_copy.cuh").read()
anchor = "/// 16-byte asynchronous copy global -> shared by this thread"
assert anchor in b
fn = (
    "__device__ __forceinline__ void mbarrier_wait_cluster(uint64_t* bar, uint32_t parity) {\n"
    "  const uint32_t addr = smem_addr(bar);\n  uint32_t done = 0;\n  while (!done) {\n"
    '    asm volatile("{\\n .reg .pred p;\\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;'
    '\\n selp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");\n  }\n}\n\n')
open(dst + "bulk_copy.cuh", "w").write(b.replace(anchor, fn + anchor, 1))
r = open(src + "splitk_reduce.cuh").read()
assert "  mbarrier_wait(recv_bar, 0u);" in r
open(dst + "splitk_reduce.cuh", "w").write(r.replace("  mbarrier_wait(recv_bar, 0u);", "  mbarrier_wait_cluster(recv_bar, 0u);", 1))
PY
printf '16 3072 1536\n12 4096 2048\n16 4096 1536\n16 7168 4096\n32 4096 512\n64 2880 512\n64 3072 1536\n4 2880 512\n' > /tmp/abq.txt
OUT=$o tools/dev/ab.sh clusteracq /tmp/abq.txt 3
echo "ab q done $((SECONDS-t0)) s"
rm -rf tools/dev/pending/base
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
