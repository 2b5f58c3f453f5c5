#!/usr/bin/env bash
# Session 39 call 5: how path gemv's time follows its decode's instruction count (measurement
# builds, wrong results): -DMXFP4_EXP_GEMV_FP8=1 (e4m3 bit-move decode, m16n8k32 e4m3 MMA, which
# sm_90 runs as F2FP unpacks + two f16 HMMAs, and a per-block FMUL + FFMA) and
# -DMXFP4_EXP_GEMV_NOSCALE=1 (the bf16 decode without its scale multiplies), against the
# default build; gemv shapes, with and without --weights-static, two rounds.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests --no-bench' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
nvidia-smi --query-gpu=name --format=csv,noheader
for v in fp8:MXFP4_EXP_GEMV_FP8 noscale:MXFP4_EXP_GEMV_NOSCALE; do n=${v%%:*}; m=${v#*:}
  cmake -S . -B build-$n -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
    -DCMAKE_CUDA_FLAGS="-D$m=1" > $OUT/logs/$n-build.log 2>&1 && cmake --build build-$n --target mxfp4_cli -j 16 >> $OUT/logs/$n-build.log 2>&1 || echo "$n build failed"
done
printf '4 2880 512\n1 7168 2048\n1 2880 2880\n4 7168 2048\n8 7168 2048\n' > /tmp/g.txt
for round in 1 2; do for b in device fp8 noscale; do for m in default static; do
  a=""; [ $m = static ] && a="--weights-static"
  build-$b/mxfp4 bench --shapes /tmp/g.txt --no-baselines $a --out-dir /tmp/r-$b-$m-$round > /dev/null 2>&1 || echo "$b $m rc=$?"
  for f in /tmp/r-$b-$m-$round/*.md; do cp "$f" $OUT/logs/gemv-$b-$m-$round.md; done
done; done; done
for f in $OUT/logs/gemv-*.md; do echo "== $(basename $f)"; grep -E "^\| [0-9]" $f | cut -d'|' -f2-5 | tr '\n' ';'; echo; done
tar czf $R/out.tgz -C /tmp o
