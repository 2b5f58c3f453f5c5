# Sourced by scripts/device-check.sh and scripts/tp-check.sh (expects $out): `step NAME CMD...`
# runs CMD with its output in $out/NAME.log, shows the log's tail and appends NAME, rc and
# seconds to `summary`; a non-zero rc sets `failed=1` and is returned. Also puts nvcc on PATH
# when only /usr/local/cuda has it.
summary=()
failed=0
step() {
  local name=$1; shift
  echo "== $name: $*"
  local t0=$SECONDS
  "$@" > "$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-12s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$out/$name.log")")
  tail -n 25 "$out/$name.log"
  [ $rc -eq 0 ] || failed=1
  return $rc
}
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi
