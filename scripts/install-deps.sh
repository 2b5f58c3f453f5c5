#!/usr/bin/env bash
# Installs what building and testing mxfp4 needs on Debian/Ubuntu:
#   apt: cmake ninja-build g++ libgtest-dev libcli11-dev nlohmann-json3-dev libopenblas-dev python3-pip
#   pip: numpy ml_dtypes pytest
# plus python3-dev and pip nanobind (to build the Python extension for its tests), and cmake
# from pip when the distribution's is older than 3.24.
#
# Usage: scripts/install-deps.sh            install everything (needs root or sudo, and network)
#        scripts/install-deps.sh --check    only report what is missing (exit 1 if anything is)
#        scripts/install-deps.sh --if-missing [--build-only]
#                                           install only when the cheap check finds something
#                                           missing (what scripts/build.sh and test.sh call);
#                                           --build-only skips the Python test packages.
#        ... --torch                        also torch and safetensors (pip), for the torch, tensor-parallel
#                                           and safetensors-interop Python tests (CI passes it). PyPI's Linux wheel
#                                           brings the CUDA libraries (~3 GB, about 2 minutes
#                                           here) and runs on the CPU as well; set
#                                           MXFP4_TORCH_INDEX to a CPU-only wheel index to get
#                                           the small CPU build where that index is reachable.
#        ... --fuzz                         also clang with the libFuzzer/ASan/UBSan runtimes
#                                           (what scripts/fuzz.sh needs; apt clang and, where
#                                           the distribution splits them out, libclang-rt-dev
#                                           or libclang-rt-<version>-dev).
# A machine without network can build with .deps/ instead (scripts/prepare-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=install python=1 fuzz=0 torch=0
for arg in "$@"; do
  case "$arg" in
    --check) mode=check ;;
    --if-missing) mode=if-missing ;;
    --build-only) python=0 ;;
    --fuzz) fuzz=1 ;;
    --torch) torch=1 ;;
    *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

have_header() {  # system include dirs or the offline fallback folder
  [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ] || [ -e "$root/.deps/include/$1" ]
}
cmake_ok() {
  command -v cmake >/dev/null 2>&1 || return 1
  local v; v=$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')
  [ "$(printf '%s\n3.24\n' "$v" | sort -V | head -n1)" = "3.24" ]
}
missing() {
  local m=()
  cmake_ok || m+=("cmake>=3.24")
  command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || m+=("g++")
  have_header CLI/CLI.hpp || m+=("CLI11")
  have_header nlohmann/json.hpp || m+=("nlohmann-json")
  if [ $python = 1 ]; then
    [ -d /usr/src/googletest ] || have_header gtest/gtest.h || [ -d "$root/.deps/googletest" ] || m+=("googletest")
    python3 -c 'import numpy, ml_dtypes, pytest' >/dev/null 2>&1 || m+=("python: numpy ml_dtypes pytest")
    python3 -c 'import nanobind, os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' \
      >/dev/null 2>&1 || m+=("python: nanobind and the Python headers (python3-dev)")
  fi
  if [ $torch = 1 ]; then python3 -c 'import torch.distributed' >/dev/null 2>&1 || m+=("python: torch"); fi
  if [ $torch = 1 ]; then python3 -c 'import safetensors.numpy' >/dev/null 2>&1 || m+=("python: safetensors"); fi
  if [ $fuzz = 1 ]; then fuzzer_link_ok || m+=("clang with libFuzzer/ASan/UBSan runtimes"); fi
  echo "${m[*]:-}"
}
fuzzer_link_ok() {  # clang++ can build and link a -fsanitize=fuzzer,address,undefined program
  command -v clang++ >/dev/null 2>&1 || return 1
  local d rc=0; d=$(mktemp -d)
  printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$d/t.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$d/t.cpp" -o "$d/t" >/dev/null 2>&1 || rc=1
  rm -rf "$d"
  return $rc
}

if [ $mode != install ]; then
  m=$(missing)
  if [ -z "$m" ]; then exit 0; fi
  echo "install-deps.sh: missing: $m" >&2
  [ $mode = check ] && exit 1
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install-deps.sh: need root or sudo to apt-get install" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -y
$sudo apt-get install -y --no-install-recommends ca-certificates cmake ninja-build g++ libgtest-dev libcli11-dev \
  nlohmann-json3-dev libopenblas-dev python3 python3-pip python3-dev

pip_install() {  # PEP 668 distributions (Debian 12, Ubuntu 24.04) need --break-system-packages
  python3 -m pip install --quiet "$@" 2>/dev/null || python3 -m pip install --quiet --break-system-packages "$@"
}
if [ $fuzz = 1 ] && ! fuzzer_link_ok; then
  $sudo apt-get install -y --no-install-recommends clang
  # Debian 12 / Ubuntu 24.04 ship the sanitizer and libFuzzer runtimes separately.
  clang_major=$(clang++ --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n1)
  for pkg in libclang-rt-dev "libclang-rt-${clang_major}-dev"; do
    if ! fuzzer_link_ok && apt-cache show "$pkg" >/dev/null 2>&1; then
      $sudo apt-get install -y --no-install-recommends "$pkg"
    fi
  done
fi
cmake_ok || pip_install "cmake>=3.24"
pip_install numpy ml_dtypes pytest "nanobind>=2.4"
if [ $torch = 1 ] && ! python3 -c 'import torch.distributed' >/dev/null 2>&1; then
  if [ -n "${MXFP4_TORCH_INDEX:-}" ]; then
    pip_install torch --index-url "$MXFP4_TORCH_INDEX"
  else
    pip_install torch
  fi
fi
# The safetensors package: only for the loaders' interop test (tests/python/test_py_loaders.py).
if [ $torch = 1 ] && ! python3 -c 'import safetensors.numpy' >/dev/null 2>&1; then pip_install safetensors; fi
hash -r
m=$(missing)
if [ -n "$m" ]; then echo "install-deps.sh: still missing after installing: $m" >&2; exit 1; fi
echo "install-deps.sh: all dependencies present"
