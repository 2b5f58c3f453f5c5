#!/usr/bin/env bash
# Session 38 call 4: build, Dispatch + the fast GPU set, the workload bench (gemv's new limit);
# the EARLY_TRIGGER variant's bench (A's quantizer / image kernel trigger the GEMM before
# their wait: the measurement for a weights_static form of it); then the Python extension and
# test_py_cuda.py's weights_static and explain tests.
set -u
R=$OUT; export OUT=/tmp/o; rm -rf $OUT; mkdir -p $OUT/logs
tools/dev/device-steps.sh '--filter "Dispatch*:$FAST" --test-timeout 150' > /tmp/steps.log 2>&1; mkdir -p $OUT/logs; cp /tmp/steps.log $OUT/logs/
cat /tmp/steps.log | grep -E "rc=|tests|PASS|FAIL|geomean" | head
timeout 200 tools/dev/variant.sh earlytrig "-DMXFP4_EXP_EARLY_TRIGGER=1"
{ cmake -S . -B build-device -DMXFP4_BUILD_PYTHON=ON && cmake --build build-device -j "$(nproc)"; } > $OUT/logs/py-build.log 2>&1; echo "py build rc=$?"
MXFP4_PYTHON_BUILD=$PWD/build-device/python MXFP4_CLI=$PWD/build-device/mxfp4 timeout 120 python3 -m pytest -q -rs \
  tests/python/test_py_cuda.py -k "weights_static or explain" > $OUT/logs/pytest-gpu.log 2>&1; echo "pytest rc=$?"; tail -3 $OUT/logs/pytest-gpu.log
tar czf $R/out.tgz -C /tmp o
