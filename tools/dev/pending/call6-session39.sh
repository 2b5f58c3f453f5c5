#!/usr/bin/env bash
# Session 39 call 6: plan item w again (the final tree, src identical to the session's start):
# `mxfp4 bench` and `mxfp4 bench --weights-static`, to refresh h200{,-static}.md if an H200 comes.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
nvidia-smi --query-gpu=name --format=csv,noheader
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/* $OUT/logs/ 2>/dev/null; grep -E "^\| geomean" /tmp/static/*.md
tar czf $R/out.tgz -C /tmp o
