#!/usr/bin/env bash
# Session 47 call 2 (~4 minutes): the tree with tall-pair-nosplit applied (192 x 128 tiles and
# pairs without split-K code): the Gpu* suite and memcheck / racecheck / synccheck on
# GpuSanitize.* (it forces the pair and 192 x 128), then the workload bench default and
# --weights-static into $OUT/results/ (commit as bench/results/), and a path fp8 tune of M = 192-384
# shapes near 256x3072x1536 (item c). Logs in $OUT/logs.tgz.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call2.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
trap '(cd "$o" && tar czf logs.tgz logs && rm -rf logs); exit 124' TERM
san='--sanitizers memcheck,racecheck,synccheck'; [ -n "${NO_SAN:-}" ] && san=''  # NO_SAN=1: tests only
OUT=$o/logs/dc bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --no-bench > "$o/logs/tests.log" 2>&1
echo "tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED|rc=|SUMMARY" "$o/logs/tests.log" | tail -20
build-device/mxfp4 bench --out-dir "$o/results" > "$o/logs/bench-default.log" 2>&1; echo "default rc=$?"
build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/logs/bench-static.log" 2>&1; echo "static rc=$?"
grep -h geomean "$o"/results/*.md
# Then (less essential, so last): the sanitizers, and the tune below.
[ -n "$san" ] && { OUT=$o/logs/san bash scripts/device-check.sh --no-tests --no-bench $san > "$o/logs/sanitizers.log" 2>&1; echo "sanitizers rc=$? $((SECONDS-t0)) s"; grep -E "rc=|SUMMARY" "$o/logs/sanitizers.log" | tail -8; }
echo "total $((SECONDS-t0)) s"
[ -n "${NO_TUNE:-}" ] && { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); exit 0; }
# Item c's follow-up: does 64 x 128 with 8 warps (3% ahead at 256x3072x1536 in call 1) win a K range?
printf '256 3072 1024\n256 3072 2048\n256 2048 1536\n256 4096 1536\n192 3072 1536\n384 3072 1536\n256 3072 1536\n' > /tmp/tune-m256.txt
MXFP4_TUNE_CACHE=/tmp/tune.json timeout 150 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/tune-m256.txt > "$o/logs/tune-fp8-m256.log" 2>&1
echo "tune rc=$? total $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-fp8-m256.log"
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
