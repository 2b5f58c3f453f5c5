#!/usr/bin/env bash
# Session 40 call 2: the weights_static kernel with the same A loads (new) against c9a9905's
# gemm_gemv.cu (tools/dev/pending/gemm_gemv_base.cu), in one call. Usage: OUT=... this script
set -u
o=${OUT:?}; mkdir -p "$o/logs"
base() {  # the tree with the base gemv kernel, built in /tmp/base
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
tools/dev/device-steps.sh '--filter "GpuGemm*:GpuConcurrency*-GpuGemm.WorkloadShapesEveryPathWithinContract"' \
  'build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1; grep geomean $o/dc/static/*.md' \
  'MXFP4_TUNE_CACHE=/tmp/tune.json timeout 300 build-device/mxfp4 tune --verbose --paths gemv,splitk --shapes tools/dev/shapes-gemv-limit.txt > $o/logs/tune-gemv-limit.log 2>&1; echo tune rc=$?; grep -E "^ {1,5}[0-9]" $o/logs/tune-gemv-limit.log' \
  base \
  'gb news build-device/mxfp4 --weights-static; gb bases /tmp/base/build-base/mxfp4 --weights-static; gb news2 build-device/mxfp4 --weights-static; gb bases2 /tmp/base/build-base/mxfp4 --weights-static'
