#!/usr/bin/env bash
# Path fp8 stage-ring traces (GPU machine; a measurement aid): copies the work tree to a scratch
# directory, instruments path fp8's GEMM kernel there (fp8_instrument.py: per stage the
# empty-wait return and issue end of producer thread PART (default 3, A's metadata), consumer
# warpgroup 0's arrival at and return from the full-wait and its release, for the first CTAS
# CTAs and ITERS stage iterations), builds the library and
# fp8_trace.cu, then runs /tmp/fp8_trace for every line of CASES ("M N K" for the configuration
# gemm() picks, or "M N K block_m block_n warps split_k" for a forced path fp8 configuration).
# fp8_trace.cu's header says what each printed number means. The repository itself is never
# modified. Shapes that do not run path fp8 print "not path fp8" and are skipped.
# Usage: [CTAS=8] [ITERS=512] [PART=3] tools/dev/timeline/fp8_run.sh CASES_FILE [SCRATCH_DIR]
#   e.g. bash tools/dev/timeline/fp8_run.sh tools/dev/timeline/cases-fp8.txt
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cases=$(realpath "$1")
scratch=${2:-/tmp/mxfp4-fp8-timeline}
rm -rf "$scratch" && mkdir -p "$scratch"
(cd "$root" && tar --exclude='./build*' --exclude='./.git' -cf - .) | tar -C "$scratch" -xf -
cd "$scratch"
python3 tools/dev/timeline/fp8_instrument.py --ctas "${CTAS:-8}" --iters "${ITERS:-512}" --part "${PART:-3}" \
  src/cuda/gemm_fp8_kernel.cuh src/cuda/gemm_fp8.cu
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
cmake -S . -B build-tl ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DMXFP4_BUILD_TESTS=OFF -DMXFP4_BUILD_CLI=OFF >/dev/null
cmake --build build-tl -j "$(nproc)" --target mxfp4 >/dev/null
blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-tl/CMakeCache.txt)
nvcc -std=c++17 -O2 -arch=sm_90a -Iinclude tools/dev/timeline/fp8_trace.cu build-tl/libmxfp4.a -lcublas -lcublasLt \
  ${blas:+"$blas"} -o /tmp/fp8_trace
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0  # build check without a GPU
grep -v '^#' "$cases" | while read -r line; do
  [ -z "$line" ] && continue
  echo "== $line"
  /tmp/fp8_trace $line || echo "fp8_run.sh: rc=$? for '$line'"
done
