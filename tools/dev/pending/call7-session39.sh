#!/usr/bin/env bash
# Session 39 call 7: path gemv's CTA size at M = 1-2 on this GPU (plan item a(3)): every gemv
# candidate of M = 1 and 2 shapes with N x K from 2 to 29 Mi (`mxfp4 tune --paths gemv`).
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests --no-bench' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
nvidia-smi --query-gpu=name --format=csv,noheader
printf '1 7168 2048\n1 4096 4096\n1 8192 2048\n1 2112 7168\n1 4096 1024\n1 14336 2048\n1 3584 2048\n1 5120 5120\n2 7168 2048\n2 4096 4096\n' > /tmp/m1.txt
MXFP4_TUNE_CACHE=/tmp/t.json timeout 150 build-device/mxfp4 tune --verbose --paths gemv --shapes /tmp/m1.txt > $OUT/logs/tune-gemv-m1.log 2>&1; echo "tune rc=$?"
grep -E "^ {0,5}[0-9]|dispatcher" $OUT/logs/tune-gemv-m1.log
tar czf $R/out.tgz -C /tmp o
