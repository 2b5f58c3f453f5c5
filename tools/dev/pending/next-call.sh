#!/usr/bin/env bash
# The first device call of session 53 (written in session 52, whose budget ended first; any
# Hopper GPU, ~6-7 minutes). Three A/Bs (new = the tree, base = an overlay; new - base > 0
# means the overlay faster), each with a landing rule fixed here:
#  m128  = fp8-m128-unsplit.patch: 64 < M <= 128 on unsplit 64-row tiles while each CTA's K is
#          short (K <= 2048; K <= 3072 where 64 x 64 fills >= 3/4 of the SMs; K <= 4096 where
#          64 x 64 would not fit and 64 x 128 runs, N % 8 == 0). Session 52 calls 5-6's tune
#          predicts +0.5 to +3.2 us on its 8 shapes, controls ~0.
#  prev4 = path fp8's epilogue before v4 (a5de5ab^), fp32 C only (`mxfp4 bench --out-dtype f32`,
#          new in 546ccd9, first GPU run here): how much v4's rolled store path costs fp32 C,
#          where every tile takes it (the reviewer's finding; predicted ~5 us per tile round:
#          1024x7168x2048 -15 to -20 us for the tree). Attribution only.
#  v5    = fp8-epilogue-v5-f32.patch: fp32 C with 8-byte stores on its own unrolled, predicated
#          path (+96 to +192 SASS instructions per kernel, no register change). Predicted: fp32
#          shapes back to or below prev4's times; bf16 full tiles unchanged if ~190 instructions
#          cost nothing (v2's 567 cost ~0.5 us per tile round).
# Before the call, here (writes the untracked overlays):
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/fp8-m128-unsplit.patch tools/dev/pending/base-m128
#   bash tools/dev/pending/prep-first-call.sh tools/dev/pending/fp8-epilogue-v5-f32.patch tools/dev/pending/base-v5
#   mkdir -p tools/dev/pending/base-prev4/src/cuda && for f in gemm_fp8_kernel.cuh common.cuh; do
#     git show a5de5ab^:src/cuda/$f > tools/dev/pending/base-prev4/src/cuda/$f; done
# Rules: m128 lands when no changed shape is slower with it by more than max(0.05 us, 0.5%) and
# their mean gain > 0.3 us. v5 lands when its fp32 A/B gains > 1 us on average with no shape
# slower by more than max(0.05 us, 0.5%), and its bf16 A/B has no shape slower by more than
# max(0.05 us, 0.5%). Landed overlays are copied over the device's tree, then the Gpu* suite
# (3 shards) and cli_pytest (ctest -R cli: bench --out-dtype f32 on the GPU) run on it; then a
# path fp8 tune for plan item b. If one lands: `git apply` its patch here, commit with the logs.
# Logs in $OUT/logs.tgz. Usage (repository root, on the device; carry [".deps"]):
#   bash tools/dev/pending/next-call.sh
set -u
o=${OUT:?}; mkdir -p "$o/logs"
t0=$SECONDS
pack() { (cd "$o" && tar czf logs.tgz logs && rm -rf logs); }
trap 'pack; exit 124' TERM
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu0.txt"
P=tools/dev/pending
for v in m128 v5 prev4; do [ -d $P/base-$v ] || { echo "no $P/base-$v (run the prep lines in the header here)"; pack; exit 2; }; done
pids=""
for v in m128 v5 prev4; do
  AB_OVERLAY=$P/base-$v AB_TREE=/tmp/ab-$v AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh $v $P/shapes-f32-ab.txt 1 > "$o/logs/ab-build-$v.txt" 2>&1 &
  pids="$pids $!"
done
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1; built=$?
bb=0; for p in $pids; do wait $p || bb=1; done
[ $built = 0 ] && [ $bb = 0 ] || { echo "build rc=$built bases rc=$bb"; tail -20 "$o/logs/build.log" "$o"/logs/ab-build-*.txt; pack; exit 1; }
echo "builds $((SECONDS-t0)) s"
abv() {  # NAME OVERLAY SHAPES REPS [BENCH_ARGS]: prebuilt base of OVERLAY
  local name=$1 ov=$2 sh=$3 reps=$4; shift 4
  AB_OVERLAY=$P/base-$ov AB_TREE=/tmp/ab-$ov AB_ROTATE=1 AB_PREBUILT=1 OUT=$o tools/dev/ab.sh $name $sh $reps "$@"
  echo "ab $name rc=$? $((SECONDS-t0)) s"
}
judge() {  # SUMMARY MIN_MEAN_GAIN SHAPE...: exit 0 when no listed shape is slower with the overlay
  python3 - "$@" <<'PY'
import sys
path, need, shapes = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
rows = {l.split()[0]: l.split() for l in open(path) if l.strip() and l.split()[0][0].isdigit()}
missing = [s for s in shapes if s not in rows or rows[s][3] == "-"]
ok = [s for s in shapes if s not in missing]
slower = [s for s in ok if float(rows[s][3]) < -max(0.05, 0.005 * float(rows[s][2]))]
gain = sum(float(rows[s][3]) for s in ok) / max(len(ok), 1)
print(path.split("/")[-1], "missing:", missing or "none", "; overlay slower at:", slower or "none", "; mean gain %.2f" % gain)
sys.exit(1 if missing or slower or gain <= need else 0)
PY
}
abv m128 m128 $P/shapes-m128-unsplit.txt 4
land_m128=0
judge "$o/logs/ab-m128.txt" 0.3 128x2880x2048 96x2048x2048 128x7168x2048 72x4096x2048 128x4096x3072 \
  96x7168x3072 128x7168x4096 80x2880x2048 && land_m128=1
abv prev4-f32 prev4 $P/shapes-f32-ab.txt 3 --out-dtype f32
abv v5-f32 v5 $P/shapes-f32-ab.txt 3 --out-dtype f32
abv v5-bf16 v5 $P/shapes-v5-bf16-ab.txt 4
land_v5=0
judge "$o/logs/ab-v5-f32.txt" 1.0 1024x7168x2048 256x7168x2048 64x7168x2048 4096x7168x2048 1024x2880x2048 256x3072x1536 &&
  judge "$o/logs/ab-v5-bf16.txt" -1000 1024x7168x2048 4096x7168x2048 1024x2944x2048 256x3072x1536 64x7168x2048 \
    256x7168x2048 1024x2880x2048 1000x7168x2048 && land_v5=1
echo "land_m128=$land_m128 land_v5=$land_v5"
for v in m128 v5; do
  eval l=\$land_$v
  [ "$l" = 1 ] && (cd $P/base-$v && find . -type f) | while IFS= read -r f; do cp "$P/base-$v/$f" "$f"; done
done
OUT=$o/logs/dc2 bash scripts/device-check.sh --filter 'Gpu*' --shards 3 --test-timeout 150 --no-bench > "$o/logs/tests.log" 2>&1
echo "Gpu* tests rc=$? $((SECONDS-t0)) s"; grep -E "PASSED|FAILED" "$o/logs/tests.log" | tail -8
(cd build-device && timeout 120 ctest -R cli --output-on-failure > "$o/logs/ctest-cli.log" 2>&1); echo "ctest cli rc=$? $((SECONDS-t0)) s"
tail -3 "$o/logs/ctest-cli.log"
# Plan item b's tune (~30 s; the tree as it stands now): 64 < M <= 128 under fp8_config_short_k
# (K = 1024, 1536) and between the m128 rule's K bounds (2560, 5120, 6144), M = 160-256 at K = 512.
for M in 72 128; do for N in 2880 4096 7168; do for K in 1024 1536 2560 5120 6144; do echo "$M $N $K"; done; done; done > /tmp/grid2.txt
printf '192 2880 512\n256 2880 512\n256 4096 512\n160 7168 512\n' >> /tmp/grid2.txt
MXFP4_TUNE_CACHE=/tmp/grid2.json timeout 120 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/grid2.txt > "$o/logs/tune-fp8-grid2.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep "dispatcher's choice" "$o/logs/tune-fp8-grid2.log" | grep -v "(1.0[01]x"
pack
