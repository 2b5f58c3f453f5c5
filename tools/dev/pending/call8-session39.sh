#!/usr/bin/env bash
# Session 39 call 8: the gemv rule for M <= 2 (dispatch.cpp): GpuGemm and GpuConcurrency tests,
# the bench, and the --weights-static bench.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--filter "GpuGemm*:GpuConcurrency*-GpuGemm.WorkloadShapesEveryPathWithinContract" --test-timeout 120' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
cat /tmp/steps.log | tail -15
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/* $OUT/logs/ 2>/dev/null; grep -E "^\| (geomean|1 )" /tmp/static/*.md
tar czf $R/out.tgz -C /tmp o
