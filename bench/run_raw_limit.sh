#!/usr/bin/env bash
# The MLP step against its hand-written limit (bench/RESULTS.md, "Training step"): bench_mlp --raw-ab
# times Globe's step and bench/raw_mlp.h's (cblas_sgemm and loops in two activation layouts; with 2
# ranks a blocking ring all-reduce after the backward, no overlap) in rotating rounds from the same
# weights on the same rows. Goals: >= 1.0 x the faster hand-written step, 1 process and 2 ranks.
# Builds nothing: ninja -C build -j2 bench_mlp globe-launch
# Usage: bench/run_raw_limit.sh [--runs N] [--rounds N] [--quiet-wait SECONDS] [--log FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="$ROOT/build/bin"
RUNS=3
ROUNDS=60
QUIET_WAIT=600
LOG="$ROOT/bench/results/raw-limit-$(date -u +%Y%m%dT%H%M%SZ).log"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --quiet-wait) QUIET_WAIT="$2"; shift 2 ;;
    --log) LOG="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "run_raw_limit.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$ROOT/bench/quiet.sh"
bench_start "$LOG" bench_mlp globe-launch
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ARGS=(--hidden 1024 --batch 64 --steps 10 --warmup 5 --threads 1 --raw-ab "$ROUNDS")
for run in $(seq "$RUNS"); do
  wait_quiet
  echo "\$ $BIN/bench_mlp ${ARGS[*]}"
  "$BIN/bench_mlp" "${ARGS[@]}" | grep -E '^\[raw|^RESULT \{"bench": ?"raw'
  wait_quiet
  echo "\$ $BIN/globe-launch --nproc_per_node 2 --no-prefix $BIN/bench_mlp ${ARGS[*]}"
  "$BIN/globe-launch" --nproc_per_node 2 --no-prefix "$BIN/bench_mlp" "${ARGS[@]}" | grep -E '^\[raw|^RESULT \{"bench": ?"raw'
done
echo "== log: $LOG"
