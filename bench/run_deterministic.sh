#!/usr/bin/env bash
# Deterministic mode's step-time cost (issue #30): each job timed with GLOBE_DETERMINISTIC unset and
# =1 back to back, the order alternating by round; prints one line per round with the ratio
# deterministic / default step time. Jobs: the data-parallel MLP (bench_mlp, H = 1024, 64 rows per
# rank) on 1 process and on 2 ranks, and the GPT (examples/gpt: 4 layers, 128 wide, block 64, batch
# 16) on 1 process and dp2. BLAS threads: all the cores for 1 process, one per rank for 2 ranks
# (what globe-launch gives). Ends with the median ratio of each job over the rounds. Builds nothing.
#   bench/run_deterministic.sh [--rounds N] [--quiet-wait SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/bin
ROUNDS=3
QUIET_WAIT=60
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--quiet-wait SECONDS]" >&2; exit 2 ;;
  esac
done
source bench/quiet.sh
bench_start "bench/results/deterministic-$(date -u +%Y%m%dT%H%M%SZ).log" bench_mlp gpt globe-launch
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset GLOBE_DETERMINISTIC
CORES=$(nproc)
field() { grep '^\(\[rank0\] \)\?RESULT' | sed 's/^\[rank0\] //; s/^RESULT //' | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
# step_ms MODE(0|1) NPROC JOB: the job's median step time in ms.
step_ms() {
  local det=$1 n=$2 job=$3 threads=$(( CORES / $2 > 0 ? CORES / $2 : 1 )) cmd
  case $job in
    mlp) cmd=("$BIN/bench_mlp" --hidden 1024 --batch 64 --steps 100 --warmup 10 --threads "$threads") ;;
    gpt) cmd=("$BIN/gpt" --steps 40 --warmup 3 --val-batches 0 --log-every 0 --threads "$threads" --dp "$n") ;;
  esac
  if [[ $n == 1 ]]; then
    GLOBE_DETERMINISTIC=$det "${cmd[@]}" | field step_ms_median
  else
    GLOBE_DETERMINISTIC=$det $BIN/globe-launch --nproc_per_node "$n" "${cmd[@]}" | field step_ms_median
  fi
}
wait_quiet
declare -A RATIOS
for round in $(seq "$ROUNDS"); do
  line="round $round:"
  for job in mlp gpt; do
    for n in 1 2; do
      if (( round % 2 )); then base=$(step_ms 0 $n $job); det=$(step_ms 1 $n $job)
      else det=$(step_ms 1 $n $job); base=$(step_ms 0 $n $job); fi
      ratio=$(python3 -c "print(f'{$det / $base:.3f}')")
      RATIOS[$job np$n]+="$ratio "
      line+=" $job np$n $(printf %.2f "$base") -> $(printf %.2f "$det") ms (${ratio}x);"
    done
  done
  echo "$line"
done
summary="median over $ROUNDS rounds (deterministic / default step time):"
for key in "mlp np1" "mlp np2" "gpt np1" "gpt np2"; do
  summary+=" $key $(python3 -c 'import statistics, sys; print(f"{statistics.median(map(float, sys.argv[1:])):.3f}")' ${RATIOS[$key]})x;"
done
echo "$summary"
