#!/usr/bin/env bash
# The one script for the GPU machine (CUDA, cmake, ninja, python3; no network, no
# gtest/CLI11/nlohmann packages: it builds against .deps/, made by scripts/prepare-deps.sh on
# a networked machine and carried along). Builds build-device with all cores for sm_90a,
# runs ctest (or the gtest binary with --filter), optionally compute-sanitizer memcheck on the
# GPU tests, then `mxfp4 bench --out-dir bench/results`. Logs and bench/results/* go to $OUT
# (or ./device-out). The summary is printed last.
# Usage: scripts/device-check.sh [--no-tests] [--no-bench] [--sanitizer] [--filter GTEST_FILTER]
#                                [--bench-args "ARGS"] [--tune SHAPES_FILE] [--jobs N]
# --tune runs `mxfp4 tune --verbose` on SHAPES_FILE after the bench (cache in build-device/,
# every candidate's time in tune.log); the bench itself always uses the dispatcher.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
tests=1 bench=1 sanitizer=0 filter='' bench_args='' tune='' jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --sanitizer) sanitizer=1 ;;
    --filter) filter=$2; shift ;;
    --bench-args) bench_args=$2; shift ;;
    --tune) tune=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "device-check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

summary=()
failed=0
# step NAME CMD...: runs CMD with its output in $out/NAME.log, shows the log's tail, records rc.
step() {
  local name=$1; shift
  echo "== $name: $*"
  local t0=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-10s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$out/$name.log")")
  tail -n 25 "$out/$name.log"
  [ $rc -eq 0 ] || failed=1
  return $rc
}
finish() {
  echo "== summary"
  printf '%s\n' "${summary[@]}"
  if [ -f "$out/h200.md" ] || compgen -G "$out/*.md" >/dev/null; then
    for f in "$out"/*.md; do grep -E '^\| geomean' "$f" | sed "s|^|$(basename "$f"): |"; done
  fi
  [ $failed = 0 ] && echo "device-check: OK" || echo "device-check: FAILED"
  exit $failed
}

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv; nvcc --version | tail -n 2; } \
  > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
if [ ! -d .deps/include/CLI ] && [ ! -d /usr/include/CLI ]; then
  echo "device-check: warning: neither CLI11 nor .deps/ found (run scripts/prepare-deps.sh and carry .deps)"
fi
gen=()
if [ ! -f build-device/CMakeCache.txt ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
step configure cmake -S . -B build-device ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON || finish
step build cmake --build build-device -j "$jobs" || finish

if [ $tests = 1 ]; then
  if [ -n "$filter" ]; then
    step tests timeout 300 build-device/mxfp4_tests --gtest_filter="$filter" --gtest_brief=1
  else
    exclude=()
    # The CLI's pytest suite needs numpy + pytest; leave it out (and say so) where they are missing.
    if ! python3 -c 'import numpy, pytest' >/dev/null 2>&1; then
      exclude=(-E cli_pytest); summary+=("cli_pytest skipped: python3 lacks numpy/pytest")
    fi
    step ctest ctest --test-dir build-device --output-on-failure -j 8 --timeout 300 ${exclude[@]+"${exclude[@]}"}
  fi
fi
if [ $sanitizer = 1 ]; then
  # One small case per kernel path under memcheck.
  step sanitizer compute-sanitizer --tool memcheck --error-exitcode 9 build-device/mxfp4_tests \
    --gtest_filter="${filter:-GpuGemm.K10K11NTailsAndSmallN:GpuGemm.K08*:GpuQuantize.Bug*:GpuPrepack.*:GpuDequantize.*:GpuLayouts.*}"
fi
if [ $bench = 1 ]; then
  # shellcheck disable=SC2086
  step bench timeout 300 build-device/mxfp4 bench --out-dir bench/results $bench_args
  cp bench/results/* "$out/" 2>/dev/null
fi
if [ -n "$tune" ]; then
  step tune timeout 240 env MXFP4_TUNE_CACHE="$root/build-device/tune.json" build-device/mxfp4 tune --verbose --shapes "$tune"
fi
finish
