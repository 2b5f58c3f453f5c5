#!/usr/bin/env bash
# The next session's first device call (written at the end of session 45), ~2.5 minutes. Run
# tools/dev/pending/prep-first-call.sh HERE first (it writes the untracked overlay
# tools/dev/pending/hyb/: the tree with tools/dev/pending/fix-nosplit-code.patch, plan item d,
# and fixup-stage-block.patch, the fix-up's staging as one helper).
#   - builds, at once, the tree (build-device) and the patched tree (/tmp/ab-tree/build, every
#     target: tools/dev/ab.sh's base with AB_PREBUILT=1);
#   - at once, for both builds: the whole Gpu* suite in 3 shards and memcheck / racecheck /
#     synccheck on GpuSanitize.GemmEveryPathSmall (plan item t: since 77b8ba1 it has truly
#     flagged lines, B row 11 and A row 5, and so reaches path fp8's exact fix-up in the FIX
#     kernels and in fp8_fixup_kernel; never run on a GPU);
#   - A/B "nosplit" (new = the tree, base = the patch: new - base positive = the patch faster)
#     on the four FIX workload shapes, a persistent one and a control, 6 reps;
#   - on an H200 only: the tree's workload bench, default and --weights-static (plan item w:
#     bench/results/h200.md is session 36's run).
# Logs go into $OUT/logs.tgz (a run returns at most ~20 files); the summary is printed.
# Usage (repository root, on the device): bash tools/dev/pending/first-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
[ -f tools/dev/pending/hyb/DELETED ] || { echo "run tools/dev/pending/prep-first-call.sh first"; exit 2; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
tree=/tmp/ab-tree
rm -rf "$tree" && mkdir -p "$tree"
tar cf - --exclude='./build*' --exclude='./tools/dev/pending/hyb' . | tar xf - -C "$tree"
(cd tools/dev/pending/hyb && find . -type f ! -name DELETED) | while read -r f; do cp "tools/dev/pending/hyb/$f" "$tree/$f"; done
while read -r f; do rm -f "$tree/$f"; done < tools/dev/pending/hyb/DELETED
(cd "$tree" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON &&
   cmake --build build -j 16) > "$o/logs/patch-build.log" 2>&1 &
pb=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
wait $pb || { echo "patched build failed"; tail -30 "$o/logs/patch-build.log"; }
echo "builds $((SECONDS-t0)) s"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for b in tree patch; do
  bin=build-device/mxfp4_tests; [ $b = patch ] && bin=$tree/build/mxfp4_tests
  for i in 0 1 2; do
    GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 300 $bin --gtest_filter='Gpu*' --gtest_brief=1 \
      > "$o/logs/tests-$b-$i.log" 2>&1 &
  done
  for tool in memcheck racecheck synccheck; do
    ( timeout 240 "$san" --tool $tool --error-exitcode 9 --print-limit 20 $bin \
        --gtest_filter='GpuSanitize.GemmEveryPathSmall' --gtest_brief=1
      echo "===== $tool rc=$?" ) > "$o/logs/san-$b-$tool.log" 2>&1 &
  done
done
wait
echo "tests done $((SECONDS-t0)) s"
for b in tree patch; do
  echo "== $b"
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$o"/logs/tests-$b-*.log
  grep -hB5 "Failure" "$o"/logs/tests-$b-*.log | head -30
  grep -hE "^===== .* rc=|ERROR SUMMARY|RACECHECK SUMMARY" "$o"/logs/san-$b-*.log
done
mkdir -p tools/dev/pending/base
printf '64 7168 2048\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4 2880 512\n' > /tmp/ab.txt
AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh nosplit /tmp/ab.txt 6
echo "ab done $((SECONDS-t0)) s"
# Item m: does the cached workspace make a shape's time depend on the order? The tree's bench,
# shapes forward and reversed, cached workspace vs --own-workspace (per-shape), 2 reps each.
printf '64 7168 2048\n256 7168 2048\n1024 7168 2048\n4096 7168 2048\n16 2112 7168\n128 2112 7168\n4 2880 512\n' > /tmp/ord-fwd.txt
tac /tmp/ord-fwd.txt > /tmp/ord-rev.txt
for rep in 1 2; do for ws in cached own; do for ord in fwd rev; do
  flag=; [ $ws = own ] && flag=--own-workspace
  build-device/mxfp4 bench --shapes /tmp/ord-$ord.txt --no-baselines $flag --out-dir /tmp/ord-out > /dev/null 2>&1
  cp /tmp/ord-out/*.json "$o/logs/ord-$ws-$ord-$rep.json"
done; done; done
python3 - "$o/logs" <<'PY' | tee "$o/logs/order.txt"
import json, sys, glob, collections
t = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + "/ord-*.json")):
    tag = f.rsplit("/", 1)[1][4:-5]
    for r in json.load(open(f))["rows"]:
        t[(r["M"], r["N"], r["K"])][tag] = r["ours_us"]
for s, d in t.items():
    line = "%-16s" % ("x".join(map(str, s)))
    for ws in ("cached", "own"):
        v = [d[k] for k in sorted(d) if k.startswith(ws)]
        line += "  %s: %s (range %.2f)" % (ws, " ".join("%.2f" % x for x in v), max(v) - min(v))
    print(line)
PY
echo "order done $((SECONDS-t0)) s"
# Item b (gemv's grid imbalance): slab counts that are multiples of 132 (every SM the same work)
# beside the workload's M = 1 shapes; if 1x8448x2048 (528 slabs, 4 per SM) takes about what
# 1x7168x2048 (448, 3.39 per SM on average, 4 on the busiest) does, balance would gain ~15%.
printf '1 2112 2880\n1 2880 2880\n1 4224 2880\n1 6336 2048\n1 7168 2048\n1 8448 2048\n1 4224 2048\n' > /tmp/bal.txt
for rep in 1 2; do
  build-device/mxfp4 bench --shapes /tmp/bal.txt --no-baselines --out-dir /tmp/bal-out > /dev/null 2>&1
  cp /tmp/bal-out/*.md "$o/logs/balance-$rep.md"
done
grep -h "^| *1 " "$o"/logs/balance-*.md
echo "balance done $((SECONDS-t0)) s"
if grep -q H200 "$o/logs/gpu0.txt"; then
  build-device/mxfp4 bench --out-dir "$o/default" > "$o/logs/bench-default.log" 2>&1
  build-device/mxfp4 bench --weights-static --out-dir "$o/static" > "$o/logs/bench-static.log" 2>&1
  grep -h geomean "$o"/default/*.md "$o"/static/*.md
  echo "h200 bench $((SECONDS-t0)) s"
fi
rm -rf tools/dev/pending/base
cd "$o" && tar czf logs.tgz logs && rm -rf logs
