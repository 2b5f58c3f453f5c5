#!/usr/bin/env bash
# Path gemv's per-warp timelines in a CUDA graph's steady state (GPU machine; a measurement
# aid): copies the work tree to a scratch directory, instruments gemv's kernel there
# (gemv_instrument.py), builds the library and gemv_trace.cu, then runs /tmp/gemv_trace for
# every line of CASES ("M N K" for the dispatcher's choice, or "M N K block_n warps" for a
# forced path gemv configuration). The repository itself is never modified.
# BUILD_ONLY=1 stops after the build (a check without a GPU); CUDA_FLAGS="-D..." builds a variant.
# Usage: [CUDA_FLAGS=...] tools/dev/timeline/gemv_run.sh CASES_FILE [SCRATCH_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cases=$(realpath "$1")
scratch=${2:-/tmp/mxfp4-gemv-timeline}
rm -rf "$scratch" && mkdir -p "$scratch"
(cd "$root" && tar --exclude='./build*' --exclude='./.git' -cf - .) | tar -C "$scratch" -xf -
cd "$scratch"
python3 tools/dev/timeline/gemv_instrument.py src/cuda/gemm_gemv.cu
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
cmake -S . -B build-tl ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DCMAKE_CUDA_FLAGS="${CUDA_FLAGS:-}" -DMXFP4_BUILD_TESTS=OFF -DMXFP4_BUILD_CLI=OFF >/dev/null
cmake --build build-tl -j "$(nproc)" --target mxfp4 >/dev/null
blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-tl/CMakeCache.txt)
nvcc -std=c++17 -O2 -arch=sm_90a -Iinclude tools/dev/timeline/gemv_trace.cu build-tl/libmxfp4.a -lcublas -lcublasLt \
  ${blas:+"$blas"} -o /tmp/gemv_trace
[ "${BUILD_ONLY:-0}" = 1 ] && exit 0
grep -v '^#' "$cases" | while read -r line; do
  [ -z "$line" ] && continue
  echo "== $line"
  /tmp/gemv_trace $line || echo "gemv_run.sh: rc=$? for '$line'"
done
