#!/usr/bin/env bash
# Session 54, call 4: two tunes. (1) M = 192-384 with few 64 x 64 tiles (<= 64), paths fp8 and
# splitk: `mxfp4 tune` now offers the small-M kernel there (it beat path fp8 by 5-57% at
# M <= 128 with few tiles). (2) 64 < M <= 128 with 24-56 tiles at K = 5120 and 7168, where
# mid_m_small_m_wins keeps path fp8 (call 3's edges: 20 tiles won there, 32 lost at K = 6144).
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/call4-s54.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$o/logs/build.log"; pack; exit 1; }
echo "build $((SECONDS-t0)) s"
for M in 192 256 384; do for K in 1024 2048 4096 7168; do for N in 256 512 1024; do echo "$M $N $K"; done; done; done > /tmp/t5.txt
MXFP4_TUNE_CACHE=/tmp/t5.json timeout 250 build-device/mxfp4 tune --verbose --paths fp8,splitk --shapes /tmp/t5.txt > "$o/logs/tune-m256-fewtiles-call4-session54.log" 2>&1
echo "tune 1 rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-m256-fewtiles-call4-session54.log" | grep -v "^--"
for M in 72 128; do for K in 5120 7168; do for N in 768 960 1536 1792; do echo "$M $N $K"; done; done; done > /tmp/t6.txt
MXFP4_TUNE_CACHE=/tmp/t6.json timeout 150 build-device/mxfp4 tune --verbose --paths fp8,splitk --shapes /tmp/t6.txt > "$o/logs/tune-m128-longk-call4-session54.log" 2>&1
echo "tune 2 rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-m128-longk-call4-session54.log" | grep -v "^--"
pack
