#!/usr/bin/env bash
# The main job: build, then benchmark the GEMM on bench/shapes.txt with `mxfp4 bench`
# (the GPU when one is present, else the CPU) and write bench/results/<device>.{json,md}.
# Usage: scripts/run-bench.sh [mxfp4 bench options, e.g. --shapes FILE --backend cpu
#          --out-dir DIR (default bench/results)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${MXFP4_BUILD_DIR:-build}
"$root/scripts/build.sh" "$build"
out=(--out-dir "$root/bench/results")
for a in "$@"; do
  case "$a" in --out-dir|--out-dir=*) out=() ;; esac  # the caller's own --out-dir replaces ours
done
exec "$build/mxfp4" bench ${out[@]+"${out[@]}"} "$@"
