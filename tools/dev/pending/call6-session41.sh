#!/usr/bin/env bash
# Session 41 call 6 (final code: path splitk's split-K by bulk copy; path fp8's version was
# rejected in call 5): the workload test over every path and the GpuSanitize cases, then the
# workload bench with and without weights_static (bench/results to commit).
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
tools/dev/device-steps.sh '--filter "GpuGemm.WorkloadShapesEveryPathWithinContract:GpuSanitize*:GpuGemm.ClusterSplitKEverySplitAndTokenCount" --test-timeout 260' \
  'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md'
