#!/usr/bin/env bash
# Session 59's calls (any Hopper): [TUNE="SHAPES[:PATHS]..."] [LIMIT=S] bash tools/dev/pending/call-s59.sh VARIANT[:BASE]...
# (session 58's call-s58.sh with its shapes named shapes-VARIANT-s59.txt; spent call-s58.sh:
# `git show fa40567:tools/dev/pending/call-s58.sh`). Per VARIANT an A/B against the overlay
# base-BASE (default base-VARIANT; new = the tree) on shapes-VARIANT-s59.txt, 3 reps; per TUNE
# entry a tune (`mxfp4 tune --paths PATHS --verbose`, PATHS default fp8, `all` for every path's
# candidates; at most TUNE_S seconds each, default 200); then on an H200 the
# workload benches (results/: commit as bench/results/h200{,-f32,-static}), cluster_fit and the
# A/Bs of session 55's rules (cw), session 54's few-tile rules (fewt) and a5fb0fc's K bound
# (k4096). Each step guarded by the time left (LIMIT, default 540 s). At most 8 files come back:
# results/ (6) and logs.tgz.
# Planned first call: TUNE=tools/dev/pending/shapes-tune64x128-s59.txt bash
# tools/dev/pending/call-s59.sh prewiden  (prewiden: fa40567's long-K rule confirmed on 20 fresh
# shapes, new - base < 0 = fa40567 faster; the tune asks where 128 x 64 unsplit beats 64 x 128).
# Then (plan item b) tunes of random shapes per region: TUNE=...shapes-tune-kshort-s59.txt (path
# fp8, M > 128 at K < 4096), and for shapes-tune-m128-s59.txt / shapes-tune-m64-s59.txt set
# TUNE_PATHS=all (every path's candidates: the small-M kernel, gemv, fused, fp8).
# Before it, here, the untracked overlays (base-cw, -s53, -k4096 only for an H200):
#   P=tools/dev/pending; mkdir -p $P/base-prewiden/src/dispatch $P/base-cw/src/dispatch
#   git show fa40567~:src/dispatch/fp8_rules.cpp > $P/base-prewiden/src/dispatch/fp8_rules.cpp
#   for f in rules.hpp fp8_rules.cpp; do git show 21a1510:src/dispatch/$f > $P/base-cw/src/dispatch/$f; done
#   bash $P/prep-first-call.sh $P/dispatch-before-s54.patch $P/base-s53
#   bash $P/prep-first-call.sh $P/fp8-m128-k4096.patch $P/base-k4096
# Session 59 ran call 1 (H100) and call 2 with LIMIT=190 (pair132 landed, the 64 x 128 tune ran 25
# shapes); session 60: call 2 without pair132 and the 64 x 128 tune (perf-notes' plan, item a).
# Call 2 (after call 1's confirmation): TUNE="$P/shapes-tune64x128b-s59.txt $P/shapes-tune-kshort-s59.txt
#   $P/shapes-tune-m128-s59.txt:all $P/shapes-tune-m64-s59.txt:all" TUNE_S=120 PAIRFIT=1 bash $P/call-s59.sh tall:prewiden pair132 smk4
#   (pair132: base-pair132 = pairs of 128 x 128 tiles up to the SM count, its line here:
#   `sed 's/const int64_t limit = wave ?/const int64_t limit = block_n == 128 \&\& split == 2 ? sms : wave ?/'
#   src/dispatch/fp8_rules.cpp > $P/base-pair132/src/dispatch/fp8_rules.cpp`; new - base > 0 = it wins)
#   (smk4: base-smk4 = the small-M kernel's split 8 -> 4 at <= 4 K chunks per CTA, >= 12 tiles:
#   `mkdir -p $P/base-smk4/src/dispatch; sed 's|^    const int64_t ctas = tiles \* cfg.split_k;|    if (cfg.split_k == 8 \&\& tiles >= 12 \&\& ceil_div(chunks, 8) <= 4) cfg.split_k = 4;\n\0|'
#   src/dispatch/dispatch.cpp > $P/base-smk4/src/dispatch/dispatch.cpp`)
# Usage (repository root, on the device; carry [".deps"]).
set -u
o=${OUT:?}; L=/tmp/c59a; rm -rf "$L"; mkdir -p "$L/logs" "$o/results"; t0=$SECONDS
pack() { tar czf "$o/.l.tgz" -C "$L" logs && mv -f "$o/.l.tgz" "$o/logs.tgz"; }
left() { echo $((${LIMIT:-540} - (SECONDS - t0))); }  # LIMIT: seconds for the whole script
P=tools/dev/pending
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu" | tee "$L/logs/gpu.txt"
bases=$(for v in "$@"; do echo "${v##*:}"; done | sort -u); h200=; [[ $gpu == *H200* ]] && [ "${H200_STEPS:-1}" = 1 ] && h200=1  # H200_STEPS=0: skip the H200 steps
[ -n "$h200" ] && bases="cw s53 k4096 $bases"
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
for v in "$@"; do ab ${v##*:} ${v%%:*} $P/shapes-${v%%:*}-${SFX:-s59}.txt 3 60; done  # SFX: the shapes files' suffix
if [ -n "${GPUTEST:-}" ] && need 60 "gpu tests $GPUTEST"; then  # GPUTEST=FILTER: the GPU tests of FILTER on the tree
  timeout $(( $(left) - 15 )) build-device/mxfp4_tests --gtest_filter="$GPUTEST" --gtest_brief=1 > "$L/logs/gputest.log" 2>&1
  echo "gpu tests rc=$? $((SECONDS-t0)) s"; tail -3 "$L/logs/gputest.log"; pack
fi
for tu in ${TUNE:-}; do  # TUNE="SHAPES[:PATHS] ...": tunes of PATHS (default fp8; all: every path), every candidate's time
  f=${tu%%:*}; pa=fp8; [ "$f" != "$tu" ] && pa=${tu#*:}; n=tune-$(basename "$f" .txt)
  need 40 "tune $f" || continue
  timeout $(( $(left) - 10 < ${TUNE_S:-200} ? $(left) - 10 : ${TUNE_S:-200} )) build-device/mxfp4 tune --shapes "$f" $([ "$pa" = all ] || echo --paths "$pa") --verbose > "$L/logs/$n.log" 2>&1
  echo "$n rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$L/logs/$n.log" | grep -v -- '^--' | grep -B1 -E '\((1\.0[3-9]|1\.[1-9]|[2-9]\.)[0-9]*x' | grep -v -- '^--' | head -30; pack
done
if [ -n "${PAIRFIT:-}" ] && need 40 pairfit; then  # PAIRFIT=1: pairs of ~210 KB CTAs, 126-132 CTAs, resident at once?
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a tools/dev/probes/cluster_fit.cu -o /tmp/cf &&
    timeout 30 /tmp/cf 384,210400,2,126 384,210400,2,128 384,210400,2,130 384,210400,2,132 384,210400,1,132 > "$L/logs/pair-fit.txt" 2>&1
  echo "pairfit rc=$? $((SECONDS-t0)) s"; cat "$L/logs/pair-fit.txt"; pack
fi
if [ -n "$h200" ]; then
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
