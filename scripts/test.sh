#!/usr/bin/env bash
# THE test command: installs missing dependencies, configures (Ninja if present), builds with
# all cores, runs ctest (GoogleTest suite + the CLI's pytest suite), then the Python package
# tests in tests/python when there are any. CUDA is auto-detected (GPU tests skip without a
# device). Usage: scripts/test.sh [BUILD_DIR (default: build)] [extra cmake -D options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=build
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then build=$1; shift; fi

"$root/scripts/install-deps.sh" --if-missing
"$root/scripts/build.sh" "$build" -DMXFP4_BUILD_TESTS=ON -DMXFP4_BUILD_CLI=ON "$@"

echo "== ctest"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"

if compgen -G "tests/python/test_*.py" >/dev/null || compgen -G "tests/python/*_test.py" >/dev/null; then
  echo "== python tests"
  rc=0
  python3 -m pytest -q tests/python || rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then exit $rc; fi  # 5: no tests collected
fi
echo "== all tests passed"
