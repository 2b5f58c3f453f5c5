#!/usr/bin/env bash
# Session 41 call 1: path gemv with split-K clusters. Build; GPU tests (fast set + the sanitize
# case) and memcheck/racecheck on GpuSanitize.GemmEveryPathSmall (new gemv split configs);
# `mxfp4 tune` of tools/dev/shapes-gemv-split.txt with gemv and splitk candidates; an A/B of the
# unsplit gemv kernel (tree against HEAD's files in tools/dev/pending/base) on the gemv shapes.
# On an H200 also plan item w: the workload bench with and without weights_static and the
# K = 512 split tune.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
bench='--no-bench'
case $gpu in *H200*) bench='';; esac
printf '32 4096 512\n64 2880 512\n24 2880 512\n48 4096 512\n64 7168 512\n32 4096 1024\n' > /tmp/k512.txt
steps=(
  'timeout 150 build-device/mxfp4 tune --verbose --paths gemv,splitk --shapes tools/dev/shapes-gemv-split.txt > $o/logs/tune-gemv-split.log 2>&1; echo tune rc=$?; grep -B1 dispatcher $o/logs/tune-gemv-split.log'
  'printf "1 7168 2048\n1 2880 2880\n4 2880 512\n4 7168 2048\n8 7168 2048\n" > /tmp/gemv5.txt; OUT=$o timeout 170 tools/dev/ab.sh gemv /tmp/gemv5.txt 3 > /dev/null 2>&1; echo ab rc=$?; cat $o/logs/ab-gemv.txt'
)
if [ -z "$bench" ]; then
  steps+=(
    'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md'
    'MXFP4_TUNE_CACHE=/tmp/tune.json timeout 100 build-device/mxfp4 tune --verbose --paths splitk --shapes /tmp/k512.txt > $o/logs/tune-splitk-k512-h200.log 2>&1; echo tune rc=$?; grep -E "^ {1,5}[0-9]|dispatcher" $o/logs/tune-splitk-k512-h200.log'
  )
fi
tools/dev/device-steps.sh "--filter \"GpuSanitize.GemmEveryPathSmall:\$FAST\" --sanitizers memcheck,racecheck --sanitizer-filter GpuSanitize.GemmEveryPathSmall $bench" "${steps[@]}"
