#!/usr/bin/env bash
# Session 40 call 3: path gemv with 4 and 8 token tiles (M <= 64): GPU tests, memcheck and
# racecheck on GpuSanitize.GemmEveryPathSmall, the default bench (dispatcher unchanged), a
# tune of tools/dev/shapes-gemv-wide.txt, and the bench again with that tune cache (preview).
set -u
o=${OUT:?}; mkdir -p "$o/logs"
tools/dev/device-steps.sh '--filter "GpuGemm*:GpuSanitize.GemmEveryPathSmall:GpuConcurrency*-GpuGemm.WorkloadShapesEveryPathWithinContract" --sanitizers memcheck,racecheck --sanitizer-filter GpuSanitize.GemmEveryPathSmall' \
  'MXFP4_TUNE_CACHE=/tmp/tune.json timeout 300 build-device/mxfp4 tune --verbose --paths gemv,splitk --shapes tools/dev/shapes-gemv-wide.txt > $o/logs/tune-gemv-wide.log 2>&1; echo tune rc=$?; grep -E "^ {1,5}[0-9]" $o/logs/tune-gemv-wide.log' \
  'MXFP4_TUNE_CACHE=/tmp/tune.json build-device/mxfp4 bench --out-dir /tmp/r-tuned > $o/logs/bench-tuned.log 2>&1; cp /tmp/r-tuned/*.md $o/logs/tuned-bench.md; grep -E "^\| (32|64) \| (4096|2880) \| 512|geomean" /tmp/r-tuned/*.md'
