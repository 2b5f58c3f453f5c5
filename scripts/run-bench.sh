#!/usr/bin/env bash
# The main job: build, then benchmark the GEMM on bench/shapes.txt with `mxfp4 bench`
# (the GPU when one is present, else the CPU) and write bench/results/<device>.{json,md}.
# Usage: scripts/run-bench.sh [mxfp4 bench options, e.g. --shapes FILE --backend cpu]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${MXFP4_BUILD_DIR:-build}
"$root/scripts/build.sh" "$build"
exec "$build/mxfp4" bench --out-dir "$root/bench/results" "$@"
