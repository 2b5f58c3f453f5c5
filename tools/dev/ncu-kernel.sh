#!/usr/bin/env bash
# One kernel launch under `ncu --set full` (GPU machine, after device-check.sh built
# build-device; a measurement aid): the 4th launch of kernels matching REGEX in `mxfp4 bench`
# of one shape, clocks left alone. Writes PREFIX.ncu-rep, PREFIX-details.txt (every section)
# and PREFIX-source.csv (SASS with per-instruction stall samples).
# REGEX matches ncu's kernel name base: the function name without template arguments unless
# NCU_NAME_BASE=demangled (then e.g. "fp8_image_chunk_kernel<.*Bf16Source" picks the
# activations' image, not the weights' of prepack, which runs first).
# BUILD=DIR profiles DIR/mxfp4 (e.g. a tools/dev/variant.sh build, build-NAME) instead of build-device.
# Usage: [BUILD=DIR] [NCU_NAME_BASE=demangled] tools/dev/ncu-kernel.sh "M N K" REGEX PREFIX [EXTRA_BENCH_ARGS...]
set -uo pipefail
shape=$1 regex=$2 prefix=$3; shift 3
one=$(mktemp); echo "$shape" > "$one"
ncu --clock-control none --set full --import-source yes --kernel-name-base "${NCU_NAME_BASE:-function}" -k "regex:$regex" --launch-skip 3 --launch-count 1 \
    -f -o "$prefix" "${BUILD:-build-device}"/mxfp4 bench --shapes "$one" --no-baselines --replays 3 --out-dir "$(mktemp -d)" "$@" \
    > "$prefix-run.log" 2>&1
ncu --import "$prefix.ncu-rep" --page details > "$prefix-details.txt" 2>&1
ncu --import "$prefix.ncu-rep" --page source --csv --print-source sass > "$prefix-source.csv" 2>&1
tail -n 3 "$prefix-run.log"
grep -E 'Duration|Throughput|Pipe|Issue Slots|Warp Cycles Per Issued|Active Warps|Registers|Hit Rate' "$prefix-details.txt" | head -40
