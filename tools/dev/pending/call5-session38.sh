#!/usr/bin/env bash
# Session 38 call 5: weights_static on path splitk (quantize_fragments triggers the GEMM before
# its wait): build, the new bitwise test, the concurrency test (option at M <= 64) and the
# fast set; the default and --weights-static workload benches of the final code.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--filter "GpuGemm.SplitkWeightsStatic*:$FAST" --test-timeout 240' > /tmp/steps.log 2>&1
mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/; grep -E "rc=|tests |bench |geomean" /tmp/steps.log | head
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/* $OUT/logs/ 2>/dev/null; grep -E "geomean" /tmp/static/*.md
tar czf $R/out.tgz -C /tmp o
