#!/usr/bin/env bash
# Session 48's first device call (~6-8 minutes). Run tools/dev/pending/prep-first-call.sh here
# first (it writes the overlay tools/dev/pending/base/ = the tree with
# tools/dev/pending/m256-64row-tiles.patch: path fp8 at M > 128 with few 128-row tiles and
# K >= 1024 on 64-row tiles, 8 warps).
# 1. A/B "m256": the tree against the overlay, 4 rotated reps (positive = the patch faster; the
#    bench checks each result). Controls: 256x2880x512 (K = 512) and 256x7168x2048 (128 x 128).
# 2. The rule fixed before the call: the patch lands when no result is flagged and no shape is
#    slower with it by more than 0.05 us (the spread of one shape at 5-13 us). Then the overlay
#    is copied over the tree here, and the Gpu* suite runs on it.
# 3. The workload bench, default and --weights-static, of the code that stands (landed or not)
#    into $OUT/results/ (commit as bench/results/ with that code).
# 4. If landed: memcheck, racecheck, synccheck on GpuSanitize.* (forces 64 x 128 with 8 warps).
# Logs in $OUT/logs.tgz. Usage (repository root, on the device; carry [".deps"]):
#   bash tools/dev/pending/first-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"
t0=$SECONDS
trap '(cd "$o" && tar czf logs.tgz logs && rm -rf logs); exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
printf '256 3072 1536\n256 2048 1536\n256 3072 1024\n256 3072 2048\n192 3072 1536\n256 2880 512\n256 7168 2048\n' > /tmp/ab-m256.txt
OUT=$o AB_BUILD_ONLY=1 tools/dev/ab.sh m256 /tmp/ab-m256.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait
[ $built = 0 ] || { tail -30 "$o/logs/build.log"; (cd "$o" && tar czf logs.tgz logs && rm -rf logs); exit 1; }
echo "builds $((SECONDS-t0)) s"; cat "$o/logs/ab-build.txt"
AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh m256 /tmp/ab-m256.txt 4; abrc=$?
echo "ab rc=$abrc $((SECONDS-t0)) s"
land=0
if [ $abrc = 0 ] && python3 - "$o/logs/ab-m256.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and l.split()[0][0].isdigit()]
slower = [r[0] for r in rows if r[3] != "-" and float(r[3]) < -0.05]  # new - base < -0.05: patch slower
print("patch slower at:", slower or "none")
sys.exit(1 if slower or not rows else 0)
PY
then land=1; fi
echo "land=$land"
if [ $land = 1 ]; then
  (cd tools/dev/pending/base && find . -type f) | while IFS= read -r f; do cp "tools/dev/pending/base/$f" "$f"; done
  OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --no-bench > "$o/logs/tests.log" 2>&1
  echo "tests (landed) rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED|rc=|SUMMARY" "$o/logs/tests.log" | tail -12
fi
build-device/mxfp4 bench --out-dir "$o/results" > "$o/logs/bench-default.log" 2>&1; echo "default rc=$?"
build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/logs/bench-static.log" 2>&1; echo "static rc=$?"
grep -h geomean "$o"/results/*.md
echo "benches done $((SECONDS-t0)) s"
if [ $land = 1 ]; then
  OUT=$o/logs/san bash scripts/device-check.sh --no-tests --no-bench --sanitizers memcheck,racecheck,synccheck > "$o/logs/sanitizers.log" 2>&1
  echo "sanitizers rc=$? $((SECONDS-t0)) s"; grep -E "rc=|SUMMARY" "$o/logs/sanitizers.log" | tail -8
fi
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
