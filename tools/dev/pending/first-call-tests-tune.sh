#!/usr/bin/env bash
# Run by tools/dev/pending/first-call.sh after its benches (~3 minutes): the Gpu* suite on the
# landed tree (session 46's call 1 ran it on the same code as a patched copy), then `mxfp4 tune --paths fp8` on the
# workload's path fp8 shapes below M = 1024: do the dispatcher's tiles still win now that the
# FIX kernels (one tile per CTA, no split-K) gained 0.3-0.4 us in call 1? A faster candidate
# there would be a rule change to make and bench next. Then plan item d's A/B (after
# tools/dev/pending/prep-first-call.sh here). Logs in $OUT/logs.tgz.
# Usage (repository root, on the device, after first-call.sh built build-device):
#   OUT=... bash tools/dev/pending/first-call-tests-tune.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
t0=$SECONDS
# Plan item d's base (tools/dev/pending/base/, written here by prep-first-call.sh) builds meanwhile.
ab=0; [ -f tools/dev/pending/base/src/cuda/gemm_fp8_kernel.cuh ] && ab=1
printf '4096 7168 2048\n8192 8192 8192\n1024 7168 2048\n4 2880 512\n' > /tmp/ab-tall.txt
[ $ab = 1 ] && { OUT=$o AB_BUILD_ONLY=1 tools/dev/ab.sh tallnosplit /tmp/ab-tall.txt 1 > "$o/logs/ab-build.txt" 2>&1 & }
OUT=$o/logs/dc bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --no-bench > "$o/logs/tests.log" 2>&1
echo "tests rc=$? $((SECONDS-t0)) s"; tail -6 "$o/logs/tests.log"
wait
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n' > /tmp/tune-fp8.txt
MXFP4_TUNE_CACHE=/tmp/tune.json timeout 240 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/tune-fp8.txt \
  > "$o/logs/tune-fp8.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"
grep -B1 "dispatcher's choice" "$o/logs/tune-fp8.log"
# Plan item d: 192 x 128 tiles and pairs without split-K code (tools/dev/pending/tall-pair-nosplit.patch)
# against the tree; new - base positive = the patch faster. 1024 (128 x 128) and 4x2880x512 are controls.
if [ $ab = 1 ]; then
  AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh tallnosplit /tmp/ab-tall.txt 6
  echo "ab rc=$? $((SECONDS-t0)) s"
else
  echo "no tools/dev/pending/base/: run tools/dev/pending/prep-first-call.sh here first (item d's A/B skipped)"
fi
cd "$o" && tar czf logs.tgz logs && rm -rf logs
