#!/usr/bin/env bash
# A/B of two versions of the library in one device call (the GPU machine has no git): the tree
# as built in build-device/ (run scripts/device-check.sh first) against a "base" copy of the
# tree in which every file under tools/dev/pending/base/ replaces the file at the same path,
# e.g. before the call:
#   mkdir -p tools/dev/pending/base/src/cuda
#   git show HEAD~1:src/cuda/gemm_gemv.cu > tools/dev/pending/base/src/cuda/gemm_gemv.cu
# It builds the base's CLI in /tmp/ab-tree/build, runs `mxfp4 bench --shapes SHAPES
# --no-baselines [BENCH_ARGS]` REPS times per build, interleaved (new, base, new, base, ...:
# drifts of the machine fall on both alike), and prints per shape the median of each build and
# new - base, flagging shapes whose result was not correct or whose path differs between the
# builds. Each run's bench files are kept as $OUT/logs/ab-NAME-{new,base}N.{json,md} (the
# summary reads the JSON that `mxfp4 bench` writes beside its table), the summary as
# $OUT/logs/ab-NAME.txt. Exit status 1 when a build or bench run failed or a result was not
# correct. Session 40 made its four comparisons with the same steps by hand (docs/perf-notes.md).
# AB_NEW_FILES=1 lets the overlay add files the tree lacks (a base with a file the tree removed).
# AB_BUILD_ONLY=1 only builds the base (e.g. while tests run); AB_PREBUILT=1 then reuses that
# build instead of copying and building again (the overlay must be the same).
# AB_OVERLAY=DIR takes the base's files from DIR instead of tools/dev/pending/base/, and
# AB_TREE=DIR builds the base in DIR instead of /tmp/ab-tree, so that several bases can be
# built side by side (e.g. AB_BUILD_ONLY=1 in the background) and A/B'd one after another.
# AB_ROTATE=1: rep i runs the shapes rotated by i - 1 lines (new and base alike), so that the
# medians span several process states (session 45: another order of the same shapes moved a
# difference by up to 0.4 us while one order repeated to 0.02); the summary's last column
# gives the range of the per-rep differences (new i - base i) either way.
# Usage (repository root, on the device): tools/dev/ab.sh NAME SHAPES REPS [BENCH_ARGS...]
#   e.g. tools/dev/ab.sh gemv tools/dev/shapes-gemv.txt 2 --weights-static
set -u
usage() { echo "usage: tools/dev/ab.sh NAME SHAPES REPS [BENCH_ARGS...] (REPS >= 1)"; exit 2; }
[ $# -ge 3 ] || usage
name=$1 shapes=$2 reps=$3
shift 3
[[ $reps =~ ^[1-9][0-9]*$ ]] || usage
o=${OUT:?set OUT}/logs
mkdir -p "$o"
overlay=${AB_OVERLAY:-tools/dev/pending/base}
[ -d "$overlay" ] || { echo "ab.sh: no $overlay/ (the base's files)"; exit 2; }
# AB_BUILD_ONLY builds only the base, so it may run beside the tree's own build.
[ "${AB_BUILD_ONLY:-0}" = 1 ] || [ -x build-device/mxfp4 ] ||
  { echo "ab.sh: build-device/mxfp4 missing (run scripts/device-check.sh first)"; exit 2; }
[ -f "$shapes" ] || { echo "ab.sh: no shapes file $shapes"; exit 2; }
tree=${AB_TREE:-/tmp/ab-tree}
if [ "${AB_PREBUILT:-0}" = 1 ] && [ -x "$tree/build/mxfp4" ]; then :; else
rm -rf "$tree" && mkdir -p "$tree"
tar cf - --exclude='./build*' . | tar xf - -C "$tree"
while IFS= read -r f; do
  [ -f "$tree/$f" ] || [ "${AB_NEW_FILES:-0}" = 1 ] ||
    { echo "ab.sh: $overlay/$f replaces no file of the tree (a typo? AB_NEW_FILES=1 adds it)"; exit 2; }
  cp "$overlay/$f" "$tree/$f"
done < <(cd "$overlay" && find . -type f)
(cd "$tree" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON &&
   cmake --build build --target mxfp4_cli -j "$(nproc)") > "$o/ab-$name-build.log" 2>&1 ||
  { echo "ab.sh: base build failed ($o/ab-$name-build.log)"; tail -20 "$o/ab-$name-build.log"; exit 1; }
fi
[ "${AB_BUILD_ONLY:-0}" = 1 ] && exit 0
failed=0
nshapes=$(grep -c . "$shapes")
for i in $(seq 1 "$reps"); do
  run_shapes=$shapes
  if [ "${AB_ROTATE:-0}" = 1 ] && [ "$nshapes" -gt 1 ]; then
    k=$(( (i - 1) % nshapes )) run_shapes=/tmp/ab-shapes-$name-$i.txt
    { grep . "$shapes" | tail -n +$((k + 1)); grep . "$shapes" | head -n "$k"; } > "$run_shapes"
  fi
  for v in new base; do
    bin=build-device/mxfp4
    [ $v = base ] && bin=$tree/build/mxfp4
    out=/tmp/ab-out-$v
    rm -rf "$out"
    # rc 1 with a bench file: a result was not correct (flagged in the summary); no file: a failure
    "$bin" bench --shapes "$run_shapes" --no-baselines --out-dir "$out" "$@" > "$o/ab-$name-$v$i.log" 2>&1
    rc=$?
    if compgen -G "$out/*.json" > /dev/null; then
      cp "$out"/*.json "$o/ab-$name-$v$i.json"
      cp "$out"/*.md "$o/ab-$name-$v$i.md"
    else
      echo "ab.sh: $v run $i wrote no bench file (rc=$rc, $o/ab-$name-$v$i.log)"
      failed=1
    fi
  done
done
python3 - "$o" "$name" "$reps" "$overlay" <<'EOF' | tee "$o/ab-$name.txt"
import json, statistics, sys
o, name, reps, overlay = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
times, paths, wrong, runs, order, per_rep = {}, {}, set(), {"new": 0, "base": 0}, [], {}
for v in ("new", "base"):
    for i in range(1, reps + 1):
        try:
            rows = json.load(open(f"{o}/ab-{name}-{v}{i}.json"))["rows"]
        except OSError:
            continue
        runs[v] += 1
        for r in rows:
            shape = f"{r['M']}x{r['N']}x{r['K']}"
            if shape not in order:
                order.append(shape)
            times.setdefault((shape, v), []).append(r["ours_us"])
            per_rep[(shape, v, i)] = r["ours_us"]
            paths.setdefault((shape, v), set()).add(r["path"])
            if not r["correct"]:
                wrong.add((shape, v))
print(f"# ab.sh {name}: median us of {runs['new']} new and {runs['base']} base runs, interleaved "
      f"(new = the tree, base = {overlay}/ over it)")
print(f"{'shape':>16} {'new':>8} {'base':>8} {'new-base':>9} {'per-rep range':>15}  notes")
for s in order:
    n, b = times.get((s, "new")), times.get((s, "base"))
    notes = [f"{v} not correct" for v in ("new", "base") if (s, v) in wrong]
    if paths.get((s, "new")) != paths.get((s, "base")):
        notes.append("paths differ: new " + "; ".join(sorted(paths.get((s, "new"), {"-"}))) +
                     ", base " + "; ".join(sorted(paths.get((s, "base"), {"-"}))))
    fmt = lambda x: f"{statistics.median(x):8.2f}" if x else f"{'-':>8}"
    diff = f"{statistics.median(n) - statistics.median(b):+9.2f}" if n and b else f"{'-':>9}"
    d = [per_rep[(s, "new", i)] - per_rep[(s, "base", i)] for i in range(1, reps + 1)
         if (s, "new", i) in per_rep and (s, "base", i) in per_rep]
    rng = f"{min(d):+.2f}..{max(d):+.2f}" if d else "-"
    print(f"{s:>16} {fmt(n)} {fmt(b)} {diff} {rng:>15}  {', '.join(notes)}")
sys.exit(1 if wrong else 0)
EOF
[ "${PIPESTATUS[0]}" = 0 ] || failed=1
exit $failed
