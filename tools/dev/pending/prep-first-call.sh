#!/usr/bin/env bash
# Run HERE before an A/B call: writes the untracked overlay DIR (default tools/dev/pending/base/)
# = the tree's files as PATCH leaves them, which tools/dev/ab.sh on the device builds as its
# base (AB_OVERLAY=DIR for another DIR; positive new - base = the patch faster).
# Usage: bash tools/dev/pending/prep-first-call.sh PATCH [DIR]
set -eu
cd "$(git rev-parse --show-toplevel)"
patch=${1:?usage: prep-first-call.sh PATCH [DIR]}
dir=${2:-tools/dev/pending/base}
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
(cd "$tmp" && git apply "$OLDPWD/$patch")
rm -rf "$dir" && mkdir -p "$dir"
for f in $(grep '^+++ b/' "$patch" | sed 's|^+++ b/||'); do
  mkdir -p "$dir/$(dirname "$f")" && cp "$tmp/$f" "$dir/$f"
done
rm -rf "$tmp"
find "$dir" -type f
