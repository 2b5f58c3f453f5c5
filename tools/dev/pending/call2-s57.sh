#!/usr/bin/env bash
# Session 57's second call (any Hopper): A/Bs of two path fp8 split-K variants drawn from call 1
# (docs/perf-notes.md, "Session 57"). The base is the variant, so new - base > 0 = the variant
# faster. Before it, here (untracked overlays), from the repository root:
#   P=tools/dev/pending; mkdir -p $P/base-ratiolong/src/dispatch $P/base-fits64/src/dispatch
#   sed 's|^  return 8 \* wave_ctas >= 9 \* ctas ? wave : within;|  const bool long_wave = slices >= 20 * int64_t(wave.split_k);\n  return (long_wave ? 20 * wave_ctas >= 21 * ctas : 8 * wave_ctas >= 9 * ctas) ? wave : within;|' \
#     src/dispatch/fp8_rules.cpp > $P/base-ratiolong/src/dispatch/fp8_rules.cpp
#   sed 's|if (K >= 4096 \&\& (ctas64 <= fp8_split_grid_limit(4, sms) \|\||if (K >= 4096 \&\& (fits64 \|\||' \
#     src/dispatch/fp8_rules.cpp > $P/base-fits64/src/dispatch/fp8_rules.cpp
# - ratiolong: fp8_split_config takes the cluster-wave grid at 21/20 the CTAs (instead of 9/8)
#   where its CTAs get >= 20 slices (K / 128 / split); shapes-ratiolong-s57.txt.
# - fits64: fp8_config (M > 128, 4096 <= K < 6144) tries split-K wherever 64 x 64 tiles fit one
#   wave, not only up to 3/4 of the SMs; shapes-fits64-s57.txt.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call2-s57.sh
set -u
o=${OUT:?}; L=/tmp/c57; rm -rf "$L"; mkdir -p "$L/logs"; t0=$SECONDS
pack() { tar czf "$o/.l.tgz" -C "$L" logs && mv -f "$o/.l.tgz" "$o/logs.tgz"; }
left() { echo $((540 - (SECONDS - t0))); }
P=tools/dev/pending
nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tee "$L/logs/gpu.txt"
for b in ratiolong fits64; do [ -d $P/base-$b ] || { echo "no $P/base-$b"; exit 2; }; done
OUT=$L/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$L/logs/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$L/logs/build.log"; pack; exit 1; }
for b in ratiolong fits64; do
  bash tools/dev/ab-inplace.sh $P/base-$b /tmp/ab-$b > "$L/logs/ab-build-$b.txt" 2>&1 ||
    { echo "base $b failed"; cat "$L/logs/ab-build-$b.txt"; pack; exit 1; }
done
echo "builds $((SECONDS-t0)) s"; pack
for b in ratiolong fits64; do
  [ "$(left)" -ge 90 ] || { echo "skipped $b ($(left) s left)"; continue; }
  AB_OVERLAY=$P/base-$b AB_TREE=/tmp/ab-$b AB_ROTATE=1 AB_PREBUILT=1 OUT=$L tools/dev/ab.sh $b $P/shapes-$b-s57.txt 3
  echo "ab $b rc=$? $((SECONDS-t0)) s"; pack
done
echo "done $((SECONDS-t0)) s"
