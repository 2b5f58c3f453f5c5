#!/usr/bin/env bash
# Session 41 call 3: what the GPU-scope fence of the split-K reductions' first cluster barrier
# costs. The tree is built with -DMXFP4_EXP_CTA_FENCE=1 as its default (a measurement only);
# tools/dev/pending/base holds HEAD's files. Fast GPU tests on the variant, then an A/B on the
# cluster-split shapes (path splitk split 2 and 4, path fp8 split 3) and two controls.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
printf '32 4096 512\n64 2880 512\n64 3072 1536\n128 2112 7168\n16 3072 1536\n16 2112 7168\n64 7168 2048\n' > /tmp/ctaf.txt
tools/dev/device-steps.sh '--filter "GpuSanitize.GemmEveryPathSmall:$FAST" --no-bench' \
  'OUT=$o timeout 240 tools/dev/ab.sh ctafence /tmp/ctaf.txt 4 > /dev/null 2>&1; echo ab rc=$?; cat $o/logs/ab-ctafence.txt'
