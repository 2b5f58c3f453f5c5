#!/usr/bin/env bash
# Run HERE before an A/B call: writes the untracked overlay tools/dev/pending/base/ = the
# tree's files as PATCH leaves them, which tools/dev/ab.sh on the device builds as its base
# (positive new - base = the patch faster).
# Usage: bash tools/dev/pending/prep-first-call.sh PATCH
set -eu
cd "$(git rev-parse --show-toplevel)"
patch=${1:?usage: prep-first-call.sh PATCH}
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
(cd "$tmp" && git apply "$OLDPWD/$patch")
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base
for f in $(grep '^+++ b/' "$patch" | sed 's|^+++ b/||'); do
  mkdir -p "tools/dev/pending/base/$(dirname "$f")" && cp "$tmp/$f" "tools/dev/pending/base/$f"
done
rm -rf "$tmp"
find tools/dev/pending/base -type f
