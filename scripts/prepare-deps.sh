#!/usr/bin/env bash
# Copies the header-only dependencies (CLI11, nlohmann-json) and GoogleTest's sources from this
# machine's system packages into .deps/ (git-ignored), for machines without network (the GPU
# machine): CMake falls back to .deps when find_package() finds nothing. Carry .deps with the run.
# Needs: libcli11-dev nlohmann-json3-dev libgtest-dev (scripts/install-deps.sh installs them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for src in /usr/include/CLI /usr/include/nlohmann /usr/src/googletest; do
  [ -d "$src" ] || { echo "prepare-deps.sh: $src not found (run scripts/install-deps.sh first)" >&2; exit 1; }
done
rm -rf "$root/.deps/include/CLI" "$root/.deps/include/nlohmann" "$root/.deps/googletest"
mkdir -p "$root/.deps/include"
cp -r /usr/include/CLI "$root/.deps/include/"
cp -r /usr/include/nlohmann "$root/.deps/include/"
cp -r /usr/src/googletest "$root/.deps/googletest"
echo "prepared $root/.deps ($(du -sh "$root/.deps" | cut -f1)): include/CLI include/nlohmann googletest"
