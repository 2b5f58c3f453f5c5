#!/usr/bin/env bash
# Session 38 call 1: build and bench (default), bench --weights-static (plan item w), tune
# --weights-static of path gemv against splitk / fused (plan item y), then path gemv's steady
# timelines with and without the option (tools/dev/timeline/gemv_run.sh, WEIGHTS_STATIC=1).
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
mkdir -p /tmp/all && tar xzf $OUT/all.tgz -C /tmp/all 2>/dev/null; grep -E "geomean|nvidia|H200|H100" /tmp/all/dc/gpu.txt /tmp/all/logs/device-check.log | tail -4
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/* $OUT/logs/ 2>/dev/null; grep -E "^\| (geomean|1 |4 2880)" /tmp/static/*.md
timeout 200 build-device/mxfp4 tune --weights-static --verbose --paths gemv,splitk,fused \
  --shapes tools/dev/shapes-gemv-static.txt > $OUT/logs/tune-static.log 2>&1; echo "tune static rc=$?"
grep -v "^  " $OUT/logs/tune-static.log
MXFP4_TUNE_CACHE=/tmp/tune-s38.json timeout 200 build-device/mxfp4 tune --verbose --paths gemv,splitk,fused --shapes tools/dev/shapes-gemv-static.txt \
  > $OUT/logs/tune-default.log 2>&1; echo "tune default rc=$?"
grep -v "^  " $OUT/logs/tune-default.log
timeout 240 tools/dev/timeline/gemv_run.sh tools/dev/timeline/cases-gemv.txt > $OUT/logs/timeline-gemv-default.log 2>&1
echo "timeline rc=$?"
grep -v '^#' tools/dev/timeline/cases-gemv.txt | while read -r l; do [ -z "$l" ] && continue; echo "== $l"; \
  WEIGHTS_STATIC=1 timeout 60 /tmp/gemv_trace $l; done > $OUT/logs/timeline-gemv-static.log 2>&1
echo "timeline static done"; grep -E "==|graph:" $OUT/logs/timeline-gemv-default.log $OUT/logs/timeline-gemv-static.log
tar czf $R/out.tgz -C /tmp o
