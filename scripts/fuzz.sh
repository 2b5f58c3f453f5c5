#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (docs/hardening.md, "Fuzzing") with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in a separate CPU-only build folder, then runs
# each target for a bounded time, starting from its committed seed corpus fuzz/corpus/<target>/
# (read only: new inputs go to the work folder).
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (default 30)] [TARGET...]
#        targets: fuzz_npy fuzz_quantize fuzz_layouts fuzz_api_args (default: all)
# Env:   MXFP4_FUZZ_BUILD  build folder (default: build-fuzz)
#
# Exit status 1 when any target finds a failure; its input is kept as
# <build>/fuzz-work/<target>/crash-* (or leak-*, timeout-*, oom-*) and the report is printed.
# Reproduce with: <build>/fuzz/<target> <that file>. Installs clang and the sanitizer runtimes
# when missing (scripts/install-deps.sh --if-missing --fuzz).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=30
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then secs=$1; shift; fi
all_targets=(fuzz_npy fuzz_quantize fuzz_layouts fuzz_api_args)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (${all_targets[*]})" >&2; exit 2; }
done
build=${MXFP4_FUZZ_BUILD:-build-fuzz}

"$root/scripts/install-deps.sh" --if-missing --build-only --fuzz

gen=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
cmake -S . -B "$build" ${gen[@]+"${gen[@]}"} -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMXFP4_CUDA=OFF -DMXFP4_BUILD_TESTS=OFF -DMXFP4_BUILD_CLI=OFF -DMXFP4_BUILD_PYTHON=OFF \
  -DMXFP4_BUILD_FUZZERS=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

build_abs=$(cd "$build" && pwd)
failed=()
for t in "${targets[@]}"; do
  work="$build_abs/fuzz-work/$t"
  mkdir -p "$work/corpus"
  rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
  args=(-max_total_time="$secs" -timeout=30 -rss_limit_mb=3072 -max_len=4096 -print_final_stats=1
        -artifact_prefix="$work/")
  [ -f "fuzz/$t.dict" ] && args+=(-dict="fuzz/$t.dict")
  echo "== $t: ${secs}s from fuzz/corpus/$t ($(ls "fuzz/corpus/$t" | wc -l) corpus files)"
  rc=0
  # Sanitizers: abort on the first report (libFuzzer records the input), symbolize it.
  ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
    "$build_abs/fuzz/$t" "${args[@]}" "$work/corpus" "fuzz/corpus/$t" >"$work/log" 2>&1 || rc=$?
  grep -E "^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$work/log" | sed 's/^/   /' || true
  if [ $rc -ne 0 ]; then
    echo "fuzz.sh: $t FAILED (exit $rc); report:" >&2
    grep -v -E "^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|RELOAD)" "$work/log" | tail -n 60 >&2
    ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null | sed 's/^/   input: /' >&2 || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failures in ${failed[*]} (reproduce: $build_abs/fuzz/<target> <input>)" >&2
  exit 1
fi
echo "== fuzz.sh: ${#targets[@]} targets, ${secs}s each, no failure"
