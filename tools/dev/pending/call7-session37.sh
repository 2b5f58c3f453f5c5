#!/usr/bin/env bash
# Session 37 call 7: default and --weights-static benches (plan item w, if the card is an
# H200), then the Python extension and the CUDA/torch Python tests (weights_static included).
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--no-tests' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
mkdir -p /tmp/all && tar xzf $OUT/all.tgz -C /tmp/all 2>/dev/null; grep -E "geomean|nvidia|H200|H100" /tmp/all/dc/gpu.txt /tmp/all/logs/device-check.log | tail -4
build-device/mxfp4 bench --weights-static --out-dir /tmp/static > $OUT/logs/bench-static.log 2>&1; echo "static bench rc=$?"
cp /tmp/static/* $OUT/logs/ 2>/dev/null; grep -E "^\| (geomean|1 |4 2880)" /tmp/static/*.md
{ cmake -S . -B build-device -DMXFP4_BUILD_PYTHON=ON && cmake --build build-device -j "$(nproc)"; } > $OUT/logs/py-build.log 2>&1; echo "py build rc=$?"; tail -3 $OUT/logs/py-build.log
MXFP4_PYTHON_BUILD=$PWD/build-device/python MXFP4_CLI=$PWD/build-device/mxfp4 timeout 240 python3 -m pytest -q -rs \
  tests/python/test_py_cuda.py tests/python/test_py_torch.py tests/python/test_py_gemm.py > $OUT/logs/pytest-gpu.log 2>&1; echo "pytest rc=$?"; tail -5 $OUT/logs/pytest-gpu.log
tar czf $R/out.tgz -C /tmp o
