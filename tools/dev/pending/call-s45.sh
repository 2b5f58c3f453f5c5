#!/usr/bin/env bash
# Session 45's device call (~6-7 minutes). Run tools/dev/pending/prep-call-s45.sh HERE first.
#   - builds, at once, the tree (build-device, scripts/device-check.sh) and the tree with
#     tools/dev/pending/fp8-fixup-hybrid.patch applied (/tmp/ab-tree/build, every target:
#     tools/dev/ab.sh's base with AB_PREBUILT=1);
#   - at once: the Gpu* suite of both builds (3 shards each) and memcheck / racecheck /
#     synccheck on GpuSanitize.GemmEveryPathSmall of both (the tree's new flagged cases have
#     never run against the separate fix-up kernel; the hybrid's FIX kernels never in this form);
#   - A/B "hybrid" (new = tree, base = hybrid: new - base positive = the hybrid faster) on the
#     path fp8 shapes, 3 reps, and with 16 flagged weight rows, 1 rep;
#   - the hybrid's workload bench, default and --weights-static (what a commit of the patch
#     would carry as bench/results), then the tree's if time is left.
# Everything is written straight under $OUT as it goes (a timeout keeps what is there).
# Usage (repository root, on the device): bash tools/dev/pending/call-s45.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
[ -f tools/dev/pending/hyb/DELETED ] || { echo "run tools/dev/pending/prep-call-s45.sh first"; exit 2; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
tree=/tmp/ab-tree
rm -rf "$tree" && mkdir -p "$tree"
tar cf - --exclude='./build*' --exclude='./tools/dev/pending/hyb' . | tar xf - -C "$tree"
(cd tools/dev/pending/hyb && find . -type f ! -name DELETED) | while read -r f; do cp "tools/dev/pending/hyb/$f" "$tree/$f"; done
while read -r f; do rm -f "$tree/$f"; done < tools/dev/pending/hyb/DELETED
(cd "$tree" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON &&
   cmake --build build -j 16) > "$o/logs/hyb-build.log" 2>&1 &
hb=$!
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
wait $hb || { echo "hybrid build failed"; tail -30 "$o/logs/hyb-build.log"; }
echo "builds $((SECONDS-t0)) s"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for b in tree hyb; do
  bin=build-device/mxfp4_tests; [ $b = hyb ] && bin=$tree/build/mxfp4_tests
  for i in 0 1 2; do
    GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 300 $bin --gtest_filter='Gpu*' --gtest_brief=1 \
      > "$o/logs/tests-$b-$i.log" 2>&1 &
  done
  (
    for tool in memcheck racecheck synccheck; do
      echo "===== $tool"
      timeout 240 "$san" --tool $tool --error-exitcode 9 --print-limit 20 $bin \
        --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
      echo "===== $tool rc=$?"
    done
  ) > "$o/logs/sanitizers-$b.log" 2>&1 &
done
wait
echo "tests done $((SECONDS-t0)) s"
for b in tree hyb; do
  echo "== $b"
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$o"/logs/tests-$b-*.log
  grep -hB5 "Failure" "$o"/logs/tests-$b-*.log | head -30
  grep -E "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o/logs/sanitizers-$b.log"
done
mkdir -p tools/dev/pending/base
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4096 7168 2048\n4 2880 512\n' > /tmp/ab.txt
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh hybrid /tmp/ab.txt 3
printf '64 7168 2048\n256 3072 1536\n256 2880 512\n1024 7168 2048\n' > /tmp/abf.txt
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh hybridflagged16 /tmp/abf.txt 1 --flagged-weight-rows 16
echo "ab done $((SECONDS-t0)) s"
$tree/build/mxfp4 bench --out-dir "$o/hyb-default" > "$o/logs/hyb-bench-default.log" 2>&1
$tree/build/mxfp4 bench --weights-static --out-dir "$o/hyb-static" > "$o/logs/hyb-bench-static.log" 2>&1
grep -h geomean "$o"/hyb-default/*.md "$o"/hyb-static/*.md
echo "hyb bench $((SECONDS-t0)) s"
if [ $((SECONDS-t0)) -lt 420 ]; then
  build-device/mxfp4 bench --out-dir "$o/tree-default" > "$o/logs/tree-bench-default.log" 2>&1
  grep -h geomean "$o"/tree-default/*.md
  echo "tree bench $((SECONDS-t0)) s"
fi
rm -rf tools/dev/pending/base
