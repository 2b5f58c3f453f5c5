#!/usr/bin/env bash
# Named steps for one device call (a measurement aid for the GPU machine's `run`, which returns
# at most 8 files: everything is packed into $OUT/all.tgz at the end). Each step logs to
# $OUT/logs/<step>.log and prints a short summary. Steps, in the order given:
#   build     scripts/device-check.sh --no-tests --no-bench (carry .deps)
#   fast      the fast GPU tests (~60 s): GpuGemm* (without the workload sweep), GpuCanary*,
#             GpuConcurrency*, GpuQuant*, GpuAlignment*, Gpu64*
#   full      every GPU test (Gpu*, ~300 s)
#   san       racecheck, synccheck and memcheck on GpuSanitize.GemmEveryPathSmall (~10 s)
#   bench     mxfp4 bench into $OUT/bench, then tools/dev/targets.py
#   timeline  tools/dev/timeline/run.sh $TL_CASES (default cases-small-m.txt)
#   split     tools/dev/probes/call_split.cu on the splitk decode shapes
#   other     any other argument is run as a shell command
# Usage: tools/dev/device-steps.sh build fast bench "bash my-experiment.sh"
set -u
o=${OUT:?set OUT}
mkdir -p "$o/logs"
log() { echo "== $* $(date +%T)"; }
fast_filter='GpuGemm*:GpuCanary*:GpuConcurrency*:GpuQuant*:GpuAlignment*:Gpu64*-GpuGemm.WorkloadShapesEveryPathWithinContract'
for st in "$@"; do
  case $st in
    build) log build; OUT=$o/dc timeout 300 bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1
      echo "rc=$?"; tail -3 "$o/logs/build.log" ;;
    fast) log fast; timeout 200 build-device/mxfp4_tests --gtest_filter="$fast_filter" --gtest_brief=1 > "$o/logs/fast.log" 2>&1
      echo "rc=$?"; tail -3 "$o/logs/fast.log" ;;
    full) log full; timeout 360 build-device/mxfp4_tests --gtest_filter='Gpu*' --gtest_brief=1 > "$o/logs/full.log" 2>&1
      echo "rc=$?"; tail -3 "$o/logs/full.log" ;;
    san) log san
      for t in racecheck synccheck memcheck; do
        timeout 120 compute-sanitizer --tool $t build-device/mxfp4_tests --gtest_filter='GpuSanitize.GemmEveryPathSmall' \
          > "$o/logs/san-$t.log" 2>&1
        echo "$t rc=$?"; grep -E 'SUMMARY|PASSED|FAILED' "$o/logs/san-$t.log" | head -3
      done ;;
    bench) log bench; timeout 200 build-device/mxfp4 bench --out-dir "$o/bench" > "$o/logs/bench.log" 2>&1
      echo "rc=$?"; python3 tools/dev/targets.py "$o/bench/h200.md" 2>&1 | head -20 ;;
    timeline) log timeline; timeout 240 bash tools/dev/timeline/run.sh "${TL_CASES:-tools/dev/timeline/cases-small-m.txt}" \
        > "$o/logs/timeline.log" 2>&1; echo "rc=$?"; tail -40 "$o/logs/timeline.log" ;;
    split) log split
      blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-device/CMakeCache.txt)
      nvcc -std=c++17 -O3 -arch=sm_90a -Iinclude -Isrc tools/dev/probes/call_split.cu build-device/libmxfp4.a \
        -lcublas -lcublasLt $blas -o /tmp/call_split &&
        /tmp/call_split 16 2112 7168 32 4096 512 64 7168 2048 64 2880 512 8 2112 7168 16 3072 1536 64 3072 1536 \
          > "$o/logs/call_split.log" 2>&1
      cat "$o/logs/call_split.log" ;;
    *) log "$st"; eval "$st" ;;
  esac
done
log done
cd "$o" && tar czf /tmp/all.tgz logs bench dc ncu ov 2>/dev/null; rm -rf "${o:?}"/*; mv /tmp/all.tgz "$o/"
