# Shared by run.sh, gemv_run.sh and fp8_run.sh (sourced, not run): the scratch copy of the work
# tree that gets instrumented, the library and trace harness build there, and the loop over a
# cases file. The repository itself is never modified.

# scratch_copy ROOT DIR: DIR becomes a fresh copy of ROOT's work tree (no .git, no build*); cd there.
scratch_copy() {
  rm -rf "$2" && mkdir -p "$2"
  (cd "$1" && tar --exclude='./build*' --exclude='./.git' -cf - .) | tar -C "$2" -xf -
  cd "$2"
}

# build_harness HARNESS.cu OUT: builds the (instrumented) library in build-tl with
# CMAKE_CUDA_FLAGS=$CUDA_FLAGS and links HARNESS against it into OUT. Exits the script when
# BUILD_ONLY=1 (a build check without a GPU).
build_harness() {
  local gen=()
  if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
  cmake -S . -B build-tl ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DMXFP4_CUDA=ON -DCMAKE_CUDA_FLAGS="${CUDA_FLAGS:-}" -DMXFP4_BUILD_TESTS=OFF -DMXFP4_BUILD_CLI=OFF >/dev/null
  cmake --build build-tl -j "$(nproc)" --target mxfp4 >/dev/null
  local blas
  blas=$(sed -n 's/^MXFP4_OPENBLAS_LIB:FILEPATH=//p' build-tl/CMakeCache.txt)
  nvcc -std=c++17 -O2 -arch=sm_90a -Iinclude "$1" build-tl/libmxfp4.a -lcublas -lcublasLt ${blas:+"$blas"} -o "$2"
  if [ "${BUILD_ONLY:-0}" = 1 ]; then exit 0; fi
}

# run_cases CASES BIN: runs BIN with every non-comment, non-empty line of CASES as arguments.
run_cases() {
  grep -v '^#' "$1" | while read -r line; do
    [ -z "$line" ] && continue
    echo "== $line"
    "$2" $line || echo "$(basename "$2"): rc=$? for '$line'"
  done
}
