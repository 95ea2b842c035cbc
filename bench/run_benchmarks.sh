#!/usr/bin/env bash
# Runs Globe's benchmarks against the PyTorch peer and prints the ratios. Builds nothing: build first
#   ninja -C build -j2 bench_mlp bench_ops
# Usage: bench/run_benchmarks.sh [--quiet-wait SECONDS] [--log FILE]
#   --quiet-wait S  before starting, wait up to S seconds (default 600) for the machine to go idle
#                   (other processes using < 10% of the CPUs over 3 s); 0 skips the check.
#   --log FILE      also write everything printed to FILE (default bench/results/run-<UTC time>.log).
# Single-process, 1 thread each: bench_mlp (H=1024, batch 64), the PyTorch peer bench/torch_mlp.py
# (same model and step), then bench_ops. Goals (bench/RESULTS.md):
# bench_mlp >= 1.2x the peer's steps/s; globe matmul >= 0.95x raw sgemm. Then data parallel with
# 2 ranks x 1 thread: Globe >= 1.5x the peer's DDP steps/s, scaling efficiency >= 0.75.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
source scripts/lib/require_torch.sh
require_torch run_benchmarks.sh
BIN="$ROOT/build/bin"
PEER="$ROOT/bench/torch_mlp.py"
PY=/usr/bin/python3  # Debian's interpreter: the one with torch
QUIET_WAIT=600
LOG="$ROOT/bench/results/run-$(date -u +%Y%m%dT%H%M%SZ).log"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quiet-wait) QUIET_WAIT="$2"; shift 2 ;;
    --log) LOG="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run_benchmarks.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

for b in bench_mlp bench_ops; do
  [[ -x "$BIN/$b" ]] || { echo "missing $BIN/$b: build it first (ninja -C build -j2 $b)" >&2; exit 1; }
done
[[ -f "$PEER" ]] || { echo "missing peer $PEER" >&2; exit 1; }
mkdir -p "$(dirname "$LOG")"
exec > >(tee "$LOG") 2>&1

source "$ROOT/bench/quiet.sh"

echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
echo "== git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
wait_quiet

run() {  # prints the command, runs it, keeps its RESULT line in $RESULT_<name>
  echo "\$ $*"
  "$@"
}

out_mlp=$(run "$BIN/bench_mlp" --hidden 1024 --batch 64 --steps 50 --warmup 10 --threads 1); echo "$out_mlp"
out_peer=$(cd "$ROOT" && run "$PY" "$PEER" --threads 1); echo "$out_peer"
out_ops=$(run "$BIN/bench_ops" --threads 1); echo "$out_ops"
# Data parallel, 2 ranks x 1 thread: Globe under its launcher vs the peer's DDP (gloo).
out_dp=$(run "$BIN/globe-launch" --nproc_per_node 2 --no-prefix "$BIN/bench_mlp" --hidden 1024 --batch 64 --steps 50 \
  --warmup 10 --threads 1); echo "$out_dp"
out_ddp=$(cd "$ROOT" && run "$PY" "$PEER" --nproc 2 --threads 1); echo "$out_ddp"

{ echo "$out_mlp" | grep '^RESULT ' | sed 's/^RESULT /globe_mlp /'
  echo "$out_peer" | grep '^RESULT ' | sed 's/^RESULT /torch_mlp /'
  echo "$out_ops" | grep '^RESULT ' | sed 's/^RESULT /ops /'
  echo "$out_dp" | grep '^RESULT ' | sed 's/^RESULT /globe_dp /'
  echo "$out_ddp" | grep '^RESULT ' | sed 's/^RESULT /torch_ddp /'; } | "$PY" "$ROOT/bench/summarize_results.py"
echo "== log: $LOG"
