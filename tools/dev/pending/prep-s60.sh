#!/usr/bin/env bash
# Run HERE (repository root) before session 60's call: writes the untracked overlays that
# tools/dev/pending/call-s59.sh builds as A/B bases (never `git add` them; remove them after).
#   base-prewiden: fa40567's long-K split-K past 3/2 of the SMs reverted, nothing else.
#   base-smk4:     the small-M kernel's split 8 -> 4 where a CTA gets <= 4 K chunks, >= 12 tiles.
#   base-smk1k:    smk4 + the small-M kernel from K = 1024 for 128 < M <= 512 (was 2048).
#   base-smk5k:    the small-M kernel on few-tile grids for 64 < M <= 128 up to K < 6144 (was <= 4096).
#   base-smk768:   smk4 + the small-M kernel from K = 768 for 64 < M <= 128 with < 32 tiles.
# Each sed must change exactly one line: the script checks with diff and stops otherwise.
set -eu
cd "$(git rev-parse --show-toplevel)"
P=tools/dev/pending
one() {  # one BASE FILE SED_EXPR [SOURCE]: $P/base-BASE/FILE = sed SED_EXPR SOURCE (default the tree's FILE)
  local dir=$P/base-$1/$(dirname "$2") src=${4:-$2}
  mkdir -p "$dir" && sed "$3" "$src" > "$P/base-$1/$2"
  [ "$(diff "$2" "$P/base-$1/$2" | grep -c '^[<>]')" -ge 1 ] || { echo "prep-s60: $1 changed nothing"; exit 1; }
}
one prewiden src/dispatch/fp8_rules.cpp \
  's|const bool long_k_wide = long_k && (2 \* ctas64 <= 3 \* sms \|\| N % 8 == 0);|const bool long_k_wide = long_k \&\& 2 * ctas64 <= 3 * sms;|'
one smk4 src/dispatch/dispatch.cpp \
  's|^    const int64_t ctas = tiles \* cfg.split_k;|    if (cfg.split_k == 8 \&\& tiles >= 12 \&\& ceil_div(chunks, 8) <= 4) cfg.split_k = 4;\n\0|'
one smk1k src/dispatch/dispatch.cpp 's|return K >= (M <= 128 ? 1024 : 2048) \&\&|return K >= 1024 \&\&|' $P/base-smk4/src/dispatch/dispatch.cpp
one smk5k src/dispatch/dispatch.cpp \
  's|(few \&\& K <= 4096));|(few \&\& K < (M <= 128 ? 6144 : 4097)));|'
one smk768 src/dispatch/dispatch.cpp \
  's|return K >= (M <= 128 ? 1024 : 2048) \&\&|return K >= (M > 128 ? 2048 : tiles64 < 32 ? 768 : 1024) \&\&|' $P/base-smk4/src/dispatch/dispatch.cpp
for b in prewiden smk4 smk1k smk5k smk768; do echo "== base-$b"; diff -r src "$P/base-$b/src" | grep '^[<>]' | grep -v '^< ' || true; done | head -20
