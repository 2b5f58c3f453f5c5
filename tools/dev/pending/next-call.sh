#!/usr/bin/env bash
# The first device call of session 55 (written in session 54; meant for an H200, useful on an
# H100 too; ~6-7 minutes). Before it, here (each writes an untracked overlay):
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/fp8-m128-k4096.patch tools/dev/pending/base-k4096
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/dispatch-before-s54.patch tools/dev/pending/base-s53
# 1. A/B of a5fb0fc's K bound for 64 < M <= 128 on unsplit 64 x 128 tiles: the tree (K <= 5120)
#    against the overlay (K <= 4096); new - base < 0 = 5120 faster. H100 (sessions 53, 54):
#    -2.25 to -3.30 us; session 52's H200 tune interpolates to ~0 at K = 5120. If the H200 loses
#    more than max(0.05 us, 0.5%) on a K > 4096 shape, weigh it against the H100's gain
#    (docs/perf-notes.md, session 53, plan item a).
# 2. A/B of session 54's few-tile rules (small_m_kernel_wins, path fp8 split-K for few-tile
#    M > 128, the small-M kernel's grid) against 1550a11's dispatcher on every shape of its
#    A/Bs (shapes-fewtiles-all.txt); new - base < 0 = session 54's rules faster. H100: -0.33 to
#    -13.27 us; the controls (128x2112x7168, 128x2048x2048, 128x1024x7168, 96x4096x4096,
#    256x1024x2048, 192x512x1024, 256x3072x1536, 256x7168x2048, 256x2112x7168) unchanged.
# 3. The workload benches: bf16, --out-dtype f32, --weights-static ($OUT/results: commit as
#    bench/results/<gpu>{,-f32,-static}.{md,json}).
# 4. Plan item b's tune: M = 192-320 x N = 1280-1664 x K = 6144-8192, path fp8: where do
#    128 x 128 split-K grids of 100-128 CTAs in clusters of 3-4 (past fp8_split_grid_limit's 99)
#    win? Session 54's call 10 (H100) had them 8-25% ahead at K = 7168 (256x1600x7168 split 4,
#    104 CTAs, 19.52 us against the dispatcher's 64 x 64 24.49).
# At most 8 files come back: results/ (6) and logs.tgz (the A/B tables are in it and on stdout).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/next-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
for d in base-k4096 base-s53; do
  [ -d $P/$d ] || { echo "no $P/$d (run the prep lines in the header here)"; pack; exit 2; }
done
AB_OVERLAY=$P/base-k4096 AB_TREE=/tmp/ab-k4096 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh k4096 $P/shapes-k4096.txt 1 > "$o/logs/ab-build-k4096.txt" 2>&1 & b1=$!
AB_OVERLAY=$P/base-s53 AB_TREE=/tmp/ab-s53 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh fewt $P/shapes-fewtiles-all.txt 1 > "$o/logs/ab-build-fewt.txt" 2>&1 & b2=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $b1; r1=$?; wait $b2; r2=$?
[ $built = 0 ] && [ $r1 = 0 ] && [ $r2 = 0 ] ||
  { echo "build rc=$built bases rc=$r1 $r2"; tail -20 "$o/logs/build.log" "$o/logs"/ab-build-*.txt; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-k4096 AB_TREE=/tmp/ab-k4096 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh k4096 $P/shapes-k4096.txt 5
echo "ab k4096 rc=$? $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-s53 AB_TREE=/tmp/ab-s53 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh fewt $P/shapes-fewtiles-all.txt 3
echo "ab fewt rc=$? $((SECONDS-t0)) s"
for a in "" "--out-dtype f32" "--weights-static"; do
  n=bench$(echo $a | tr -d ' -')
  timeout 200 build-device/mxfp4 bench --out-dir "$o/results" $a > "$o/logs/$n.log" 2>&1
  echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$o/logs/$n.log" | head -1
done
for M in 192 256 320; do for N in 1280 1408 1536 1664; do for K in 6144 7168 8192; do echo "$M $N $K"; done; done; done > /tmp/t-b.txt
MXFP4_TUNE_CACHE=/tmp/tb.json timeout 150 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/t-b.txt > "$o/logs/tune-fp8-m256-clusterfit.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-fp8-m256-clusterfit.log" | grep -v "^--"
pack
