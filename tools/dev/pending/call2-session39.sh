#!/usr/bin/env bash
# Session 39 call 2: where the weights_static kernels let the next kernel launch
# (-DMXFP4_EXP_STATIC_TRIGGER=1|2|3 against 0; gemm_gemv.cu, quantize.cu). Benches
# --weights-static of each build, two rounds interleaved, then gemv static timelines of 0 and 1.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests --no-bench' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
nvidia-smi --query-gpu=name --format=csv,noheader
for v in 1 2 3; do
  cmake -S . -B build-st$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
    -DCMAKE_CUDA_FLAGS="-DMXFP4_EXP_STATIC_TRIGGER=$v" > $OUT/logs/st$v-build.log 2>&1 &&
  cmake --build build-st$v --target mxfp4_cli -j 16 >> $OUT/logs/st$v-build.log 2>&1 || echo "st$v build failed"
done
echo "built $(date +%T)"
for round in 1 2; do
  for b in device st1 st2 st3; do
    build-$b/mxfp4 bench --weights-static --out-dir /tmp/r-$b-$round > $OUT/logs/bench-$b-$round.log 2>&1 || echo "$b rc=$?"
    for f in /tmp/r-$b-$round/*.md; do cp "$f" $OUT/logs/static-$b-$round.md; done
  done
done
python3 - <<'PY'
import glob, re
rows = {}
for f in sorted(glob.glob('/tmp/o/logs/static-*.md')):
    tag = f.split('static-')[1][:-3]
    for line in open(f):
        c = [x.strip() for x in line.split('|')]
        if len(c) > 5 and c[1].isdigit():
            rows.setdefault(f"{c[1]}x{c[2]}x{c[3]}", {})[tag] = c[4]
        elif line.startswith('| geomean'):
            rows.setdefault('geomean8', {})[tag] = c[2]
tags = sorted({t for r in rows.values() for t in r})
print('shape'.ljust(16) + ''.join(t.rjust(10) for t in tags))
for s, r in rows.items():
    print(s.ljust(16) + ''.join(r.get(t, '-').rjust(10) for t in tags))
PY
printf '1 7168 2048\n4 2880 512\n1 2880 2880\n' > /tmp/g.txt
WEIGHTS_STATIC=1 timeout 120 tools/dev/timeline/gemv_run.sh /tmp/g.txt > $OUT/logs/tl-gemv-static-0.log 2>&1; echo "tl0 rc=$?"
CUDA_FLAGS=-DMXFP4_EXP_STATIC_TRIGGER=1 WEIGHTS_STATIC=1 timeout 120 tools/dev/timeline/gemv_run.sh /tmp/g.txt > $OUT/logs/tl-gemv-static-1.log 2>&1; echo "tl1 rc=$?"
grep -E "^==|graph:|^(waited|synced|batch0|loopend|end) " $OUT/logs/tl-gemv-static-*.log
tar czf $R/out.tgz -C /tmp o
