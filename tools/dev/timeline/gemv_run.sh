#!/usr/bin/env bash
# Path gemv's per-warp timelines in a CUDA graph's steady state (GPU machine; a measurement
# aid): copies the work tree to a scratch directory, instruments gemv's kernel there
# (gemv_instrument.py), builds the library and gemv_trace.cu, then runs /tmp/gemv_trace for
# every line of CASES ("M N K" for the dispatcher's choice, or "M N K block_n warps" for a
# forced path gemv configuration). The repository itself is never modified.
# BUILD_ONLY=1 stops after the build (a check without a GPU); CUDA_FLAGS="-D..." builds a variant;
# WEIGHTS_STATIC=1 traces calls with GemmOptions::weights_static (graph_trace.hpp).
# Usage: [CUDA_FLAGS=...] [WEIGHTS_STATIC=1] tools/dev/timeline/gemv_run.sh CASES_FILE [SCRATCH_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cases=$(realpath "$1")
# shellcheck source=tools/dev/timeline/scratch.sh
. "$root/tools/dev/timeline/scratch.sh"
scratch_copy "$root" "${2:-/tmp/mxfp4-gemv-timeline}"
python3 tools/dev/timeline/gemv_instrument.py src/cuda/gemm_gemv.cu
build_harness tools/dev/timeline/gemv_trace.cu /tmp/gemv_trace
run_cases "$cases" /tmp/gemv_trace
