set -u
o=${OUT:?}; mkdir -p "$o/logs"; t0=$SECONDS
OUT=$o/logs/dc bash scripts/device-check.sh --no-tests --no-bench > "$o/logs/build.log" 2>&1 || { echo build failed; tail -5 "$o/logs/build.log"; exit 1; }
echo "build $((SECONDS-t0)) s"
for M in 192 256 384; do for N in 1600 1792 2112; do for K in 4096 7168; do echo "$M $N $K"; done; done; done > /tmp/t-b.txt
MXFP4_TUNE_CACHE=/tmp/tb.json timeout 100 build-device/mxfp4 tune --verbose --paths fp8 --shapes /tmp/t-b.txt > "$o/logs/tune-fp8-m256-midtiles-call10-session54.log" 2>&1
echo "tune rc=$? $((SECONDS-t0)) s"; grep -B1 "dispatcher's choice" "$o/logs/tune-fp8-m256-midtiles-call10-session54.log" | grep -v "^--"
