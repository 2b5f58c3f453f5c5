#!/usr/bin/env bash
# A second build of the same tree with extra CUDA flags (a measurement aid for one device call:
# e.g. an #ifdef'd experiment next to the default build), then its bench and call_split probe.
# Logs go to $OUT/logs/NAME-*.
# With TESTS=GTEST_FILTER it first builds and runs the variant's GPU tests (stopped after
# TEST_TIMEOUT seconds, default 150: a hung variant must not use up the device call), and with
# SANITIZE=GTEST_FILTER racecheck, synccheck and memcheck over that filter; the bench runs only if they pass.
# Usage (from the repository root, after scripts/device-check.sh, e.g. as an extra command of
#   tools/dev/device-steps.sh): [TESTS=F] [SANITIZE=F] tools/dev/variant.sh NAME "CUDA_FLAGS" [M N K ...]
set -u
name=$1 flags=$2
shift 2
o=${OUT:?set OUT}/logs
mkdir -p "$o"
b=build-$name
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DCMAKE_CUDA_FLAGS="$flags" > "$o/$name-build.log" 2>&1 &&
  cmake --build "$b" --target mxfp4_cli -j "$(nproc)" >> "$o/$name-build.log" 2>&1 || { echo "$name: build failed"; tail -20 "$o/$name-build.log"; exit 1; }
if [ -n "${TESTS:-}" ]; then
  cmake --build "$b" --target mxfp4_tests -j "$(nproc)" >> "$o/$name-build.log" 2>&1 || { echo "$name: test build failed"; exit 1; }
  timeout "${TEST_TIMEOUT:-150}" "$b/mxfp4_tests" --gtest_filter="$TESTS" --gtest_brief=1 > "$o/$name-tests.log" 2>&1
  rc=$?; echo "$name: tests rc=$rc"; tail -n 5 "$o/$name-tests.log"; [ $rc = 0 ] || exit 1
fi
if [ -n "${SANITIZE:-}" ]; then
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in racecheck synccheck memcheck; do
    timeout 240 "$san" --tool "$tool" --error-exitcode 9 "$b/mxfp4_tests" --gtest_filter="$SANITIZE" \
      --gtest_brief=1 > "$o/$name-$tool.log" 2>&1
    rc=$?; echo "$name: $tool rc=$rc"; grep -E "SUMMARY" "$o/$name-$tool.log" | tail -n 1; [ $rc = 0 ] || exit 1
  done
fi
"$b/mxfp4" bench --out-dir "/tmp/$name-results" > "$o/$name-bench.log" 2>&1
for f in "/tmp/$name-results"/*.md; do cp "$f" "$o/$name-$(basename "$f")"; done 2>/dev/null  # h200.md, or the GPU's name
grep -E '^\| geomean' "$o/$name"-*.md | sed "s/^/$name: /"
if [ $# -gt 0 ]; then
  tools/dev/call-split.sh "$b" "$flags" "$@" > "$o/$name-call_split.log" 2>&1
  cat "$o/$name-call_split.log"
fi
