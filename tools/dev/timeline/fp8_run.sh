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
# shellcheck source=tools/dev/timeline/scratch.sh
. "$root/tools/dev/timeline/scratch.sh"
scratch_copy "$root" "${2:-/tmp/mxfp4-fp8-timeline}"
python3 tools/dev/timeline/fp8_instrument.py --ctas "${CTAS:-8}" --iters "${ITERS:-512}" --part "${PART:-3}" \
  src/cuda/gemm_fp8_kernel.cuh src/cuda/gemm_fp8.cu
build_harness tools/dev/timeline/fp8_trace.cu /tmp/fp8_trace
run_cases "$cases" /tmp/fp8_trace
