#!/usr/bin/env bash
# Run HERE before the next session's first device call (tools/dev/pending/first-call.sh): writes
# the untracked tools/dev/pending/hyb/ = the files tools/dev/pending/fix-nosplit-code.patch
# changes, as the patch leaves them (plan item d: the FIX kernels compile split-K out;
# cuobjdump: FIX instantiations 96-904 instructions shorter, plain ones identical), and
# hyb/DELETED (files the patch removes; none). first-call.sh builds that patched tree beside
# the tree.
set -eu
cd "$(git rev-parse --show-toplevel)"
patch=tools/dev/pending/fix-nosplit-code.patch
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
(cd "$tmp" && git apply "$OLDPWD/$patch")
rm -rf tools/dev/pending/hyb && mkdir -p tools/dev/pending/hyb
: > tools/dev/pending/hyb/DELETED
for f in $(grep '^+++ b/' "$patch" | sed 's|^+++ b/||'); do
  mkdir -p "tools/dev/pending/hyb/$(dirname "$f")" && cp "$tmp/$f" "tools/dev/pending/hyb/$f"
done
for f in $(grep -B1 '^+++ /dev/null' "$patch" | grep '^--- a/' | sed 's|^--- a/||'); do
  echo "$f" >> tools/dev/pending/hyb/DELETED
done
rm -rf "$tmp"
find tools/dev/pending/hyb -type f
