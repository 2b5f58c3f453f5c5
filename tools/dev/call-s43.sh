#!/usr/bin/env bash
# Session 43's device call 2: on an H200 first plan item w (tools/dev/pending/h200-first-call.sh:
# fast tests, bench default and --weights-static, tunes); on either GPU then what path fp8's
# fix-up launch costs when nothing is flagged: A/B of the tree against a base without the
# fp8_fixup launch (tools/dev/pending/base/src/cuda/gemm.cu; "new - base" = the launch's cost),
# 4 interleaved runs on the path fp8 workload shapes.
set -u
o=${OUT:?}; mkdir -p "$o/logs"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$o/logs/gpu.txt"
t0=$SECONDS
if grep -q H200 "$o/logs/gpu.txt"; then
  bash tools/dev/pending/h200-first-call.sh; mv "$o/all.tgz" "$o/h200.tgz"; mkdir -p "$o/logs"
  echo "h200 call $((SECONDS-t0)) s"
else
  OUT=$o/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { tail -40 "$o/logs/build.log"; exit 1; }
fi
printf '64 7168 2048\n128 2112 7168\n256 3072 1536\n256 7168 2048\n256 2880 512\n1024 7168 2048\n4 2880 512\n' > /tmp/ab.txt
OUT=$o tools/dev/ab.sh nofixup /tmp/ab.txt 4
echo "ab done $((SECONDS-t0)) s"
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null && rm -rf logs dc && mv /tmp/all.tgz .
