#!/usr/bin/env bash
# The first device call of session 53 (written in session 52, whose budget ended before it ran;
# any Hopper GPU, ~4 minutes): path fp8 at 64 < M <= 128 on unsplit 64-row tiles while each
# CTA's K is short (tools/dev/pending/fp8-m128-unsplit.patch: K <= 2048; K <= 3072 where 64 x 64
# fills >= 3/4 of the SMs; K <= 4096 where 64 x 64 would not fit one wave and 64 x 128 runs,
# N % 8 == 0), against HEAD's split-K on 128-row tiles.
# Before the call, here (writes the untracked overlay):
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/fp8-m128-unsplit.patch tools/dev/pending/base-m128
# Session 52 calls 5-6's H200 tune predicts (us, new - base > 0 = the patch faster):
# 128x2880x2048 +2.4, 96x2048x2048 +0.6, 128x7168x2048 +3.2, 72x4096x2048 +1.4, 128x4096x3072
# +0.5, 96x7168x3072 +2.0, 128x7168x4096 +1.5, 80x2880x2048 ~+2; controls (paths unchanged)
# 128x2112x7168, 128x2880x3072, 96x4096x4096 ~0.
# It lands when no changed shape is slower with the patch by more than max(0.05 us, 0.5%) and
# their mean gain is > 0.3 us; then the overlay is copied over the device's tree and the Gpu*
# suite (3 shards) runs on it. If it lands: `git apply` the patch here, commit it with the logs
# (bench/results/logs/), update docs/dispatch.md and docs/perf-notes.md.
# Then a path fp8 tune for plan item b (docs/perf-notes.md).
# Logs in $OUT/logs.tgz. Usage (repository root, on the device; carry [".deps"]):
#   bash tools/dev/pending/next-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
ov=tools/dev/pending/base-m128
[ -d $ov ] || { echo "no $ov (run the prep line in the header here)"; pack; exit 2; }
ab=tools/dev/pending/shapes-m128-unsplit.txt
AB_OVERLAY=$ov AB_TREE=/tmp/ab-m128 AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh m128 $ab 1 > "$o/logs/ab-build-m128.txt" 2>&1 &
bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -30 "$o/logs/build.log" "$o/logs/ab-build-m128.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=$ov AB_TREE=/tmp/ab-m128 AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh m128 $ab 4
echo "ab rc=$? $((SECONDS-t0)) s"
land=0
if python3 - "$o/logs/ab-m128.txt" <<'PY'
import sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1]) if l.strip() and l.split()[0][0].isdigit()}
changed = ["128x2880x2048", "96x2048x2048", "128x7168x2048", "72x4096x2048", "128x4096x3072",
           "96x7168x3072", "128x7168x4096", "80x2880x2048"]
# new = the tree (HEAD), base = the patch: new - base < 0 means the patch slower
missing = [s for s in changed if s not in rows or rows[s][3] == "-"]
ok = [s for s in changed if s not in missing]
slower = [s for s in ok if float(rows[s][3]) < -max(0.05, 0.005 * float(rows[s][2]))]
gain = sum(float(rows[s][3]) for s in ok) / max(len(ok), 1)
print("missing:", missing or "none", "; patch slower at:", slower or "none", "; mean gain %.2f" % gain)
sys.exit(1 if missing or slower or gain <= 0.3 else 0)
PY
then land=1; fi
echo "land=$land"
[ $land = 1 ] && (cd $ov && find . -type f) | while IFS= read -r f; do cp "$ov/$f" "$f"; done
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "tests (land=$land) rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -8
# Plan item b's tune (~30 s; the tree as it stands after the landing step): 64 < M <= 128 under
# fp8_config_short_k (K = 1024, 1536) and between the patch's K bounds (2560, 5120, 6144), and
# M = 129-256 at K = 512.
for M in 72 128; do for N in 2880 4096 7168; do for K in 1024 1536 2560 5120 6144; do echo "$M $N $K"; done; done; done > /tmp/grid2.txt
printf '192 2880 512\n256 2880 512\n256 4096 512\n160 7168 512\n' >> /tmp/grid2.txt
MXFP4_TUNE_CACHE=/tmp/grid2.json timeout 120 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/grid2.txt > "$o/logs/tune-fp8-grid2.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep "dispatcher's choice" "$o/logs/tune-fp8-grid2.log" | grep -v "(1.0[01]x"
pack
