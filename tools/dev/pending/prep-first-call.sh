#!/usr/bin/env bash
# Run HERE before tools/dev/pending/first-call.sh (session 46): writes the untracked overlay
# tools/dev/pending/base/ = the tree's files as tools/dev/pending/tall-pair-nosplit.patch leaves
# them (192 x 128 tiles and pairs compile split-K out: never split by gemm_config_problem;
# cuobjdump: the 192 x 128 kernel 4824 -> 3920 instructions without its 4 cluster barriers,
# the plain pair 3896 -> 3792, every other kernel identical, registers unchanged), which
# first-call-tests-tune.sh A/Bs against the tree (tools/dev/ab.sh's base).
set -eu
cd "$(git rev-parse --show-toplevel)"
patch=tools/dev/pending/tall-pair-nosplit.patch
tmp=$(mktemp -d)
git archive HEAD | tar xf - -C "$tmp"
(cd "$tmp" && git apply "$OLDPWD/$patch")
rm -rf tools/dev/pending/base && mkdir -p tools/dev/pending/base
for f in $(grep '^+++ b/' "$patch" | sed 's|^+++ b/||'); do
  mkdir -p "tools/dev/pending/base/$(dirname "$f")" && cp "$tmp/$f" "tools/dev/pending/base/$f"
done
rm -rf "$tmp"
find tools/dev/pending/base -type f
