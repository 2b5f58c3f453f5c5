#!/usr/bin/env bash
# Run by tools/dev/pending/first-call.sh after its benches (~3 minutes): the Gpu* suite on the
# landed tree (session 46's call 1 ran it on the same code as a patched copy), then `mxfp4 tune --paths fp8` on the
# workload's path fp8 shapes below M = 1024: do the dispatcher's tiles still win now that the
# FIX kernels (one tile per CTA, no split-K) gained 0.3-0.4 us in call 1? A faster candidate
# there would be a rule change to make and bench next. Logs in $OUT/logs.tgz.
# Usage (repository root, on the device, after first-call.sh built build-device):
#   OUT=... bash tools/dev/pending/first-call-tests-tune.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
t0=$SECONDS
OUT=$o/logs/dc bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --no-bench > "$o/logs/tests.log" 2>&1
echo "tests rc=$? $((SECONDS-t0)) s"; tail -6 "$o/logs/tests.log"
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n' > /tmp/tune-fp8.txt
MXFP4_TUNE_CACHE=/tmp/tune.json timeout 240 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/tune-fp8.txt \
  > "$o/logs/tune-fp8.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"
grep -B1 "dispatcher's choice" "$o/logs/tune-fp8.log"
cd "$o" && tar czf logs.tgz logs && rm -rf logs
