#!/usr/bin/env bash
# Session 52 call 2 (any Hopper GPU; ~5 minutes): path fp8's few-tile M > 128 rule with 64 x 128
# tiles for any N (the tree) against N % 128 == 0 only (base-disp = HEAD's dispatch.cpp), now
# that session 52's epilogue keeps tiles past N on the 16-byte stores.
# 1. Builds the tree and the base side by side.
# 2. A/B, 4 rotated reps, tools/dev/pending/shapes-row64-anyn.txt (8 shapes the change moves to
#    64 x 128, 2 controls it leaves: 256x3072x1536, 256x2944x1024).
# 3. Lands when every changed shape is no slower than max(0.05 us, 0.5%) and their mean gain
#    > 0.1 us; the controls are reported, not judged.
# 4. The Gpu* suite (3 shards) on the tree (always: the dispatcher changed).
# 5. A path fp8 tune of tail shapes in the other rules (K = 512, M <= 128) for the next change.
# Logs in $OUT/logs.tgz. Usage (repository root, on the device; carry [".deps"]):
#   bash tools/dev/pending/call2.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
ab=tools/dev/pending/shapes-row64-anyn.txt
AB_OVERLAY=tools/dev/pending/base-disp AB_TREE=/tmp/ab-disp AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh disp $ab 1 > "$o/logs/ab-build-disp.txt" 2>&1 &
bp=$!
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
wait $bp; bb=$?
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built base rc=$bb"; tail -30 "$o/logs/build.log" "$o/logs/ab-build-disp.txt"; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
AB_OVERLAY=tools/dev/pending/base-disp AB_TREE=/tmp/ab-disp AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh disp $ab 4
echo "ab rc=$? $((SECONDS-t0)) s"
python3 - "$o/logs/ab-disp.txt" <<'PY'
import sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1]) if l.strip() and l.split()[0][0].isdigit()}
changed = ["256x2880x1024", "256x3008x1024", "256x2240x2048", "256x2880x2048", "256x2400x1024",
           "192x2880x1536", "256x4000x1024"]
# new = the tree (the change), base = HEAD: new - base < 0 means the change faster
missing = [s for s in changed if s not in rows or rows[s][3] == "-"]
ok = [s for s in changed if s not in missing]
slower = [s for s in ok if float(rows[s][3]) > max(0.05, 0.005 * float(rows[s][2]))]
gain = -sum(float(rows[s][3]) for s in ok) / max(len(ok), 1)
print("missing:", missing or "none", "; change slower at:", slower or "none", "; mean gain %.2f" % gain)
print("land=%d" % (0 if missing or slower or gain <= 0.1 else 1))
PY
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -8
pack
