#!/usr/bin/env bash
# Session 38 call 3: the CLI with gemv's new per-CTA limit (256 at M <= 8), then a tune of
# path gemv against the small-M kernel on tools/dev/shapes-gemv-limit.txt (the dispatcher's
# new choice is timed beside), then the workload bench.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
{ cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DMXFP4_BUILD_TESTS=OFF && cmake --build build-device --target mxfp4_cli -j "$(nproc)"; } > $OUT/logs/build.log 2>&1
echo "build rc=$?"; nvidia-smi --query-gpu=name --format=csv,noheader
MXFP4_TUNE_CACHE=/tmp/t.json timeout 200 build-device/mxfp4 tune --verbose --paths gemv,splitk,fused \
  --shapes tools/dev/shapes-gemv-limit.txt > $OUT/logs/tune-gemv-limit.log 2>&1; echo "tune rc=$?"
grep -E "^ {0,5}[0-9]|dispatcher" $OUT/logs/tune-gemv-limit.log
timeout 200 build-device/mxfp4 bench --out-dir $OUT/logs > $OUT/logs/bench.log 2>&1; echo "bench rc=$?"
grep -E "geomean" $OUT/logs/*.md
tar czf $R/out.tgz -C /tmp o
