#!/usr/bin/env bash
# The one script for the GPU machine (CUDA, cmake, ninja, python3; no network, no
# gtest/CLI11/nlohmann packages: it builds against .deps/, made by scripts/prepare-deps.sh on
# a networked machine and carried along). Builds build-device with all cores for sm_90a,
# runs ctest (or the gtest binary with --filter), optionally compute-sanitizer tools on small
# GPU test cases, then `mxfp4 bench --out-dir bench/results`. Logs and bench/results/* go to
# $OUT (or ./device-out); all sanitizer output goes to the one file $OUT/sanitizers.log. The
# summary is printed last.
# Usage: scripts/device-check.sh [--no-tests] [--no-bench] [--filter GTEST_FILTER]
#          [--test-timeout SECONDS] [--shards N] [--sanitizer | --sanitizers memcheck,racecheck,initcheck,synccheck | --sanitizers all]
#          [--sanitizer-filter GTEST_FILTER] [--sanitizer-timeout SECONDS] [--bench-args "ARGS"]
#          [--tune SHAPES_FILE] [--tune-paths LIST] [--tune-timeout S] [--timeline CASES_FILE] [--jobs N]
#   --bench-args        arguments for `mxfp4 bench` instead of the plain workload bench (which then
#                       does not run), e.g. "--shapes FILE --flagged-weight-rows 16 --no-baselines"
#   --test-timeout      limit of the --filter test process in seconds (default 480), so that a
#                       hang in untested code does not use up the device call
#   --filter            gtest filter for the test step (default: all of ctest; one process, 480 s at
#                       most); not the sanitizers
#   --shards N          with --filter: N gtest processes at once (GTEST_TOTAL_SHARDS; the CPU oracle
#                       is most of the time: 'Gpu*' took 38 s in 4 on an H100, session 43)
#   --sanitizer         memcheck only (same as --sanitizers memcheck)
#   --sanitizers LIST   each tool once over its default filter: memcheck over one small case per
#                       kernel path plus the canary/alignment tests, the others over GpuSanitize.*
#   --sanitizer-filter  one gtest filter for every tool instead of the defaults
#   --sanitizer-timeout limit per tool (default 240 s; rc 124 when hit)
#   --tune-paths        with --tune: only these paths' candidates (`mxfp4 tune --paths`, e.g.
#                       fused,splitk)
#   --tune-timeout      limit of the tune step in seconds (default 240)
#   --tune              runs `mxfp4 tune --verbose` on SHAPES_FILE after the bench (cache in
#                       build-device/, every candidate's time in tune.log); the bench itself
#                       always uses the dispatcher
#   --timeline          last, the small-M kernel's per-CTA timelines of CASES_FILE
#                       (tools/dev/timeline/run.sh), with and without the MMA loop:
#                       timeline.log and timeline-data.log
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
tests=1 test_timeout=480 shards=1 bench=1 sanitizers='' san_filter='' san_timeout=240 filter='' bench_args='' tune='' tune_paths='' tune_timeout=240 timeline='' jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --no-tests) tests=0 ;;
    --test-timeout) test_timeout=$2; shift ;;
    --shards) shards=$2; shift ;;
    --no-bench) bench=0 ;;
    --sanitizer) sanitizers=memcheck ;;
    --sanitizers) sanitizers=$2; shift ;;
    --sanitizer-filter) san_filter=$2; shift ;;
    --sanitizer-timeout) san_timeout=$2; shift ;;
    --filter) filter=$2; shift ;;
    --bench-args) bench_args=$2; shift ;;
    --tune) tune=$2; shift ;;
    --tune-paths) tune_paths=$2; shift ;;
    --tune-timeout) tune_timeout=$2; shift ;;
    --timeline) timeline=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "device-check.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

source "$root/scripts/step.sh"
finish() {
  echo "== summary"
  printf '%s\n' "${summary[@]}"
  if [ -f "$out/h200.md" ] || compgen -G "$out/*.md" >/dev/null; then
    for f in "$out"/*.md; do grep -E '^\| geomean' "$f" | sed "s|^|$(basename "$f"): |"; done
  fi
  if [ -f "$out/sanitizers.log" ]; then
    echo "== sanitizer summaries ($out/sanitizers.log)"
    grep -E '^(===== [a-z]+ rc=|========= (ERROR|RACECHECK|LEAK) SUMMARY)' "$out/sanitizers.log"
  fi
  [ $failed = 0 ] && echo "device-check: OK" || echo "device-check: FAILED"
  exit $failed
}

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
    if [ "$shards" -gt 1 ]; then
      # Each shard's output to its own file (the step's log gets them in order afterwards).
      run_shards() {
        local i rc=0
        for i in $(seq 0 $((shards - 1))); do
          GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "$test_timeout" \
            build-device/mxfp4_tests --gtest_filter="$filter" --gtest_brief=1 > "$out/tests-shard$i.log" 2>&1 &
        done
        for i in $(seq 0 $((shards - 1))); do wait -n || rc=1; done
        cat "$out"/tests-shard*.log && rm -f "$out"/tests-shard*.log
        return $rc
      }
      step tests run_shards
    else
      step tests timeout "$test_timeout" build-device/mxfp4_tests --gtest_filter="$filter" --gtest_brief=1
    fi
  else
    exclude=()
    # The CLI's pytest suite needs numpy + pytest; leave it out (and say so) where they are missing.
    if ! python3 -c 'import numpy, pytest' >/dev/null 2>&1; then
      exclude=(-E cli_pytest); summary+=("cli_pytest skipped: python3 lacks numpy/pytest")
    fi
    step ctest ctest --test-dir build-device --output-on-failure -j 8 --timeout 300 ${exclude[@]+"${exclude[@]}"}
  fi
fi
if [ -n "$sanitizers" ]; then
  [ "$sanitizers" = all ] && sanitizers=memcheck,racecheck,initcheck,synccheck
  san=$(command -v compute-sanitizer || true)
  for c in "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/compute-sanitizer" \
           /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    [ -z "$san" ] && [ -x "$c" ] && san=$c
  done
  # One small case per kernel path: fused, splitk (+ the activation pre-quantizer), tiled,
  # quantize, dequantize, the layout converters, prepack, prepack_dense, unpack.
  small='GpuSanitize.*'
  mem_filter="GpuSanitize.*:GpuCanary.*:GpuAlignment.*:GpuGemm.K10K11NTailsAndSmallN:GpuGemm.K08*:GpuQuantize.Bug*"
  mem_filter+=":GpuPrepack.*:GpuDequantize.*:GpuLayouts.*"
  : > "$out/sanitizers.log"
  IFS=, read -r -a tools <<< "$sanitizers"
  for tool in "${tools[@]}"; do
    case "$tool" in
      memcheck) f=${san_filter:-$mem_filter} ;;
      # racecheck also over the canary's GEMMs: its K = 4096 shape wraps path fp8's stage ring
      # (session 9 found a release-order report there that GpuSanitize's K = 320 never reaches).
      racecheck) f=${san_filter:-$small:GpuCanary.GemmEveryPathWritesOnlyInsideC} ;;
      initcheck|synccheck) f=${san_filter:-$small} ;;
      *) echo "device-check.sh: unknown sanitizer tool '$tool'" >&2; summary+=("sanitizer $tool: unknown tool"); failed=1; continue ;;
    esac
    if [ -z "$san" ]; then
      summary+=("sanitizer $tool: compute-sanitizer not found"); failed=1; continue
    fi
    # Every tool's output is appended to the one log (the device returns few files); a header
    # and a result line frame each section.
    echo "== sanitizer $tool: $f"
    echo "===== compute-sanitizer --tool $tool, filter $f" >> "$out/sanitizers.log"
    t0=$SECONDS
    timeout -k 10 "$san_timeout" "$san" --tool "$tool" --error-exitcode 9 --print-limit 20 \
      build-device/mxfp4_tests --gtest_filter="$f" --gtest_brief=1 >> "$out/sanitizers.log" 2>&1
    rc=$?
    echo "===== $tool rc=$rc ($((SECONDS - t0)) s; 9: the tool reported errors, 1: a test failed, 124: timed out)" \
      >> "$out/sanitizers.log"
    summary+=("$(printf '%-13s rc=%-3s %4ss  %s' "san:$tool" "$rc" "$((SECONDS - t0))" "$out/sanitizers.log")")
    [ $rc -eq 0 ] || failed=1
  done
  tail -n 40 "$out/sanitizers.log"
fi
if [ $bench = 1 ]; then
  # shellcheck disable=SC2086
  # Into a fresh folder, so that $out holds only what this run wrote (session 14: with
  # --bench-args the committed h200.md was copied along and read as a fresh result).
  bdir=$(mktemp -d)
  step bench timeout 300 build-device/mxfp4 bench --out-dir "$bdir" $bench_args
  cp "$bdir"/* "$out/" 2>/dev/null
  cp "$bdir"/* bench/results/ 2>/dev/null
fi
if [ -n "$tune" ]; then
  step tune timeout "$tune_timeout" env MXFP4_TUNE_CACHE="$root/build-device/tune.json" build-device/mxfp4 tune --verbose --shapes "$tune" \
    ${tune_paths:+--paths "$tune_paths"}
fi
if [ -n "$timeline" ]; then
  step timeline timeout 200 bash tools/dev/timeline/run.sh "$timeline"
  step timeline-data timeout 200 env NOCOMPUTE=1 bash tools/dev/timeline/run.sh "$timeline"
fi
finish
