#!/usr/bin/env bash
# Session 38 call 2: the default build's bench; the COPY_AFTER variant (path gemv's copying
# kernel for every call, register loads and bulk copies after the wait; GPU tests first);
# two repetitions of tools/dev/shapes-gemv.txt per build; a gemv-only tune of both builds;
# the gemv/splitk limit shapes again (dispatcher's choice against splitk, default build).
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
mkdir -p /tmp/all && tar xzf $OUT/all.tgz -C /tmp/all 2>/dev/null; grep -E "geomean|nvidia|H200|H100" /tmp/all/logs/device-check.log | tail -3
TESTS='GpuGemm*:GpuConcurrency*:GpuCanary*' TEST_TIMEOUT=200 tools/dev/variant.sh copyafter "-DMXFP4_EXP_GEMV_COPY_AFTER=1"
for rep in 1 2; do for b in build-device build-copyafter; do
  echo "== $b rep $rep"; $b/mxfp4 bench --shapes tools/dev/shapes-gemv.txt --no-baselines --out-dir /tmp/r-$b-$rep > /dev/null 2>&1
  grep -E "^\| [0-9]" /tmp/r-$b-$rep/*.md | cut -d'|' -f2-5,11
done; done 2>&1 | tee $OUT/logs/gemv-copyafter-reps.txt
for b in build-device build-copyafter; do
  MXFP4_TUNE_CACHE=/tmp/t-$b.json timeout 120 $b/mxfp4 tune --verbose --paths gemv --shapes tools/dev/shapes-gemv.txt \
    > $OUT/logs/tune-gemv-$b.log 2>&1; echo "tune $b rc=$?"
done
printf '4 2112 7168\n12 7168 1024\n16 4096 1024\n8 2880 2880\n2 2112 7168\n8 4096 2048\n' > /tmp/limit.txt
MXFP4_TUNE_CACHE=/tmp/t-limit.json timeout 120 build-device/mxfp4 tune --verbose --paths gemv,splitk --shapes /tmp/limit.txt \
  > $OUT/logs/tune-gemv-limits.log 2>&1; echo "tune limits rc=$?"; grep -E "^ {0,5}[0-9]|dispatcher" $OUT/logs/tune-gemv-limits.log
tar czf $R/out.tgz -C /tmp o
