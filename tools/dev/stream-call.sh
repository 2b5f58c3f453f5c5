#!/usr/bin/env bash
# Session 35's first device call for path stream (docs/perf-notes.md "Session 35"): build,
# path stream's GPU tests, `mxfp4 tune --paths stream` over the M <= 64 workload shapes (each
# shape also times the dispatcher's own choice), then the whole workload bench with that tune
# cache (stream where it won the tune). Everything lands in one tarball under $OUT.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
final=${OUT:-$root/device-out}
work=$(mktemp -d)
OUT=$work scripts/device-check.sh --filter "${TESTS:-GpuGemm.StreamEvery*}" --test-timeout "${TEST_TIMEOUT:-120}" \
  --no-bench --tune tools/dev/shapes-stream-tune.txt --tune-paths stream --tune-timeout "${TUNE_TIMEOUT:-240}" \
  > "$work/device-check.log" 2>&1
tail -n 20 "$work/device-check.log"
mkdir -p "$work/tuned"
MXFP4_TUNE_CACHE="$root/build-device/tune.json" timeout "${BENCH_TIMEOUT:-150}" build-device/mxfp4 bench \
  --out-dir "$work/tuned" > "$work/bench-tuned.log" 2>&1
echo "bench rc=$?"
cp build-device/tune.json "$work/" 2>/dev/null
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ us|dispatcher" "$work/tune.log"
cat "$work"/tuned/*.md 2>/dev/null | cut -c1-200
mkdir -p "$final" && tar czf "$final/stream-call.tgz" -C "$work" .
