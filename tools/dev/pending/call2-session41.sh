#!/usr/bin/env bash
# Session 41 call 2: a tune of the workload shapes up to M = 1024 with every path (where the
# dispatcher's rules drifted from the kernels); on an H200 first plan item w (the workload
# bench with and without weights_static, path splitk's split 1 against 2 at K = 512).
set -u
o=${OUT:?}; mkdir -p "$o/logs"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
bench='--no-bench'
case $gpu in *H200*) bench='';; esac
printf '32 4096 512\n64 2880 512\n24 2880 512\n48 4096 512\n64 7168 512\n32 4096 1024\n' > /tmp/k512.txt
steps=()
if [ -z "$bench" ]; then
  steps+=(
    'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md'
    'MXFP4_TUNE_CACHE=/tmp/tune.json timeout 100 build-device/mxfp4 tune --verbose --paths splitk --shapes /tmp/k512.txt > $o/logs/tune-splitk-k512.log 2>&1; echo tune rc=$?; grep -B1 dispatcher $o/logs/tune-splitk-k512.log'
  )
fi
steps+=('MXFP4_TUNE_CACHE=/tmp/tune2.json timeout 300 build-device/mxfp4 tune --verbose --shapes tools/dev/shapes-workload-tune.txt > $o/logs/tune-workload.log 2>&1; echo tune rc=$?; grep -B1 dispatcher $o/logs/tune-workload.log')
tools/dev/device-steps.sh "--no-tests $bench" "${steps[@]}"
