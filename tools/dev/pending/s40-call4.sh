#!/usr/bin/env bash
# Session 40 call 4 (final): every GPU test, the default and --weights-static benches of the
# tree (gemv with one vote per batch), then HEAD's gemm_gemv.cu (one vote per chunk,
# tools/dev/pending/gemm_gemv_base.cu) built beside it: the gemv shapes interleaved, and its
# full benches (the results to commit if the vote change is not kept).
set -u
o=${OUT:?}; mkdir -p "$o/logs"
base() {
  rm -rf /tmp/base && mkdir -p /tmp/base && tar cf - --exclude='./build*' . | tar xf - -C /tmp/base
  cp tools/dev/pending/gemm_gemv_base.cu /tmp/base/src/cuda/gemm_gemv.cu
  (cd /tmp/base && cmake -S . -B build-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
     > "$o/logs/base-build.log" 2>&1 && cmake --build build-base --target mxfp4_cli -j "$(nproc)" >> "$o/logs/base-build.log" 2>&1) \
    || { echo "base build failed"; tail -20 "$o/logs/base-build.log"; }
}
gb() {  # NAME BIN [ARGS]: bench of the gemv shapes
  local name=$1 bin=$2; shift 2
  "$bin" bench --shapes tools/dev/shapes-gemv.txt --no-baselines --out-dir "/tmp/r-$name" "$@" > "$o/logs/$name.log" 2>&1
  echo "$name rc=$?"; for f in /tmp/r-$name/*.md; do cp "$f" "$o/logs/$name-$(basename "$f")"; done
  grep -E '^\| [0-9]' "$o/logs/$name"-*.md | awk -F'|' '{printf "%s %sx%sx%s %s\n", "'$name'", $2, $3, $4, $5}' | tr -s ' '
}
export -f base gb
tools/dev/device-steps.sh '--filter "Gpu*"' \
  'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md' \
  base \
  'gb new1 build-device/mxfp4; gb base1 /tmp/base/build-base/mxfp4; gb new2 build-device/mxfp4; gb base2 /tmp/base/build-base/mxfp4' \
  'mkdir -p $o/logs/basefull $o/logs/basestatic; /tmp/base/build-base/mxfp4 bench --out-dir $o/logs/basefull > $o/logs/base-full.log 2>&1; /tmp/base/build-base/mxfp4 bench --weights-static --out-dir $o/logs/basestatic > $o/logs/base-static.log 2>&1; grep geomean $o/logs/basefull/*.md $o/logs/basestatic/*.md'
