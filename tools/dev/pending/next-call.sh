#!/usr/bin/env bash
# The first device call of session 54 (written in session 53; meant for an H200, useful on an
# H100 too; ~5-6 minutes). Before it, here (writes the untracked overlay):
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/fp8-m128-k4096.patch tools/dev/pending/base-k4096
# 1. A/B of a5fb0fc's K bound for 64 < M <= 128 on unsplit 64 x 128 tiles: the tree (K <= 5120)
#    against the overlay (K <= 4096); new - base > 0 = the 4096 bound faster. The H100 had 5120
#    +2.5 to +3.2 us (ab-m128v2-call7-session53-h100.txt); session 52's H200 tune interpolates
#    to ~0 at K = 5120 on an H200 (+1.25 at 4096, -1.9 at 7168). Controls 128x7168x4096 and
#    128x2880x2560 (same config both ways). Decision here: if on an H200 any of the K > 4096
#    shapes is slower with 5120 by more than max(0.05 us, 0.5%), bound at 4096 again unless the
#    H100 gain outweighs it (see perf-notes, session 53, plan item a).
# 2. The workload benches: bf16, --out-dtype f32, --weights-static ($OUT/results: commit as
#    bench/results/<gpu>{,-f32,-static}.{md,json}).
# 2b. The Gpu* suite (3 shards): 4f0f97e moved the GPU tests' fp32 checks onto
#    check_gemm_contract_f32 without a device.
# 3. Tunes (plan items b and c): 64 < M <= 128 at K = 2048 with N = 256-2048 (the 15/32 bound of
#    60711f1, all paths), and 64 < M <= 128 at K = 1024-1536 with N = 4096-8192 (path fp8).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/next-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
[ -d $P/base-k4096 ] || { echo "no $P/base-k4096 (run the prep line in the header here)"; pack; exit 2; }
AB_OVERLAY=$P/base-k4096 AB_TREE=/tmp/ab-k4096 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh k4096 $P/shapes-k4096.txt 1 > "$o/logs/ab-build.txt" 2>&1 & bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -20 "$o/logs/build.log" "$o/logs/ab-build.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$P/base-k4096 AB_TREE=/tmp/ab-k4096 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh k4096 $P/shapes-k4096.txt 5
echo "ab rc=$? $((SECONDS-t0)) s"; cp "$o/logs/ab-k4096.txt" "$o/" 2>/dev/null
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -6
for a in "" "--out-dtype f32" "--weights-static"; do
  n=bench$(echo $a | tr -d ' -')
  timeout 200 build-device/mxfp4 bench --out-dir "$o/results" $a > "$o/logs/$n.log" 2>&1
  echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$o/logs/$n.log" | head -1
done
for M in 72 128; do for N in 256 512 1024 1536 1920 1984 2048; do echo "$M $N 2048"; done; done > /tmp/t-k2048.txt
MXFP4_TUNE_CACHE=/tmp/t1.json timeout 100 build-device/mxfp4 tune --verbose --shapes /tmp/t-k2048.txt > "$o/logs/tune-m128-k2048-smalln.log" 2>&1
echo "tune 1 rc=$? $((SECONDS-t0)) s"; grep "dispatcher's choice" "$o/logs/tune-m128-k2048-smalln.log" | grep -v "(1.0[01]x"
for M in 72 96 128; do for N in 4096 5120 6144 7168 8192; do for K in 1024 1536; do echo "$M $N $K"; done; done; done > /tmp/t-k1024.txt
MXFP4_TUNE_CACHE=/tmp/t2.json timeout 100 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/t-k1024.txt > "$o/logs/tune-fp8-m128-k1024-widen.log" 2>&1
echo "tune 2 rc=$? $((SECONDS-t0)) s"; grep "dispatcher's choice" "$o/logs/tune-fp8-m128-k1024-widen.log" | grep -v "(1.0[01]x"
pack
