#!/usr/bin/env bash
# Session 56's first call (any Hopper; more on an H200). Before it, here (untracked overlays):
#   mkdir -p tools/dev/pending/base-cw/src/dispatch && for f in rules.hpp fp8_rules.cpp; do
#     git show 21a1510:src/dispatch/$f > tools/dev/pending/base-cw/src/dispatch/$f; done
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/fp8-m128-k4096.patch tools/dev/pending/base-k4096
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/dispatch-before-s54.patch tools/dev/pending/base-s53
#   for v in ratio longk; do mkdir -p tools/dev/pending/base-$v/src/dispatch; done
#   sed 's/return 8 \* wave_ctas >= 9 \* ctas/return 20 * wave_ctas >= 21 * ctas/' src/dispatch/fp8_rules.cpp \
#     > tools/dev/pending/base-ratio/src/dispatch/fp8_rules.cpp
#   sed 's/kFp8LongK = 6144;/kFp8LongK = 5632;/' src/dispatch/fp8_rules.cpp > tools/dev/pending/base-longk/src/dispatch/fp8_rules.cpp
# Bases are built in place (tools/dev/ab-inplace.sh: the overlays touch only src/dispatch/).
# Every GPU: A/B of session 55's rule on 24 random changed shapes (call4-s55.sh's, 3 reps; new -
# base < 0 = session 55's rule faster; landing rule: no shape slower than max(0.05 us, 0.5%)).
# Then (plan item b; here the base is the variant, so new - base > 0 = the variant faster): the
# cluster-wave ratio 21/20 instead of 9/8 (shapes-ratio-s56.txt: 12 shapes of the CPU sweep where
# it changes the choice, stratified by M, all 128 x 64 split 2 -> 128 x 128 split 4, and
# 544x320x7168, 128 x 128 split 6 -> 128 x 64 split 4; tiles M x N) and
# the long-K bound at 5632 instead of 6144 (shapes-longk5632-s56.txt, 12 of the 1432 changed).
# H200 only (the benches and cluster_fit before item b, the A/Bs after it): the workload benches (results/: commit as bench/results/h200{,-f32,-static}),
# cluster_fit with the fp8 kernel's shape (384 threads, 210400 B; clusters of 3-6), the A/B of
# session 55's rule on shapes-clusterwave.txt, of session 54's few-tile rules
# (shapes-fewtiles-all.txt against base-s53) and of a5fb0fc's K bound (shapes-k4096.txt against
# base-k4096). Last, every GPU: plan item c's tune, path fp8 at few-tile M > 128 and K = 5120
# (M = 192-512 x N = 1280-2112: does 128 x 64 split 2 win where bytes per CTA drop to 3/4?).
# Checked here before the call (CPU probe linking each overlay's dispatcher): the bases choose
# differently on 24/24, 13/13, 12/12, 22/30, 34/42 and 4/6 shapes of the six A/B files (the rest
# are controls); ab-inplace.sh restored a byte-identical tree CLI after each of the five bases.
# At most 8 files come back: results/ (6) and logs.tgz.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call1-s56.sh
set -u
# Logs live in $L (never more than 8 files under $OUT, even after a SIGKILL: bash runs a TERM trap
# only once its foreground child ends); after every step they are packed into $OUT/logs.tgz.
# Each step runs only if the time left (570 s for the whole call) covers its estimate.
o=${OUT:?}; L=/tmp/c56; rm -rf "$L"; mkdir -p "$L/logs" "$o/results"; t0=$SECONDS
pack() { tar czf "$o/.l.tgz" -C "$L" logs && mv -f "$o/.l.tgz" "$o/logs.tgz"; }
left() { echo $((570 - (SECONDS - t0))); }
need() { [ "$(left)" -ge "$1" ] || { echo "skipped (needs $1 s, $(left) left): ${*:2}"; return 1; }; }
P=tools/dev/pending
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu" | tee "$L/logs/gpu.txt"
h200=0; [[ $gpu == *H200* ]] && h200=1
bases="cw ratio longk"; [ $h200 = 1 ] && bases="$bases k4096 s53"
for b in $bases; do [ -d $P/base-$b ] || { echo "no $P/base-$b (header)"; pack; exit 2; }; done
OUT=$L/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$L/logs/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$L/logs/build.log"; pack; exit 1; }
for b in $bases; do
  bash tools/dev/ab-inplace.sh $P/base-$b /tmp/ab-$b > "$L/logs/ab-build-$b.txt" 2>&1 ||
    { echo "base $b failed"; cat "$L/logs/ab-build-$b.txt"; pack; exit 1; }
done
echo "builds $((SECONDS-t0)) s"; pack
ab() { need "$5" "ab $2" || return 0
       AB_OVERLAY=$P/base-$1 AB_TREE=/tmp/ab-$1 AB_ROTATE=1 AB_PREBUILT=1 OUT=$L tools/dev/ab.sh "$2" "$3" "$4"
       echo "ab $2 rc=$? $((SECONDS-t0)) s"; pack; }
tune_c() {
  need 60 "tune" || return 0
  local t=$(( $(left) - 10 )); [ $t -gt 150 ] && t=150
  for M in 192 256 320 384 512; do for N in 1280 1600 2112; do echo "$M $N 5120"; done; done > /tmp/t-c.txt
  MXFP4_TUNE_CACHE=/tmp/tc.json timeout $t build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/t-c.txt > "$L/logs/tune-fp8-k5120.log" 2>&1
  echo "tune rc=$? (limit $t s) $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$L/logs/tune-fp8-k5120.log" | grep -v "^--"; pack
}
ab cw cwr $P/shapes-clusterwave-random.txt 3 70
if [ $h200 = 1 ]; then
  for a in "" "--out-dtype f32" "--weights-static"; do
    need 30 "bench '$a'" || continue
    n=bench$(echo $a | tr -d ' -')
    timeout 120 build-device/mxfp4 bench --out-dir "$o/results" $a > "$L/logs/$n.log" 2>&1
    echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$L/logs/$n.log" | head -1; pack
  done
  if need 60 cluster_fit; then
    cases=""  # CTA counts from 96 (rounded up to a whole cluster) to 132
    for c in 3 4 5 6; do for n in $(seq $(( (96 + c - 1) / c * c )) $c 132); do cases="$cases 384,210400,$c,$n"; done; done
    nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a tools/dev/probes/cluster_fit.cu -o /tmp/cf &&
      timeout 40 /tmp/cf $cases > "$L/logs/cluster-fit.txt" 2>&1
    echo "cluster_fit rc=$? $((SECONDS-t0)) s"
    grep -E "launch no error; late CTAs 0," "$L/logs/cluster-fit.txt" | awk '{print $6, $8}' | sort -n -k1 -k2 |
      awk '{m[$1]=$2} END {for (c = 3; c <= 6; ++c) if (c in m) print "cluster", c, "resident up to", m[c]}'
    pack
  fi
fi
ab ratio ratio $P/shapes-ratio-s56.txt 3 50
ab longk longk $P/shapes-longk5632-s56.txt 3 50
if [ $h200 = 1 ]; then
  ab cw cw $P/shapes-clusterwave.txt 3 80
  ab s53 fewt $P/shapes-fewtiles-all.txt 3 110
  ab k4096 k4096 $P/shapes-k4096.txt 5 40
fi
tune_c
echo "done $((SECONDS-t0)) s"
