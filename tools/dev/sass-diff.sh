#!/usr/bin/env bash
# Compares one CUDA translation unit's kernels between the working tree and a git revision
# without a GPU: ptxas's register and spill lines, and per kernel the SASS instruction count
# and whether the code up to the last tensor-core instruction changed (tools/dev/sass_regions.py).
# The CUDA toolkit here has no cuobjdump or nvdisasm; the script takes them from the PyPI
# wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (downloaded once into
# ~/.cache/mxfp4-sass; the network is needed the first time). Compile flags: CMakeLists.txt's
# CUDA ones that shape the SASS (sm_90a, -O3, -lineinfo), copied here; keep them in step. Session 49 used it for path fp8's epilogue: a check before a device
# call, not a substitute for the A/B.
# Usage (repository root): tools/dev/sass-diff.sh src/cuda/gemm_fp8.cu [REV (default HEAD)]
set -eu
cd "$(git rev-parse --show-toplevel)"
tu=${1:?usage: tools/dev/sass-diff.sh SRC.cu [REV]}
rev=${2:-HEAD}
cache=~/.cache/mxfp4-sass
tools=$cache/x/nvidia/cu13/bin
if [ ! -x "$tools/cuobjdump" ] || [ ! -x "$tools/nvdisasm" ]; then
  mkdir -p "$cache"
  python3 -m pip download --no-deps -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm -d "$cache"
  for w in "$cache"/nvidia_cuda_*.whl; do python3 -m zipfile -e "$w" "$cache/x"; done
  chmod +x "$tools"/*
fi
export PATH=$tools:$PATH
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base"
git archive "$rev" | tar xf - -C "$work/base"
compile() {  # ROOT NAME
  "$nvcc" -DMXFP4_WITH_CUDA=1 -DMXFP4_VERSION=\"sass-diff\" -I"$1/include" -I"$1/src" -O3 -DNDEBUG \
    --generate-code=arch=compute_90a,code=[sm_90a] -lineinfo --expt-relaxed-constexpr -std=c++17 \
    -Xptxas=-v,-warn-spills -x cu -c "$1/$tu" -o "$work/$2.o" 2> "$work/$2.ptxas"
  cuobjdump -sass "$work/$2.o" > "$work/$2.sass"
}
compile "$work/base" base &
compile "$PWD" new
wait
echo "== ptxas (base $rev -> tree): registers and spills that changed"
lines() { grep -E "Compiling|Used|spill" "$1" | sed 's/_GLOBAL__N__[0-9a-f]*_/_GLOBAL__N_/' | c++filt; }
diff <(lines "$work/base.ptxas") <(lines "$work/new.ptxas") || true
echo "== SASS per kernel (base -> tree)"
python3 tools/dev/sass_regions.py "$work/base.sass" "$work/new.sass"
