#!/usr/bin/env bash
# Session 58's calls (any Hopper): bash tools/dev/pending/call-s58.sh VARIANT... On an H200 first what session 56's call1-s56.sh and
# session 57's call3-s57.sh had for one (session 55's plan item a): the workload benches
# (results/: commit as bench/results/h200{,-f32,-static}), cluster_fit with the fp8 kernel's
# shape, the A/Bs of session 55's rules (cw), session 54's few-tile rules (fewt) and a5fb0fc's K
# bound (k4096), new = the tree, new - base < 0 = the tree's rules faster. Before them, on any
# Hopper, one A/B per VARIANT whose base is the variant (overlay base-VARIANT, shapes
# shapes-VARIANT-s58.txt; new - base > 0 = the variant faster); each step guarded by the time
# left. At most 8 files come back: results/ (6) and logs.tgz.
# Call 1 (H100): mid4096 ratio13 (kFp8MidK = 4096, kLongWaveSlices = 13). Call 2: mid4608
# (128 x 64 split 2 from K = 4608 where its grid has <= 7/8 of the SMs) and pad98 (the 9/8
# comparison on CTAs weighted by the share of 128-column tiles inside N); their overlays are
# written by prep-first-call.sh from fp8-mid4608.patch and fp8-pad98.patch (header below).
# Call 3: pre58, the confirmation of the two landed rules (base-pre58 = the rules before them,
# `git show 196f0d2~:src/dispatch/fp8_rules.cpp`; here new - base < 0
# = the landed rules faster).
# Call 5: TUNE=tools/dev/pending/shapes-tune-s58.txt with no variant (the tune writes no
# cache the dispatcher reads in an A/B: ab.sh runs `bench`, which takes the dispatcher's choice).
# Call 6: widen (the long-K split-K bound 2 ctas64 <= 3 sms dropped: sed 's/ || (long_k && 2 \* ctas64 <= 3 \* sms)))/ || long_k))/' on a582615's rules).
# Call 4: ws18 (kLongWaveSlices = 18 on 196f0d2's rules: sed 's/kLongWaveSlices = 20;/kLongWaveSlices = 18;/').
# Before it, here, the untracked overlays (base-cw, -s53, -k4096 only for an H200):
#   P=tools/dev/pending; mkdir -p $P/base-cw/src/dispatch $P/base-mid4096/src/dispatch $P/base-ratio13/src/dispatch
#   for f in rules.hpp fp8_rules.cpp; do git show 21a1510:src/dispatch/$f > $P/base-cw/src/dispatch/$f; done
#   bash $P/prep-first-call.sh $P/dispatch-before-s54.patch $P/base-s53
#   bash $P/prep-first-call.sh $P/fp8-m128-k4096.patch $P/base-k4096
#   sed 's/kFp8MidK = 5120;/kFp8MidK = 4096;/' src/dispatch/fp8_rules.cpp > $P/base-mid4096/src/dispatch/fp8_rules.cpp
#   sed 's/kLongWaveSlices = 20;/kLongWaveSlices = 13;/' src/dispatch/fp8_rules.cpp > $P/base-ratio13/src/dispatch/fp8_rules.cpp
#   for v in mid4608 pad98; do bash $P/prep-first-call.sh $P/fp8-$v.patch $P/base-$v; done
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call-s58.sh mid4608 pad98
set -u
o=${OUT:?}; L=/tmp/c58a; rm -rf "$L"; mkdir -p "$L/logs" "$o/results"; t0=$SECONDS
pack() { tar czf "$o/.l.tgz" -C "$L" logs && mv -f "$o/.l.tgz" "$o/logs.tgz"; }
left() { echo $((${LIMIT:-540} - (SECONDS - t0))); }  # LIMIT: seconds for the whole script
P=tools/dev/pending
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu" | tee "$L/logs/gpu.txt"
bases="$*"; [[ $gpu == *H200* ]] && bases="cw s53 k4096 $bases"
for b in $bases; do [ -d $P/base-$b ] || { echo "no $P/base-$b"; exit 2; }; done
OUT=$L/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$L/logs/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$L/logs/build.log"; pack; exit 1; }
for b in $bases; do
  bash tools/dev/ab-inplace.sh $P/base-$b /tmp/ab-$b > "$L/logs/ab-build-$b.txt" 2>&1 ||
    { echo "base $b failed"; cat "$L/logs/ab-build-$b.txt"; pack; exit 1; }
done
echo "builds $((SECONDS-t0)) s"; pack
need() { [ "$(left)" -ge "$1" ] || { echo "skipped (needs $1 s, $(left) left): ${*:2}"; return 1; }; }
ab() { need "$5" "ab $2" || return 0
       AB_OVERLAY=$P/base-$1 AB_TREE=/tmp/ab-$1 AB_ROTATE=1 AB_PREBUILT=1 OUT=$L tools/dev/ab.sh "$2" "$3" "$4"
       echo "ab $2 rc=$? $((SECONDS-t0)) s"; pack; }
for v in "$@"; do ab $v $v $P/shapes-$v-s58.txt 3 60; done
if [ -n "${TUNE:-}" ] && need 60 "tune $TUNE"; then  # TUNE=SHAPES: a path fp8 tune, every candidate's time
  timeout $(( $(left) - 10 < ${TUNE_S:-200} ? $(left) - 10 : ${TUNE_S:-200} )) build-device/mxfp4 tune --shapes "$TUNE" --paths fp8 --verbose > "$L/logs/tune.log" 2>&1
  echo "tune rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$L/logs/tune.log" | grep -v -- '^--' | head -40; pack
fi
if [[ $gpu == *H200* ]]; then
  for a in "" "--out-dtype f32" "--weights-static"; do
    need 40 "bench '$a'" || continue
    n=bench$(echo $a | tr -d ' -')
    timeout 120 build-device/mxfp4 bench --out-dir "$o/results" $a > "$L/logs/$n.log" 2>&1
    echo "bench '$a' rc=$? $((SECONDS-t0)) s"; tail -2 "$L/logs/$n.log" | head -1; pack
  done
  if need 50 cluster_fit; then
    cases=""  # CTA counts from 96 (rounded up to a whole cluster) to 132
    for c in 3 4 5 6; do for n in $(seq $(( (96 + c - 1) / c * c )) $c 132); do cases="$cases 384,210400,$c,$n"; done; done
    nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a tools/dev/probes/cluster_fit.cu -o /tmp/cf &&
      timeout 40 /tmp/cf $cases > "$L/logs/cluster-fit.txt" 2>&1
    echo "cluster_fit rc=$? $((SECONDS-t0)) s"
    grep -E "launch no error; late CTAs 0," "$L/logs/cluster-fit.txt" | awk '{print $6, $8}' | sort -n -k1 -k2 |
      awk '{m[$1]=$2} END {for (c = 3; c <= 6; ++c) if (c in m) print "cluster", c, "resident up to", m[c]}'
    pack
  fi
  ab cw cw $P/shapes-clusterwave.txt 3 80
  ab s53 fewt $P/shapes-fewtiles-all.txt 3 100
  ab k4096 k4096 $P/shapes-k4096.txt 5 40
fi
echo "done $((SECONDS-t0)) s"
