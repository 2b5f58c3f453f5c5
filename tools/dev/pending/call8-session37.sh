#!/usr/bin/env bash
# Session 37 call 8: the review's test additions on the GPU (weights_static: kws 2 and 8, the
# no-room case, dependent calls with the option; the Python CUDA test's gemv-only shapes).
set -u
R=$OUT; export OUT=/tmp/o; mkdir -p $OUT/logs
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DMXFP4_BUILD_PYTHON=ON > $OUT/logs/configure.log 2>&1 && cmake --build build-device -j "$(nproc)" > $OUT/logs/build.log 2>&1; echo "build rc=$?"
timeout 150 build-device/mxfp4_tests --gtest_filter='GpuGemm.GemvWeightsStatic*:GpuConcurrency.DependentCalls*' --gtest_brief=1 > $OUT/logs/tests.log 2>&1; echo "tests rc=$?"; tail -4 $OUT/logs/tests.log
MXFP4_PYTHON_BUILD=$PWD/build-device/python timeout 60 python3 -m pytest -q tests/python/test_py_cuda.py -k weights_static > $OUT/logs/pytest.log 2>&1; echo "pytest rc=$?"; tail -2 $OUT/logs/pytest.log
tar czf $R/out.tgz -C /tmp o
