#!/usr/bin/env bash
# The workload bench on an H200 only (bench/results/h200.md is session 36's code): build without
# tests, `mxfp4 bench` default then --weights-static into $OUT/results/ (commit as
# bench/results/h200{,-static}.*). Stops at once on any other GPU. ~2 minutes.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/h200-bench.sh
set -u
o=${OUT:?}; mkdir -p "$o/results"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/gpu0.txt" | grep -q H200 || { echo "not an H200: stop"; exit 2; }
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/build.log" 2>&1 || { tail -20 "$o/build.log"; exit 1; }
build-device/mxfp4 bench --out-dir "$o/results" > "$o/bench-default.log" 2>&1; echo "default rc=$?"
grep -h geomean "$o"/results/*.md
build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/bench-static.log" 2>&1; echo "static rc=$?"
grep -h geomean "$o"/results/*.md
