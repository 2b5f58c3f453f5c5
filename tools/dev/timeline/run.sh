#!/usr/bin/env bash
# Small-M kernel timelines (GPU machine; a measurement aid): copies the work tree to a scratch
# directory, instruments the small-M kernel there (instrument.py), builds the library and
# trace.cu, then runs /tmp/trace for every line of CASES ("M N K" for the dispatcher's choice,
# or "M N K splitk(0|1) block_n warps split_k"). The repository itself is never modified.
# NOCOMPUTE=1 also removes the MMA loop's body (the CTAs only wait for their stages): the
# timeline of the data alone. After the percentiles, trace.cu groups the CTAs by how many of
# them shared an SM (medians and maxima of data0, datalast and end per group).
# STEADY=1: the steady state of a CUDA graph instead of one cold call (instrument.py --steady,
# steady_trace.cu: per-stamp percentiles over the CTAs of the last calls, the period, the
# overlap with the previous call, and the quantizer's CTAs against the previous call's GEMM).
# BUILD_ONLY=1 stops after the build (a check without a GPU).
# CUDA_FLAGS="-D..." builds a variant.
# QSPIN_NS=N (with STEADY=1): the quantizer's CTAs spin N ns after their work (instrument.py
# --qspin-ns): its grid completes later while its trigger does not move.
# Usage: [NOCOMPUTE=1] [STEADY=1] [CUDA_FLAGS=...] tools/dev/timeline/run.sh CASES_FILE [SCRATCH_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cases=$(realpath "$1")
# shellcheck source=tools/dev/timeline/scratch.sh
. "$root/tools/dev/timeline/scratch.sh"
scratch_copy "$root" "${2:-/tmp/mxfp4-timeline}"
steady=()
harness=tools/dev/timeline/trace.cu
if [ "${STEADY:-0}" = 1 ]; then steady=(--steady); harness=tools/dev/timeline/steady_trace.cu; fi
quant=()
if [ "${STEADY:-0}" = 1 ]; then quant=(src/cuda/quantize.cu); fi  # the quantizer's CTAs too
if [ "${QSPIN_NS:-0}" != 0 ]; then steady+=(--qspin-ns "$QSPIN_NS"); fi
python3 tools/dev/timeline/instrument.py ${steady[@]+"${steady[@]}"} src/cuda/gemm_fused_kernel.cuh src/cuda/gemm_fused.cu \
  ${quant[@]+"${quant[@]}"}
if [ "${NOCOMPUTE:-0}" = 1 ]; then  # every chunk loop of the K loop (mma.sync and wgmma) stops at once
  grep -q '        if (c >= chunks) break;' src/cuda/gemm_fused_kernel.cuh
  sed -i 's/        if (c >= chunks) break;/        if (c >= chunks || p.M > 0) break;/' src/cuda/gemm_fused_kernel.cuh
fi
build_harness "$harness" /tmp/trace
run_cases "$cases" /tmp/trace
