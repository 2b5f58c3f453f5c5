#!/usr/bin/env bash
# Per-kernel GPU times of one library call per shape (device machine, after device-check.sh has
# built build-device): for each "M N K" line of SHAPES, `ncu` records gpu__time_duration of the
# GEMM-side kernels (A quantizer or FP8 image, GEMM, fix-up) of the benchmark's first calls
# (caches flushed before each kernel, clocks left alone), and the script prints the median per
# kernel name (us). The ncu CSV goes to $OUT/kernels-<M>x<N>x<K>.csv when OUT is set (the device
# returns at most 8 files: tar them).
# Usage: scripts/profile-kernels.sh SHAPES [EXTRA_BENCH_ARGS...]
set -uo pipefail
shapes=$1; shift
out=${OUT:-/tmp}
regex='regex:gemm_fp8_kernel|fp8_fixup_kernel|gemm_fused_kernel|gemm_tiled_kernel|quantize_fragments_kernel|fp8_image_kernel<.*Bf16Source'
grep -v '^#' "$shapes" | while read -r M N K _; do
  [ -z "${M:-}" ] && continue
  one=$(mktemp); echo "$M $N $K" > "$one"
  csv="$out/kernels-${M}x${N}x${K}.csv"
  ncu --clock-control none --kernel-name-base demangled -k "$regex" --launch-count 15 \
      --metrics gpu__time_duration.sum --csv \
      build-device/mxfp4 bench --shapes "$one" --no-baselines --replays 10 --out-dir "$(mktemp -d)" "$@" \
      2>/dev/null | grep '^"' > "$csv"
  python3 - "$csv" "$M" "$N" "$K" <<'PY'
import csv, sys, statistics, re
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    name = re.sub(r'\(.*', '', r['Kernel Name'])[:60]
    value = float(r['Metric Value'].replace(',', ''))  # ncu prints thousands separators
    by.setdefault(name, []).append(value / 1000.0 if r['Metric Unit'] in ('ns', 'nsecond') else value)
parts = [f"{n} {statistics.median(v):.2f}us(x{len(v)})" for n, v in by.items()]
print(f"{sys.argv[2]}x{sys.argv[3]}x{sys.argv[4]}: " + "; ".join(parts))
PY
  rm -f "$one"
done
