#!/usr/bin/env bash
# Session 37 call 6 (final): GemmOptions::weights_static (path gemv's weights copied to shared memory
# before the PDL wait): build, GPU tests (the new one, the fast set), sanitizers on the new test,
# the default bench, the --weights-static bench, two repetitions of the gemv shapes per mode.
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--filter "GpuGemm.GemvWeightsStatic*:$FAST"' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
mkdir -p /tmp/all && tar xzf $OUT/all.tgz -C /tmp/all 2>/dev/null; grep -E "rc=|PASSED|FAILED|summary|geomean" -A2 /tmp/all/logs/device-check.log | tail -30
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/*.md $OUT/logs/ 2>/dev/null; grep -E "^\| (geomean|1 |4 2880)" /tmp/static/*.md
for rep in 1; do for mode in "" --weights-static; do
  echo "== mode '$mode' rep $rep"; build-device/mxfp4 bench $mode --shapes tools/dev/shapes-gemv.txt --no-baselines --out-dir /tmp/r-$rep$mode > /dev/null 2>&1
  grep -E '^\| [0-9]' /tmp/r-$rep$mode/*.md | cut -d'|' -f2-5 | tr '\n' ';'; echo
done; done 2>&1 | tee $OUT/logs/gemv-static-reps.txt
tar czf $R/out.tgz -C /tmp o
