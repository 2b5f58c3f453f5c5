#!/usr/bin/env bash
# Session 41 call 5: path fp8's split-K by bulk copy as well (fp8_splitk_reduce), on top of
# call 4's path splitk change. GPU tests (fast set, GpuFp8*, GpuSanitize*), memcheck and
# racecheck on the two sanitize cases with cluster splits, the workload bench of this tree with
# and without weights_static (the results to commit), then an A/B of path fp8's change alone
# against HEAD's two fp8 files (tools/dev/pending/base) on split-K fp8 shapes and controls.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
printf '128 2112 7168\n128 1024 8192\n96 4096 4096\n80 2880 6144\n256 3072 1536\n32 4096 512\n' > /tmp/fp8s.txt
tools/dev/device-steps.sh '--filter "GpuFp8*:GpuSanitize*:$FAST" --test-timeout 300 --sanitizers memcheck,racecheck --sanitizer-filter "GpuSanitize.GemmEveryPathSmall:GpuSanitize.Fp8ChainsOverSeveralChunks" --sanitizer-timeout 120' \
  'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md' \
  'OUT=$o timeout 200 tools/dev/ab.sh fp8copy /tmp/fp8s.txt 3 > /dev/null 2>&1; echo ab rc=$?; cat $o/logs/ab-fp8copy.txt'
