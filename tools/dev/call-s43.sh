#!/usr/bin/env bash
# Session 43's device call 1 (plan items x, t, u): build; at once the whole Gpu* suite in 4
# shards and the A/B base's build (tools/dev/pending/base/ = push at split >= 4 in path splitk);
# then memcheck/racecheck/synccheck, the workload bench (default and --weights-static), and the
# A/B of push only at split >= 8 (path splitk) on session 42 call 5's shapes, 4 interleaved runs.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
t0=$SECONDS
OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
printf '16 3072 1536\n16 7168 4096\n16 2880 2880\n12 4096 2048\n16 2112 2048\n10 5120 3072\n16 4096 1536\n16 7168 2048\n32 4096 512\n64 3072 1536\n' > /tmp/ab.txt
AB_BUILD_ONLY=1 OUT=$o tools/dev/ab.sh push8 /tmp/ab.txt 1 > "$o/logs/ab-build.txt" 2>&1 &
OUT=$o/dc bash scripts/device-check.sh --filter 'Gpu*' --shards 4 --no-bench > "$o/logs/tests.log" 2>&1
echo "tests $((SECONDS-t0)) s"
wait
OUT=$o/dc bash scripts/device-check.sh --no-tests --sanitizers memcheck,racecheck,synccheck > "$o/logs/san-bench.log" 2>&1
echo "sanitizers+bench $((SECONDS-t0)) s"
build-device/mxfp4 bench --weights-static --out-dir $o/dc/static > $o/logs/static-bench.log 2>&1
cat "$o/logs/ab-build.txt"
AB_PREBUILT=1 OUT=$o tools/dev/ab.sh push8 /tmp/ab.txt 4
echo "ab done $((SECONDS-t0)) s"
if grep -q H200 "$o/logs/gpu.txt"; then  # plan item w's split 1 against 2 at K = 512
  printf '32 4096 512\n64 2880 512\n24 2880 512\n48 4096 512\n64 7168 512\n32 4096 1024\n' > /tmp/k512.txt
  MXFP4_TUNE_CACHE=/tmp/tune.json timeout 150 build-device/mxfp4 tune --verbose --paths splitk --shapes /tmp/k512.txt > $o/logs/tune-splitk-k512-h200.log 2>&1; echo tune rc=$?
fi
tail -25 "$o/logs/tests.log"; tail -12 "$o/logs/san-bench.log"; grep geomean $o/dc/static/*.md
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
