#!/usr/bin/env bash
# The first device call of session 52 (written in session 51, whose budget went to failed
# starts after call 1; ~7-9 minutes, any Hopper GPU; say which in the notes). Path fp8's
# epilogue, three patches against HEAD (docs/perf-notes.md, Session 51):
#   v4 = fp8-epilogue-v4.patch: the 16-byte-store path takes tiles past N (N % 8 == 0) and
#        past M, each store predicated on its row and 8-column group (no branch, no second
#        store loop), and the checked store_pair path, left for NaN / fp32 C / unaligned C /
#        N % 8 != 0, is rolled over a local copy of the accumulators (the 128 x 128 kernel:
#        4520 -> 2464 instructions; the fast stores now ~3 KB after the K loop, not ~35 KB);
#   rolled = fp8-epilogue-fallback-rolled.patch: only the rolled store_pair path (is code that
#        never runs in the tile loop what costs full tiles? session 51 call 1 says v2's loss
#        came with its code);
#   v3 = fp8-epilogue-predicated.patch: only the predicated stores past N.
# Before the call, here (writes the untracked overlays):
#   for v in v4:v4 fallback-rolled:rolled predicated:v3; do bash tools/dev/pending/prep-first-call.sh \
#     tools/dev/pending/fp8-epilogue-${v%%:*}.patch tools/dev/pending/base-${v##*:}; done
# Steps:
# 1. Builds: the tree (HEAD) and the three bases side by side.
# 2. A/B v4 (4 rotated reps; new = HEAD, base = the patch: new - base > 0 = the patch faster) on
#    tools/dev/pending/shapes-epilogue-ab.txt (half-empty last tiles, full-tile controls, M tails).
# 3. v4 lands when no result is flagged, no control (1024x2944x2048, 1024x7168x2048,
#    256x3072x1536, 4096x7168x2048) and no M-tail shape (1000x7168x2048, 40x7168x2048,
#    200x3072x1536) is slower with it by more than max(0.05 us, 0.5%), and 1024x2880x2048 is
#    faster by > 0.5 us. Then its overlay is copied over the tree.
# 4. A/B rolled, then v3 (3 rotated reps each), for attribution only.
# 5. The Gpu* suite (3 shards) and memcheck on the code that stands; a failure ends the call.
# 6. If landed: a path fp8 tune of three few-tile M = 256 shapes with N % 128 != 0 (the
#    dispatcher gives them 128 x 64 because 64 x 128 lost there before).
# 7. The workload bench, default and --weights-static, of the code that stands into
#    $OUT/results/ (commit as bench/results/ with that code).
# Steps 4, 6 and 7 start only while fewer than STOP_AFTER seconds (default 400) have passed.
# Logs in $OUT/logs.tgz. Usage (repository root, on the device; carry [".deps"]):
#   [STOP_AFTER=SECONDS] bash tools/dev/pending/next-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"
t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
time_left() { [ $((SECONDS - t0)) -lt "${STOP_AFTER:-400}" ] || { echo "skipped after $((SECONDS-t0)) s: $1"; false; }; }
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
ab=tools/dev/pending/shapes-epilogue-ab.txt
for v in v4 rolled v3; do
  [ -d tools/dev/pending/base-$v ] || { echo "no tools/dev/pending/base-$v (run the prep line in the header here)"; pack; exit 2; }
done
pids=""
for v in v4 rolled v3; do
  AB_OVERLAY=tools/dev/pending/base-$v AB_TREE=/tmp/ab-$v AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh $v $ab 1 > "$o/logs/ab-build-$v.txt" 2>&1 &
  pids="$pids $!"
done
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
base_built=0
for p in $pids; do wait $p || base_built=1; done
[ $built = 0 ] && [ $base_built = 0 ] ||
  { echo "build rc=$built, base builds rc=$base_built"; tail -30 "$o/logs/build.log" "$o"/logs/ab-build-*.txt; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
abv() {  # NAME REPS: A/B of the tree against base-NAME, prebuilt
  AB_OVERLAY=tools/dev/pending/base-$1 AB_TREE=/tmp/ab-$1 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh "$1" $ab "$2"
}
abv v4 4; abrc=$?
echo "ab v4 rc=$abrc $((SECONDS-t0)) s"
land=0
if [ $abrc = 0 ] && python3 - "$o/logs/ab-v4.txt" <<'PY'
import sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1]) if l.strip() and l.split()[0][0].isdigit()}
kept = ["1024x2944x2048", "1024x7168x2048", "256x3072x1536", "4096x7168x2048",
        "1000x7168x2048", "40x7168x2048", "200x3072x1536"]
# columns: shape new base new-base; new = the tree (no patch), so new - base < 0: patch slower
missing = [s for s in kept + ["1024x2880x2048"] if s not in rows or rows[s][3] == "-"]
slower = [s for s in kept if s not in missing and float(rows[s][3]) < -max(0.05, 0.005 * float(rows[s][2]))]
gain = 0.0 if "1024x2880x2048" in missing else float(rows["1024x2880x2048"][3])
print("missing:", missing or "none", "; patch slower at:", slower or "none", "; gain at 1024x2880x2048:", gain)
sys.exit(1 if missing or slower or gain <= 0.5 else 0)
PY
then land=1; fi
echo "land=$land"
for v in rolled v3; do
  time_left "ab $v" && { abv $v 3; echo "ab $v rc=$? $((SECONDS-t0)) s"; }
done
[ $land = 1 ] && (cd tools/dev/pending/base-v4 && find . -type f) | while IFS= read -r f; do cp "tools/dev/pending/base-v4/$f" "$f"; done
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench --sanitizers memcheck > "$o/logs/tests.log" 2>&1
tests=$?
echo "tests + memcheck (land=$land) rc=$tests $((SECONDS-t0)) s"; grep -E "PASSED|FAILED|rc=|SUMMARY" "$o/logs/tests.log" | tail -12
[ $tests = 0 ] || { echo "tests failed: no tune, no benches"; pack; exit 1; }
if [ $land = 1 ] && time_left "tune"; then
  printf '256 2880 1024\n256 3008 1024\n256 2240 2048\n' > /tmp/ntail-tune.txt
  MXFP4_TUNE_CACHE=/tmp/ntail.json timeout 100 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/ntail-tune.txt > "$o/logs/tune-ntail.log" 2>&1
  grep -B1 "dispatcher's choice" "$o/logs/tune-ntail.log"; grep "block_n=128 block_m=64 split_k=1 warps=8" "$o/logs/tune-ntail.log"
fi
if time_left "default bench"; then
  build-device/mxfp4 bench --out-dir "$o/results" > "$o/logs/bench-default.log" 2>&1; echo "default rc=$?"
fi
if time_left "static bench"; then
  build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/logs/bench-static.log" 2>&1; echo "static rc=$?"
fi
grep -h geomean "$o"/results/*.md
echo "done $((SECONDS-t0)) s"
pack
