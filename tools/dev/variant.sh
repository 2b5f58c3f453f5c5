#!/usr/bin/env bash
# A second build of the same tree with extra CUDA flags (a measurement aid for one device call:
# e.g. an #ifdef'd experiment next to the default build), then its bench and call_split probe.
# Logs go to $OUT/logs/NAME-*.
# Usage (from the repository root, after scripts/device-check.sh, e.g. as an extra command of
#   tools/dev/device-steps.sh): tools/dev/variant.sh NAME "CUDA_FLAGS" [M N K ...]
set -u
name=$1 flags=$2
shift 2
o=${OUT:?set OUT}/logs
mkdir -p "$o"
b=build-$name
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DCMAKE_CUDA_FLAGS="$flags" > "$o/$name-build.log" 2>&1 &&
  cmake --build "$b" --target mxfp4_cli -j "$(nproc)" >> "$o/$name-build.log" 2>&1 || { echo "$name: build failed"; tail -20 "$o/$name-build.log"; exit 1; }
"$b/mxfp4" bench --out-dir "/tmp/$name-results" > "$o/$name-bench.log" 2>&1
cp "/tmp/$name-results/h200.md" "$o/$name-h200.md" 2>/dev/null
grep -E '^\| geomean' "$o/$name-h200.md" | sed "s/^/$name: /"
if [ $# -gt 0 ]; then
  tools/dev/call-split.sh "$b" "$flags" "$@" > "$o/$name-call_split.log" 2>&1
  cat "$o/$name-call_split.log"
fi
