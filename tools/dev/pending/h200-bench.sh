#!/usr/bin/env bash
# The workload bench on an H200 only (bench/results/h200.md is session 36's code): build without
# tests, `mxfp4 bench` default then --weights-static into $OUT/results/ (commit as
# bench/results/h200{,-static}.*), then a path fp8 tune of three M = 256 shapes (the m256 rule
# of session 48, measured on an H100 only). Stops at once on any other GPU. ~2.5 minutes.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/h200-bench.sh
set -u
o=${OUT:?}; mkdir -p "$o/results"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/gpu0.txt" | grep -q H200 || { echo "not an H200: stop"; exit 2; }
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/build.log" 2>&1 || { tail -20 "$o/build.log"; exit 1; }
build-device/mxfp4 bench --out-dir "$o/results" > "$o/bench-default.log" 2>&1; echo "default rc=$?"
build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/bench-static.log" 2>&1; echo "static rc=$?"
grep -h geomean "$o"/results/*.md
printf '256 3072 1536\n256 2048 1536\n256 3072 2048\n' > /tmp/tune-m256.txt
MXFP4_TUNE_CACHE=/tmp/tune.json timeout 60 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/tune-m256.txt > "$o/tune-fp8-m256-h200.log" 2>&1
echo "tune rc=$?"; grep -B1 "dispatcher's choice" "$o/tune-fp8-m256-h200.log"
exit 0
