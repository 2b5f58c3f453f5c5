#!/usr/bin/env bash
# Session 41 call 4: path splitk's cluster split-K by bulk copy (splitk_reduce_copy) instead of
# the pull, whose first cluster barrier's GPU-scope fence cost ~0.5 us (call 3). Fast GPU tests
# plus GpuSanitize.GemmEveryPathSmall, memcheck/racecheck/synccheck on it, then an A/B against
# HEAD's files (tools/dev/pending/base) on the cluster-split shapes and controls.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
printf '32 4096 512\n64 2880 512\n64 3072 1536\n24 2880 512\n48 4096 1024\n128 2880 512\n16 3072 1536\n128 2112 7168\n' > /tmp/copy.txt
tools/dev/device-steps.sh '--filter "GpuSanitize.GemmEveryPathSmall:$FAST" --sanitizers memcheck,racecheck,synccheck --sanitizer-filter GpuSanitize.GemmEveryPathSmall --no-bench' \
  'OUT=$o timeout 240 tools/dev/ab.sh copy /tmp/copy.txt 4 > /dev/null 2>&1; echo ab rc=$?; cat $o/logs/ab-copy.txt'
