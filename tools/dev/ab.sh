#!/usr/bin/env bash
# A/B of two versions of the library in one device call (the GPU machine has no git): the tree
# as built in build-device/ (run scripts/device-check.sh first) against a "base" copy of the
# tree in which every file under tools/dev/pending/base/ replaces the file at the same path,
# e.g. before the call:
#   mkdir -p tools/dev/pending/base/src/cuda
#   git show HEAD~1:src/cuda/gemm_gemv.cu > tools/dev/pending/base/src/cuda/gemm_gemv.cu
# It builds the base's CLI in /tmp/ab-base/build, runs `mxfp4 bench --shapes SHAPES
# --no-baselines [BENCH_ARGS]` REPS times per build, interleaved (new, base, new, base, ...:
# drifts of the machine fall on both alike), and prints per shape the median of each build and
# new - base. Each run's bench file is kept as $OUT/logs/ab-NAME-{new,base}N.md, the summary as
# $OUT/logs/ab-NAME.txt. Session 40 made its four comparisons this way (docs/perf-notes.md).
# Usage (repository root, on the device): tools/dev/ab.sh NAME SHAPES REPS [BENCH_ARGS...]
#   e.g. tools/dev/ab.sh gemv tools/dev/shapes-gemv.txt 2 --weights-static
set -u
name=$1 shapes=$2 reps=$3
shift 3
o=${OUT:?set OUT}/logs
mkdir -p "$o"
[ -d tools/dev/pending/base ] || { echo "ab.sh: no tools/dev/pending/base/ (the base's files)"; exit 2; }
[ -x build-device/mxfp4 ] || { echo "ab.sh: build-device/mxfp4 missing (run scripts/device-check.sh first)"; exit 2; }
base=/tmp/ab-base
rm -rf "$base" && mkdir -p "$base"
tar cf - --exclude='./build*' . | tar xf - -C "$base"
(cd tools/dev/pending/base && find . -type f) | while read -r f; do cp "tools/dev/pending/base/$f" "$base/$f"; done
(cd "$base" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON &&
   cmake --build build --target mxfp4_cli -j "$(nproc)") > "$o/ab-$name-build.log" 2>&1 ||
  { echo "ab.sh: base build failed"; tail -20 "$o/ab-$name-build.log"; exit 1; }
for i in $(seq 1 "$reps"); do
  for v in new base; do
    bin=build-device/mxfp4
    [ $v = base ] && bin=$base/build/mxfp4
    rm -rf "/tmp/ab-$v" && "$bin" bench --shapes "$shapes" --no-baselines --out-dir "/tmp/ab-$v" "$@" \
      > "$o/ab-$name-$v$i.log" 2>&1 || echo "ab.sh: $v run $i rc=$?"
    for f in /tmp/ab-$v/*.md; do cp "$f" "$o/ab-$name-$v$i.md"; done
  done
done
python3 - "$o" "$name" "$reps" <<'EOF' | tee "$o/ab-$name.txt"
import re, statistics, sys
o, name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = {}  # (shape, version) -> [us]
order = []
for v in ("new", "base"):
    for i in range(1, reps + 1):
        try:
            lines = open(f"{o}/ab-{name}-{v}{i}.md").read().splitlines()
        except OSError:
            continue
        for line in lines:
            m = re.match(r"^\| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) \|", line)
            if m:
                shape = "x".join(m.groups()[:3])
                if shape not in order:
                    order.append(shape)
                times.setdefault((shape, v), []).append(float(m.group(4)))
print(f"# ab.sh {name}: median us over {reps} runs each, interleaved (new = the tree, base = tools/dev/pending/base/)")
print(f"{'shape':>16} {'new':>8} {'base':>8} {'new-base':>9}")
for s in order:
    n, b = times.get((s, "new")), times.get((s, "base"))
    if n and b:
        mn, mb = statistics.median(n), statistics.median(b)
        print(f"{s:>16} {mn:8.2f} {mb:8.2f} {mn - mb:+9.2f}")
EOF
