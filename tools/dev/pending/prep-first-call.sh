#!/usr/bin/env bash
# Run HERE before the next session's first device call (tools/dev/pending/first-call.sh): writes
# the untracked tools/dev/pending/hyb/ = the files that tools/dev/pending/fix-nosplit-code.patch
# (plan item d: the FIX kernels compile split-K out; cuobjdump: FIX instantiations 96-904
# instructions shorter, plain ones identical) and fixup-stage-block.patch (the fix-up's two
# staging branches as one stage_block helper; the fix-up code's SASS changes only in
# scheduling and a predicated load) change, as the patches leave them, and hyb/DELETED (files
# they remove; none). first-call.sh builds that patched tree beside the tree.
set -eu
cd "$(git rev-parse --show-toplevel)"
patches="tools/dev/pending/fix-nosplit-code.patch tools/dev/pending/fixup-stage-block.patch"
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
for patch in $patches; do (cd "$tmp" && git apply "$OLDPWD/$patch"); done
cat $patches > /tmp/patches.diff
patch=/tmp/patches.diff
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
