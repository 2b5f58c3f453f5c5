#!/usr/bin/env bash
# Session 39 call 3 (plan item z): path gemv's steady timelines with per-batch stamps (batch1,
# batch2, copied: gemv_instrument.py), default and --weights-static, then ncu source counters
# of both kernels at 1x7168x2048 (stall reasons per SASS line).
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests --no-bench' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 tools/dev/timeline/gemv_run.sh tools/dev/timeline/cases-gemv.txt > $OUT/logs/tl-gemv-default.log 2>&1; echo "tl default rc=$?"
grep -v '^#' tools/dev/timeline/cases-gemv.txt | while read -r l; do [ -z "$l" ] && continue; echo "== $l"; \
  WEIGHTS_STATIC=1 timeout 60 /tmp/gemv_trace $l; done > $OUT/logs/tl-gemv-static.log 2>&1
echo "tl static done"
grep -E "^==|graph:|^(waited|synced|batch|copied|loopend|end) " $OUT/logs/tl-gemv-default.log $OUT/logs/tl-gemv-static.log
mkdir -p $OUT/ncu
timeout 120 tools/dev/ncu-kernel.sh "1 7168 2048" gemv_kernel $OUT/ncu/gemv-static --weights-static > $OUT/logs/ncu-static.log 2>&1; echo "ncu static rc=$?"
timeout 120 tools/dev/ncu-kernel.sh "1 7168 2048" gemv_kernel $OUT/ncu/gemv-default > $OUT/logs/ncu-default.log 2>&1; echo "ncu default rc=$?"
for p in static default; do echo "== $p"; python3 tools/dev/ncu-regions.py $OUT/ncu/gemv-$p-source.csv 100 | head -40; \
  grep -E "Duration|DRAM Throughput|Issue Slots" $OUT/ncu/gemv-$p-details.txt | head -4; done
rm -f $OUT/ncu/*.ncu-rep
tar czf $R/out.tgz -C /tmp o
