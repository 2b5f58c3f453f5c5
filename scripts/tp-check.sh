#!/usr/bin/env bash
# Tensor-parallel check on a machine with 2 GPUs (no network needed; needs CUDA, cmake, python3
# with torch (CUDA, NCCL), numpy, ml_dtypes, pytest and nanobind). Builds the Python extension
# with the CUDA backend in build-tp-device/ (sm_90a), then
#   1. pytest on the fp32-output GEMM and the tensor-parallel tests, on the GPU where they have
#      CUDA cases (tests/python/test_py_gemm_f32.py, test_py_tp.py, test_py_tp_dist.py: its gloo
#      case runs 2 CPU processes);
#   2. torchrun --nproc_per_node=2 tests/python/tp_worker.py --backend nccl: one GPU per rank,
#      column-/row-parallel layers against the single-process unsharded layer and the exact
#      reference (spec §3's bound, plus the all-reduce's fp32 additions for row-parallel).
# NCCL_NVLS_ENABLE=0 (no NVLink SHARP in-switch reductions). Logs go to $OUT (or ./device-out).
# Usage: scripts/tp-check.sh [--seed N] [--jobs N]      (seed: the worker's weights and inputs)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
seed=$(( $(date +%s) % 1000000 )) jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "tp-check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=1
source "$root/scripts/step.sh"
finish() {
  echo "== summary (worker seed $seed)"
  printf '%s\n' "${summary[@]}"
  [ $failed = 0 ] && echo "tp-check: OK" || echo "tp-check: FAILED"
  exit $failed
}

nvidia-smi --query-gpu=index,name,memory.total --format=csv > "$out/tp-gpus.txt" 2>&1; cat "$out/tp-gpus.txt"
gen=()
if [ ! -f build-tp-device/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
step tp-configure cmake -S . -B build-tp-device ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON -DMXFP4_BUILD_PYTHON=ON -DMXFP4_BUILD_TESTS=OFF \
  -DMXFP4_BUILD_CLI=OFF || finish
step tp-build cmake --build build-tp-device -j "$jobs" --target _C || finish
export MXFP4_PYTHON_BUILD="$root/build-tp-device/python"
step tp-pytest timeout 900 python3 -m pytest -q -rs -k "not nccl" tests/python/test_py_gemm_f32.py \
  tests/python/test_py_tp.py tests/python/test_py_tp_dist.py
step tp-nccl timeout 600 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  tests/python/tp_worker.py --backend nccl --seed "$seed"
finish
