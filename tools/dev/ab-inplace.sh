#!/usr/bin/env bash
# Builds an A/B base in seconds instead of a full build (session 56): where an overlay changes
# only a few C++ files (e.g. the dispatcher's src/dispatch/*), the base is the tree's own
# build-device/ with those files swapped in, rebuilt incrementally; its CLI is copied to
# TREE/build/mxfp4, which `AB_TREE=TREE AB_PREBUILT=1 tools/dev/ab.sh ...` then runs as the base.
# The tree's files are put back (with a new mtime) and build-device/ rebuilt, also on failure;
# the tree's CLI must then be byte-identical to its copy taken before the swap.
# Run after build-device/ is built (scripts/device-check.sh), one overlay at a time.
# Usage (repository root, on the device): tools/dev/ab-inplace.sh OVERLAY_DIR TREE_DIR
set -u
overlay=${1:?usage: ab-inplace.sh OVERLAY_DIR TREE_DIR} tree=${2:?usage: ab-inplace.sh OVERLAY_DIR TREE_DIR}
[ -d "$overlay" ] || { echo "ab-inplace.sh: no $overlay/"; exit 2; }
[ -x build-device/mxfp4 ] || { echo "ab-inplace.sh: build-device/mxfp4 missing"; exit 2; }
keep=$(mktemp -d)
mapfile -t files < <(cd "$overlay" && find . -type f | sed 's|^\./||')
[ ${#files[@]} -gt 0 ] || { echo "ab-inplace.sh: $overlay/ is empty"; exit 2; }
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "ab-inplace.sh: $overlay/$f replaces no file of the tree"; exit 2; }
done
restore() {
  for f in "${files[@]}"; do cp "$keep/$f" "$f"; touch "$f"; done
  cmake --build build-device -j "$(nproc)" > /tmp/ab-inplace-restore.log 2>&1 ||
    { echo "ab-inplace.sh: rebuilding the tree failed"; tail -20 /tmp/ab-inplace-restore.log; return 1; }
  cmp -s build-device/mxfp4 "$keep/mxfp4.tree" ||
    { echo "ab-inplace.sh: the tree's CLI differs from before the swap (stale build-device/?)"; return 1; }
}
for f in "${files[@]}"; do mkdir -p "$keep/$(dirname "$f")" && cp "$f" "$keep/$f"; done
cp build-device/mxfp4 "$keep/mxfp4.tree"
for f in "${files[@]}"; do cp "$overlay/$f" "$f"; touch "$f"; done
rc=0
if cmake --build build-device --target mxfp4_cli -j "$(nproc)" > /tmp/ab-inplace-base.log 2>&1; then
  mkdir -p "$tree/build" && cp build-device/mxfp4 "$tree/build/mxfp4"
else
  echo "ab-inplace.sh: base build failed"; tail -20 /tmp/ab-inplace-base.log; rc=1
fi
restore || rc=1
if [ $rc = 0 ] && cmp -s build-device/mxfp4 "$tree/build/mxfp4"; then
  echo "ab-inplace.sh: the base's CLI is identical to the tree's ($overlay changes nothing?)"; rc=1
fi
rm -rf "$keep"
exit $rc
