#!/usr/bin/env bash
# Builds and runs the CPU emulation of the FP8 image kernels (emu.cpp) against the CPU oracle.
# Needs a configured and built tree (default build-cuda; BUILD=dir, relative to the repository
# or absolute, to change) for libmxfp4.a. ctest runs it on a few shapes (test image_emu).
# Usage: tools/dev/image-emu/run.sh [M K ...]   (default: 40 shapes, about a minute;
#        FULL=1 adds M = 16, 255, 256, 512 and more K: about 5 minutes; EMU_FLAGS: extra g++
#        flags, e.g. -DMXFP4_EXP_SERIAL_E=1)
# Exit status 0 when every image is byte-identical and no sync diverged.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${BUILD:-build-cuda}
[[ "$build" = /* ]] || build=$root/$build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$root/src/cuda/fp8_image.cu
# The kernels and their helpers: from the unaligned-load helper to launch_image's constants.
first=$(grep -n '^/// Elements p\[0..7\] of a bf16 row' "$src" | cut -d: -f1)
last=$(grep -n '^/// ImageKernel::automatic runs a' "$src" | cut -d: -f1)
[ -n "$first" ] && [ -n "$last" ] || { echo "run.sh: markers not found in $src" >&2; exit 2; }
sed -n "${first},$((last - 1))p" "$src" > "$work/kernels.inc"
libs=()
blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' "$build/CMakeCache.txt")
[ -n "$blas" ] && libs+=("$blas")
# A library built with the CUDA backend (MXFP4_CUDA ON, or AUTO with nvcc found) holds .cu
# objects and needs the CUDA runtime and cuBLAS (CUDA_LIB_DIR: set by ctest from CMake's
# CUDAToolkit_LIBRARY_DIR).
if ar t "$build/libmxfp4.a" | grep -q '\.cu\.o$'; then
  libs+=(-L"${CUDA_LIB_DIR:-/usr/local/cuda/lib64}" -lcudart -lcublas -lcublasLt)
fi
g++ -std=c++17 -O2 ${EMU_FLAGS:-} -I"$root/include" -I"$root/src" -I"$work" "$root/tools/dev/image-emu/emu.cpp" \
  "$root/tools/dev/image-emu/fibers.S" "$build/libmxfp4.a" "${libs[@]}" -lpthread -o "$work/emu"
if [ $# -gt 0 ]; then
  shapes=("$@")
else
  ms=(1 17 150 257)
  ks=(32 96 160 224 480 992 1056 1376 2080 2880)
  if [ -n "${FULL:-}" ]; then ms+=(16 255 256 512); ks+=(64 128 1024 1120 1184 1248 1312 1440 1504 1536 2304 2400); fi
  shapes=()
  for m in "${ms[@]}"; do for k in "${ks[@]}"; do shapes+=("$m" "$k"); done; done
fi
"$work/emu" "${shapes[@]}"
