# Shared by the benchmark scripts (sourced): starting a logged run, and waiting for a quiet
# machine before measuring. The caller sets BIN (build/bin) and QUIET_WAIT (seconds to wait at
# most; 0 skips the check).

# bench_start LOG PROGRAM...: checks the programs were built, sends everything printed from now on
# to LOG as well, and prints the machine and the commit measured.
bench_start() {
  local log=$1 b; shift
  for b in "$@"; do
    [[ -x "$BIN/$b" ]] || { echo "missing $BIN/$b: build it first (ninja -C build -j2 $*)" >&2; exit 1; }
  done
  mkdir -p "$(dirname "$log")"
  exec > >(tee "$log") 2>&1
  echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
  echo "== git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
}

# Busy fraction of all CPUs over `secs` seconds, from /proc/stat (user+nice+system+irq+softirq+steal).
busy_fraction() {
  local secs=$1 a b
  a=($(head -1 /proc/stat)); sleep "$secs"; b=($(head -1 /proc/stat))
  local busy=$(( (b[1]+b[2]+b[3]+b[6]+b[7]+b[8]) - (a[1]+a[2]+a[3]+a[6]+a[7]+a[8]) ))
  local total=$(( busy + (b[4]+b[5]) - (a[4]+a[5]) ))
  echo "$busy $total" | awk '{ printf "%.3f", ($2 > 0 ? $1 / $2 : 0) }'
}

wait_quiet() {
  [[ "$QUIET_WAIT" -gt 0 ]] || return 0
  local waited=0 f
  while :; do
    f=$(busy_fraction 3)
    if awk -v f="$f" 'BEGIN { exit !(f < 0.10) }'; then
      echo "== machine quiet (CPU busy ${f} over 3 s) after ${waited} s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
      return 0
    fi
    if [[ $waited -ge $QUIET_WAIT ]]; then
      echo "== WARNING: machine still busy (CPU busy ${f}) after ${waited} s; numbers may be low"
      return 0
    fi
    sleep 2; waited=$((waited + 5))
  done
}
