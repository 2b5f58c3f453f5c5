#!/usr/bin/env bash
# Session 35's last device call: plan item q's PUSH1 (split 2 through the cluster by a one-sided
# push) against the default, in one call: default build and bench of the M <= 64 workload
# shapes, then the -DMXFP4_EXP_PUSH1=1 build, its cluster split-K test and the same bench.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
final=${OUT:-$root/device-out}
work=$(mktemp -d)
shapes=$root/tools/dev/shapes-small-m.txt
OUT=$work scripts/device-check.sh --no-tests --bench-args "--shapes $shapes" > "$work/device-check.log" 2>&1
tail -n 4 "$work/device-check.log"
cmake -S . -B build-push1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DMXFP4_CUDA=ON \
  -DCMAKE_CUDA_FLAGS=-DMXFP4_EXP_PUSH1=1 > "$work/push1-build.log" 2>&1 && cmake --build build-push1 -j "$(nproc)" \
  >> "$work/push1-build.log" 2>&1 || { echo "push1 build failed"; tail -5 "$work/push1-build.log"; }
timeout 120 build-push1/mxfp4_tests --gtest_filter='GpuGemm.ClusterSplitKEverySplitAndTokenCount' --gtest_brief=1 \
  > "$work/push1-tests.log" 2>&1
echo "push1 tests rc=$?"
mkdir -p "$work/push1"
timeout 120 build-push1/mxfp4 bench --shapes "$shapes" --out-dir "$work/push1" > "$work/push1-bench.log" 2>&1
echo "== default"; grep -E '^\| [0-9]' "$work"/h200.md 2>/dev/null | cut -d'|' -f2-6,11
echo "== push1"; grep -E '^\| [0-9]' "$work"/push1/*.md 2>/dev/null | cut -d'|' -f2-6,11
mkdir -p "$final" && tar czf "$final/push1-call.tgz" -C "$work" .
