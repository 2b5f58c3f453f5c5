#!/usr/bin/env bash
# Builds tools/dev/probes/call_split.cu against BUILD_DIR's libmxfp4.a (with extra nvcc FLAGS,
# e.g. the -D of a variant build) and runs it on the shapes given (a measurement aid for the
# GPU machine; used by device-steps.sh and variant.sh).
# Usage: tools/dev/call-split.sh BUILD_DIR "FLAGS" M N K [M N K ...]
set -u
b=$1 flags=$2
shift 2
blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' "$b/CMakeCache.txt")
exe=/tmp/call_split-$(basename "$b")
nvcc -std=c++17 -O3 -arch=sm_90a $flags -Iinclude -Isrc tools/dev/probes/call_split.cu "$b/libmxfp4.a" \
  -lcublas -lcublasLt $blas -o "$exe" && "$exe" "$@"
