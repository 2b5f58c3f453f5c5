#!/usr/bin/env bash
# Session 35's second device call: is path stream slow because its shared-memory padding (or
# its size) keeps the next call's CTAs from being resident early (PDL)? Builds the default
# and -DMXFP4_EXP_STREAM_NOPAD=1, then `mxfp4 tune --paths stream` on the short-K shapes with
# each (the dispatcher's choice is timed in both). One tarball under $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
final=${OUT:-$root/device-out}
work=$(mktemp -d)
OUT=$work scripts/device-check.sh --no-tests --no-bench > "$work/device-check.log" 2>&1
tail -n 6 "$work/device-check.log"
cmake -S . -B build-nopad -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DCMAKE_CUDA_FLAGS=-DMXFP4_EXP_STREAM_NOPAD=1 > "$work/configure-nopad.log" 2>&1
cmake --build build-nopad -j "$(nproc)" --target mxfp4_cli > "$work/build-nopad.log" 2>&1 || cmake --build build-nopad -j "$(nproc)" >> "$work/build-nopad.log" 2>&1
echo "nopad build rc=$?"
shapes=$work/shapes.txt
printf '4 2880 512\n32 4096 512\n64 2880 512\n16 3072 1536\n1 2880 2880\n1 7168 2048\n' > "$shapes"
for b in build-device build-nopad; do
  MXFP4_TUNE_CACHE=$work/tune-$b.json timeout 120 "$b/mxfp4" tune --verbose --shapes "$shapes" --paths stream \
    > "$work/tune-$b.log" 2>&1
  echo "== $b"
  grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ us|dispatcher" "$work/tune-$b.log"
done
mkdir -p "$final" && tar czf "$final/stream-call2.tgz" -C "$work" .
