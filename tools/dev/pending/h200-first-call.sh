#!/usr/bin/env bash
# Plan item w (docs/perf-notes.md, "Plan for the next session"), written at the end of session 40
# for the first device call that lands on an H200 (run it only there: `nvidia-smi` must say H200):
# the whole GPU suite is not run (the fast set is), then the workload bench with and without
# GemmOptions::weights_static (bench/results/h200.md and h200-static.md to commit), a tune of
# gemv's per-CTA limit shapes and of path splitk's split 1 against split 2 at K = 512 (the H100
# preferred split 1 there, session 29's H200 tune split 2), and the bench again with that tune
# cache (a preview of what a rule change would give); last, a path fp8 tune of six M = 256
# shapes (session 48-49's rule for few-tile M > 128, measured on an H100 only: K >= 768, 64 x
# 128 only where N % 128 == 0), three of them at its new edges. About 5 minutes.
# Usage (repository root, on the device): OUT=... bash tools/dev/pending/h200-first-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: stop"; exit 2; }
printf '32 4096 512\n64 2880 512\n24 2880 512\n48 4096 512\n64 7168 512\n32 4096 1024\n' > /tmp/k512.txt
printf '256 3072 1536\n256 2048 1536\n256 3072 2048\n256 3072 768\n256 2048 768\n256 2880 1024\n' > /tmp/m256.txt
tools/dev/device-steps.sh '--filter "$FAST"' \
  'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md' \
  'MXFP4_TUNE_CACHE=/tmp/tune.json timeout 240 build-device/mxfp4 tune --verbose --paths gemv,splitk --shapes tools/dev/shapes-gemv-limit.txt > $o/logs/tune-gemv-limit-h200.log 2>&1; echo tune rc=$?' \
  'MXFP4_TUNE_CACHE=/tmp/tune.json timeout 240 build-device/mxfp4 tune --verbose --paths splitk --shapes /tmp/k512.txt > $o/logs/tune-splitk-k512-h200.log 2>&1; echo tune rc=$?; grep -E "^ {1,5}[0-9]" $o/logs/tune-splitk-k512-h200.log' \
  'MXFP4_TUNE_CACHE=/tmp/tune.json build-device/mxfp4 bench --out-dir /tmp/r-tuned > $o/logs/bench-tuned.log 2>&1; cp /tmp/r-tuned/*.md $o/logs/bench-tuned-h200.md; grep geomean /tmp/r-tuned/*.md' \
  'MXFP4_TUNE_CACHE=/tmp/tune-m256.json timeout 90 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/m256.txt > $o/logs/tune-fp8-m256-h200.log 2>&1; echo tune rc=$?; grep -B1 "dispatcher'"'"'s choice" $o/logs/tune-fp8-m256-h200.log'
