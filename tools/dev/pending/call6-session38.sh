#!/usr/bin/env bash
# Session 38 call 6: the Python extension of the final code and its CUDA / torch / gemm tests.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
{ cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DMXFP4_BUILD_TESTS=OFF -DMXFP4_BUILD_PYTHON=ON && cmake --build build-device -j "$(nproc)"; } > $OUT/logs/py-build.log 2>&1
echo "py build rc=$?"; tail -2 $OUT/logs/py-build.log
MXFP4_PYTHON_BUILD=$PWD/build-device/python MXFP4_CLI=$PWD/build-device/mxfp4 timeout 300 python3 -m pytest -q -rs \
  tests/python/test_py_cuda.py tests/python/test_py_torch.py tests/python/test_py_gemm.py > $OUT/logs/pytest-gpu.log 2>&1
echo "pytest rc=$?"; tail -4 $OUT/logs/pytest-gpu.log
tar czf $R/out.tgz -C /tmp o
