#!/usr/bin/env bash
# The next session's first device call (written in session 46 as its call 2, never run: every
# machine start after call 1 failed; ~7 minutes; run tools/dev/pending/prep-first-call.sh here
# first): the workload bench of the landed code
# (39922bf: path fp8's FIX kernels without split-K code; bench/results/*.md predate it), default
# and --weights-static, into $OUT/results/ (commit them as bench/results/), with the
# GPU's clocks, temperature, power and throttle reasons sampled every 100 ms meanwhile (item m:
# call 1 found that a shape runs 2-4% slower the later it comes in a bench run, whatever the
# workspace; clocks falling as the GPU warms would explain it). On an H200 it then runs
# tools/dev/pending/h200-first-call.sh (item w's tunes). Logs in $OUT/logs.tgz. Then
# first-call-tests-tune.sh: the Gpu* suite, an fp8 tune and plan item d's A/B, in the same call.
# Usage (repository root, on the device; carry [".deps"]): bash tools/dev/pending/first-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs" "$o/results"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
t0=$SECONDS
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active \
  --format=csv -lms 100 > "$o/logs/clocks.csv" 2>&1 &
mon=$!
echo "default start $(date +%T.%N)" > "$o/logs/marks.txt"
build-device/mxfp4 bench --out-dir "$o/results" > "$o/logs/bench-default.log" 2>&1; echo "default rc=$?"
echo "static start $(date +%T.%N)" >> "$o/logs/marks.txt"
build-device/mxfp4 bench --weights-static --out-dir "$o/results" > "$o/logs/bench-static.log" 2>&1; echo "static rc=$?"
echo "end $(date +%T.%N)" >> "$o/logs/marks.txt"
kill $mon
grep -h geomean "$o"/results/*.md
python3 - "$o/logs/clocks.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))[1:]
def num(s):
    try: return float(s.strip().split()[0])
    except Exception: return None
sm = [num(r[1]) for r in rows if len(r) > 5]; t = [num(r[3]) for r in rows if len(r) > 5]; p = [num(r[4]) for r in rows if len(r) > 5]
th = sorted({r[5].strip() for r in rows if len(r) > 5})
n = len(sm); q = max(n // 10, 1)
print("samples", n, "sm MHz first/last tenth", sum(x for x in sm[:q] if x) / q, sum(x for x in sm[-q:] if x) / q,
      "min", min(x for x in sm if x), "temp C", t[0], max(x for x in t if x), "power W max", max(x for x in p if x), "throttle", th)
PY
echo "benches $((SECONDS-t0)) s"
h200=0; grep -q H200 "$o/logs/gpu0.txt" && h200=1
(cd "$o" && tar czf logs.tgz logs && rm -rf logs)
# Then, in the same call (one machine start fewer): the Gpu* suite and the fp8 tune.
OUT=$o/c3 bash tools/dev/pending/first-call-tests-tune.sh
if [ $h200 = 1 ]; then OUT=$o/h200 bash tools/dev/pending/h200-first-call.sh; fi
