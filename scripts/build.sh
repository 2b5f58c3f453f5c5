#!/usr/bin/env bash
# Configures and builds mxfp4 (library, `mxfp4` CLI, tests) with all cores.
# Usage: scripts/build.sh [BUILD_DIR (default: build)] [extra cmake -D options...]
# The CUDA backend is built when nvcc is found (PATH or /usr/local/cuda); -DMXFP4_CUDA=OFF
# forces a CPU-only build. Installs missing dependencies first (scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=build
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then build=$1; shift; fi

"$root/scripts/install-deps.sh" --if-missing --build-only

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
gen=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
cmake -S . -B "$build" ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$(nproc)"
