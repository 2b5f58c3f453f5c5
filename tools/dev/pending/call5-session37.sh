#!/usr/bin/env bash
# Session 37 call 5: weights_static v3 against two measurement variants (NOCOPY: register sets
# only; SPREAD: bulk copies from the lanes of the last warp), three repetitions of the gemv
# shapes per build and mode.
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
tools/dev/variant.sh nocopy -DMXFP4_EXP_GEMV_STATIC_NOCOPY=1 > /dev/null 2>&1; echo "nocopy rc=$?"
tools/dev/variant.sh spread -DMXFP4_EXP_GEMV_STATIC_SPREAD=1 > /dev/null 2>&1; echo "spread rc=$?"
for rep in 1 2 3; do for run in "build-device " "build-device --weights-static" "build-nocopy --weights-static" "build-spread --weights-static"; do
  set -- $run; b=$1; shift
  echo "== $b $* rep $rep"; $b/mxfp4 bench "$@" --shapes tools/dev/shapes-gemv.txt --no-baselines --out-dir /tmp/r-$b-$#-$rep > /dev/null 2>&1
  grep -E '^\| [0-9]' /tmp/r-$b-$#-$rep/*.md | cut -d'|' -f2-5 | tr '\n' ';'; echo
done; done 2>&1 | tee $OUT/logs/gemv-static-variants-reps.txt
tar czf $R/out.tgz -C /tmp o
