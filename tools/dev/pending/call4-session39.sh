#!/usr/bin/env bash
# Session 39 call 4: the prize of a cheaper decode in path gemv. -DMXFP4_EXP_GEMV=3 (no decode,
# no MMA: the loaded words are only folded into the accumulators; wrong results) against the
# default build, both benched with and without --weights-static on the gemv shapes, then the
# static timeline of the variant (per-batch stamps).
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests --no-bench' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
nvidia-smi --query-gpu=name --format=csv,noheader
cmake -S . -B build-g3 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DCMAKE_CUDA_FLAGS="-DMXFP4_EXP_GEMV=3" > $OUT/logs/g3-build.log 2>&1 && cmake --build build-g3 --target mxfp4_cli -j 16 >> $OUT/logs/g3-build.log 2>&1 || echo "g3 build failed"
printf '4 2880 512\n1 7168 2048\n1 2880 2880\n4 7168 2048\n8 7168 2048\n' > /tmp/g.txt
for round in 1 2; do for b in device g3; do for m in default static; do
  a=""; [ $m = static ] && a="--weights-static"
  build-$b/mxfp4 bench --shapes /tmp/g.txt --no-baselines $a --out-dir /tmp/r-$b-$m-$round > /dev/null 2>&1 || echo "$b $m rc=$?"
  for f in /tmp/r-$b-$m-$round/*.md; do cp "$f" $OUT/logs/gemv-$b-$m-$round.md; done
done; done; done
for f in $OUT/logs/gemv-*.md; do echo "== $(basename $f)"; grep -E "^\| [0-9]" $f | cut -d'|' -f2-5; done
CUDA_FLAGS=-DMXFP4_EXP_GEMV=3 WEIGHTS_STATIC=1 timeout 150 tools/dev/timeline/gemv_run.sh /tmp/g.txt > $OUT/logs/tl-gemv-static-g3.log 2>&1; echo "tl rc=$?"
grep -E "^==|graph:|^(waited|synced|batch.|copied|loopend|end) " $OUT/logs/tl-gemv-static-g3.log
tar czf $R/out.tgz -C /tmp o
