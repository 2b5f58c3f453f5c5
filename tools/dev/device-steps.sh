#!/usr/bin/env bash
# One device call (a measurement aid for the GPU machine's `run`, which returns at most 8
# files): scripts/device-check.sh with the given options (build, tests, sanitizers, bench,
# timeline: its own options and logs, under $OUT/dc), then each further argument in order, then
# everything packed into $OUT/all.tgz. Further arguments: `split` builds and runs
# tools/dev/probes/call_split.cu on the splitk decode shapes and the fp8 shapes of M 128-1024; anything else runs as a shell
# command. $FAST holds the fast GPU test filter (~60 s) for --filter. It ends in a negative
# pattern, so more tests go in front of it, not after it ('-' turns every later pattern
# negative: session 15's "$FAST:GpuSanitize*" skipped GpuSanitize): --filter "GpuFp8*:$FAST".
# Usage: tools/dev/device-steps.sh 'DEVICE_CHECK_OPTIONS' [split] [COMMAND...]
#   e.g. tools/dev/device-steps.sh '--filter "$FAST" --sanitizers racecheck' split "nvidia-smi"
#   (OPTIONS is one line: it is evaluated as device-check.sh's command line)
set -u
o=${OUT:?set OUT}
mkdir -p "$o/logs"
FAST='GpuGemm*:GpuCanary*:GpuConcurrency*:GpuQuant*:GpuAlignment*:Gpu64*-GpuGemm.WorkloadShapesEveryPathWithinContract'
export FAST
echo "== device-check.sh $1 $(date +%T)"
eval "OUT=\$o/dc bash scripts/device-check.sh $1" > "$o/logs/device-check.log" 2>&1
echo "rc=$?"
sed -n '/^== summary/,$p' "$o/logs/device-check.log"
shift
for st in "$@"; do
  echo "== $st $(date +%T)"
  case $st in
    split)
      tools/dev/call-split.sh build-device "" 16 2112 7168 32 4096 512 64 7168 2048 64 2880 512 8 2112 7168 \
        16 3072 1536 64 3072 1536 128 2112 7168 256 2880 512 256 3072 1536 256 7168 2048 1024 7168 2048 \
        > "$o/logs/call_split.log" 2>&1
      cat "$o/logs/call_split.log" ;;
    *) eval "$st" ;;
  esac
done
cd "$o" && tar czf /tmp/all.tgz logs dc 2>/dev/null; rm -rf "${o:?}"/logs "${o:?}"/dc; mv /tmp/all.tgz "$o/"
