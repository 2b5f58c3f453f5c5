#!/usr/bin/env bash
# Session 39 call 1: plan items w and x. Build and bench (default), bench --weights-static,
# tune of the gemv limit shapes (gemv,splitk,fused) and the gemv workload shapes (block_n
# 32 against 64 at 1x7168x2048), then steady timelines of the splitk shapes with and
# without the option (x: 16x2112x7168's loss).
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
rm -rf /tmp/all; mkdir -p /tmp/all && tar xzf $OUT/all.tgz -C /tmp/all 2>/dev/null; nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "^\| (geomean|1 |4 2880)" /tmp/all/dc/*.md 2>/dev/null | head; ls /tmp/all/dc
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/* $OUT/logs/ 2>/dev/null; grep -E "^\| (geomean|1 |4 2880|16 2112)" /tmp/static/*.md
MXFP4_TUNE_CACHE=/tmp/t1.json timeout 150 build-device/mxfp4 tune --verbose --paths gemv,splitk,fused \
  --shapes tools/dev/shapes-gemv-limit.txt > $OUT/logs/tune-gemv-limit.log 2>&1; echo "tune limit rc=$?"
grep -E "^ {0,5}[0-9]|dispatcher" $OUT/logs/tune-gemv-limit.log
printf '1 7168 2048\n1 2880 2880\n4 2880 512\n4 7168 2048\n' > /tmp/g.txt
MXFP4_TUNE_CACHE=/tmp/t2.json timeout 60 build-device/mxfp4 tune --verbose --paths gemv --shapes /tmp/g.txt > $OUT/logs/tune-gemv-default.log 2>&1
MXFP4_TUNE_CACHE=/tmp/t3.json timeout 60 build-device/mxfp4 tune --weights-static --verbose --paths gemv --shapes /tmp/g.txt > $OUT/logs/tune-gemv-static.log 2>&1
echo "gemv tunes done"; grep -E "^ {0,5}[0-9]|dispatcher" $OUT/logs/tune-gemv-default.log $OUT/logs/tune-gemv-static.log
printf '16 2112 7168\n8 2112 7168\n16 3072 1536\n' > /tmp/c.txt
STEADY=1 timeout 200 tools/dev/timeline/run.sh /tmp/c.txt > $OUT/logs/timeline-steady-default.log 2>&1; echo "timeline rc=$?"
for l in "16 2112 7168" "8 2112 7168" "16 3072 1536"; do echo "== $l"; WEIGHTS_STATIC=1 timeout 60 /tmp/trace $l; done > $OUT/logs/timeline-steady-static.log 2>&1
echo "timeline static done"
tar czf $R/out.tgz -C /tmp o
