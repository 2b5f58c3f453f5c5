#!/usr/bin/env bash
# The next session's first device call (written in session 47, whose budget ended first).
# A/B "m256" (~2.5 minutes): the tree against tools/dev/pending/m256-64row-tiles.patch (path fp8
# at M > 128 with few 128-row tiles and K >= 1024 on 64-row tiles, 8 warps; run
# tools/dev/pending/prep-first-call.sh here first). 4 rotated reps; positive = the patch faster;
# the bench checks each result (a wrong one is flagged). Controls: 256x2880x512 (K = 512,
# unchanged) and 256x7168x2048 (128 x 128, unchanged). Logs in $OUT/logs.tgz.
# On an H200 it first runs the workload bench, default and --weights-static, into $OUT/results/
# (bench/results/h200{,-static}.md are session 36's code: commit these with the code), ~1 min more.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/first-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
t0=$SECONDS
trap '(cd "$o" && tar czf logs.tgz logs && rm -rf logs); exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
printf '256 3072 1536\n256 2048 1536\n256 3072 1024\n256 3072 2048\n192 3072 1536\n256 2880 512\n256 7168 2048\n' > /tmp/ab-m256.txt
OUT=$o AB_BUILD_ONLY=1 tools/dev/ab.sh m256 /tmp/ab-m256.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait
[ $built = 0 ] || { tail -30 "$o/logs/build.log"; (cd "$o" && tar czf logs.tgz logs && rm -rf logs); exit 1; }
echo "builds $((SECONDS-t0)) s"; cat "$o/logs/ab-build.txt"
if grep -q H200 "$o/logs/gpu0.txt"; then
  mkdir -p "$o/results"
  build-device/mxfp4 bench --out-dir "$o/results" > "$o/logs/bench-default.log" 2>&1; echo "default rc=$?"
  build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/logs/bench-static.log" 2>&1; echo "static rc=$?"
  grep -h geomean "$o"/results/*.md
fi
AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh m256 /tmp/ab-m256.txt 4
echo "ab rc=$? $((SECONDS-t0)) s"
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
