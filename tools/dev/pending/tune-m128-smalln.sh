#!/usr/bin/env bash
# Session 54, call 2: does the small-M kernel (path splitk) beat path fp8 at 64 < M <= 128 with
# few tiles beyond K = 2048? Call 1's tune (K = 2048, N = 256-2048) had path splitk 8-57% ahead
# of the dispatcher's fp8 split-K for N <= 1984. Tunes paths fp8 and splitk at M = 72, 128 x
# N = 256-1984 x K = 3072, 4096, 7168, and N = 1024-2048 x K = 1024, 1536 (fp8_config_short_k).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/tune-m128-smalln.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$o/logs/build.log"; pack; exit 1; }
echo "build $((SECONDS-t0)) s"
for M in 72 128; do for K in 3072 4096 7168; do for N in 256 512 1024 1536 1984; do echo "$M $N $K"; done; done
  for K in 1024 1536; do for N in 1024 1536 2048; do echo "$M $N $K"; done; done; done > /tmp/t3.txt
MXFP4_TUNE_CACHE=/tmp/t3.json timeout 400 build-device/mxfp4 tune --verbose --paths fp8,splitk --shapes /tmp/t3.txt > "$o/logs/tune-m128-smalln-call2-session54.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"
grep -B1 "dispatcher's choice" "$o/logs/tune-m128-smalln-call2-session54.log" | grep -v "^--"
pack
