#!/usr/bin/env bash
# Data-parallel scaling of the MLP step (H = 1024, batch 64 per rank, 1 thread per rank) with the
# gradient reductions overlapped with backward, against: one process; two independent processes
# at once (what two ranks can reach on this machine without any communication: they share its
# memory bandwidth and caches); the same 2-rank job with overlap off (GLOBE_BUCKET_MB=0, reductions
# when the optimizer reads); and PyTorch DDP (bench/torch_mlp.py, needs scripts/setup_peers.sh).
# Every round measures them back to back; prints one line per round. Builds nothing.
#   bench/run_overlap.sh [--rounds N] [--quiet-wait SECONDS] [--buckets "0 1 4 16"]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/bin
ROUNDS=3
QUIET_WAIT=60
BUCKETS="0 4"
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    --buckets) BUCKETS=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--quiet-wait SECONDS] [--buckets \"MB ...\"]" >&2; exit 2 ;;
  esac
done
source bench/quiet.sh
bench_start "bench/results/overlap-$(date -u +%Y%m%dT%H%M%SZ).log" bench_mlp globe-launch
export OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
ARGS=(--hidden 1024 --batch 64 --steps 60 --warmup 10 --threads 1)
field() { grep '^\(\[rank0\] \)\?RESULT' | sed 's/^\[rank0\] //; s/^RESULT //' | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
wait_quiet
for round in $(seq "$ROUNDS"); do
  one=$($BIN/bench_mlp "${ARGS[@]}" | field samples_per_s_global_median)
  # Two independent single processes at once (no communication).
  $BIN/bench_mlp "${ARGS[@]}" > /tmp/overlap_a.$$ &
  other=$!
  $BIN/bench_mlp "${ARGS[@]}" > /tmp/overlap_b.$$
  wait "$other"  # not a bare wait: that would wait for the log's tee too
  pair=$(python3 -c "print($(field samples_per_s_global_median < /tmp/overlap_a.$$) + $(field samples_per_s_global_median < /tmp/overlap_b.$$))")
  rm -f /tmp/overlap_a.$$ /tmp/overlap_b.$$
  line="round $round: 1 process $(printf %.0f "$one") samples/s; 2 independent processes $(python3 -c "print(f'{$pair / (2 * $one):.3f}')") of 2x"
  for mb in $BUCKETS; do
    dp=$(GLOBE_BUCKET_MB=$mb $BIN/globe-launch --nproc_per_node 2 $BIN/bench_mlp "${ARGS[@]}" | field samples_per_s_global_median)
    line+="; dp2 bucket ${mb} MiB $(printf %.0f "$dp") samples/s, efficiency $(python3 -c "print(f'{$dp / (2 * $one):.3f}')")"
    last_mb=$mb last_dp=$dp
  done
  if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    ddp=$(/usr/bin/python3 bench/torch_mlp.py --nproc 2 --threads 1 | field samples_per_s_global_median)
    line+="; torch DDP $(printf %.0f "$ddp") samples/s, globe (bucket $last_mb MiB) / DDP $(python3 -c "print(f'{$last_dp / $ddp:.2f}')")"
  fi
  echo "$line"
done
