#!/usr/bin/env bash
# Run HERE before session 45's device call: writes the untracked tools/dev/pending/hyb/, the
# files that tools/dev/pending/fp8-fixup-hybrid.patch changes, as the patch leaves them, and
# hyb/DELETED (the files it removes). call-s45.sh builds that whole patched tree on the device,
# so a bench of its build is the code a commit of the patch holds.
set -eu
cd "$(git rev-parse --show-toplevel)"
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
(cd "$tmp" && git apply "$OLDPWD/tools/dev/pending/fp8-fixup-hybrid.patch")
rm -rf tools/dev/pending/hyb && mkdir -p tools/dev/pending/hyb
: > tools/dev/pending/hyb/DELETED
for f in $(grep '^+++ b/' tools/dev/pending/fp8-fixup-hybrid.patch | sed 's|^+++ b/||'); do
  mkdir -p "tools/dev/pending/hyb/$(dirname "$f")" && cp "$tmp/$f" "tools/dev/pending/hyb/$f"
done
for f in $(grep -B1 '^+++ /dev/null' tools/dev/pending/fp8-fixup-hybrid.patch | grep '^--- a/' | sed 's|^--- a/||'); do
  echo "$f" >> tools/dev/pending/hyb/DELETED
done
rm -rf "$tmp"
find tools/dev/pending/hyb -type f; cat tools/dev/pending/hyb/DELETED
