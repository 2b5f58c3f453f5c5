#!/usr/bin/env bash
# Session 57's fourth call (any Hopper): plan item b's first class. 128 x 128 split 5 in 105-110
# CTAs (the measured wave of clusters of 5: 110 of 132 SMs) lost 0.42 us to split 4 at
# 84x2752x10752 (call 1). The variant caps clusters of 5 at 100 CTAs (fp8_cluster_wave), which
# moves 1,824 shapes of the sweep to 128 x 64 split 2 or 128 x 128 split 4; 24 drawn at random by
# class: tools/dev/pending/shapes-s5edge-s57.txt. The base is the variant, so new - base > 0 =
# the variant faster. Before it, here (untracked overlay):
#   mkdir -p tools/dev/pending/base-s5edge/src/dispatch
#   sed 's/kResident132\[\] = {132, 132, 128, 117, 120, 110, 102};/kResident132[] = {132, 132, 128, 117, 120, 100, 102};/' \
#     src/dispatch/rules.hpp > tools/dev/pending/base-s5edge/src/dispatch/rules.hpp
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call4-s57.sh
set -u
o=${OUT:?}; L=/tmp/c57d; rm -rf "$L"; mkdir -p "$L/logs"; t0=$SECONDS
pack() { tar czf "$o/.l.tgz" -C "$L" logs && mv -f "$o/.l.tgz" "$o/logs.tgz"; }
left() { echo $((540 - (SECONDS - t0))); }
P=tools/dev/pending
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu" | tee "$L/logs/gpu.txt"
bases="s5edge"
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
ab s5edge s5edge $P/shapes-s5edge-s57.txt 3 60
echo "done $((SECONDS-t0)) s"
