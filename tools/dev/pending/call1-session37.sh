#!/usr/bin/env bash
# Session 37 call 1: default bench, gemv EARLY=1/2 variants (weights to registers before the PDL
# wait; a measurement only), repetitions of the gemv shapes per build, the ifetch probe.
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT/logs
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/logs/gpu.txt
tools/dev/device-steps.sh '--no-tests' > $OUT/logs/steps.log 2>&1; tail -30 $OUT/logs/steps.log
for v in 1 2; do tools/dev/variant.sh early$v -DMXFP4_EXP_GEMV_EARLY=$v; done
for rep in 1 2; do for b in build-device build-early1 build-early2; do
  echo "== $b rep $rep"; $b/mxfp4 bench --shapes tools/dev/shapes-gemv.txt --no-baselines --out-dir /tmp/r-$b-$rep > /dev/null 2>&1
  grep -E '^\| [0-9]' /tmp/r-$b-$rep/*.md | cut -d'|' -f2-5 | tr '\n' ';'; echo
done; done 2>&1 | tee $OUT/logs/gemv-early-reps.txt
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Iinclude -Isrc tools/dev/probes/ifetch.cu -o /tmp/ifetch && /tmp/ifetch > $OUT/logs/probe-ifetch.txt 2>&1; tail -20 $OUT/logs/probe-ifetch.txt
cp $OUT/dc/*.md $OUT/logs/ 2>/dev/null
tar czf $R/out.tgz -C /tmp o
