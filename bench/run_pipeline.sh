#!/usr/bin/env bash
# Pipeline benchmarks (bench/RESULTS.md, "Pipelines"). Builds nothing:
#   ninja -C build -j2 bench_pipeline globe-launch
# Usage: bench/run_pipeline.sh [--quiet-wait SECONDS] [--log FILE]
#   --quiet-wait S  before each measurement, wait up to S seconds (default 600) for the machine to
#                   go idle; 0 skips the check
#   --log FILE      also write everything printed to FILE (default bench/results/pipeline-<UTC>.log)
# Cases, each one `RESULT {json}` line:
#   fidelity    4 ranks, sleep stages (t_F 20 ms, t_B 40 ms), m = 8: gpipe, 1f1b, interleaved (v = 2),
#               zb-h1, zbv against their theory. Goals: gpipe/1f1b step <= 1.10 x theory and bubble
#               within 3 points of (p-1)/(m+p-1); interleaved below 1f1b's; zb-h1 within 3 points of
#               the paper's (p-1)(t_F+t_I-t_W) / (m(t_F+t_B) + that); zbv within 3 points of its own
#               simulated bubble.
#   memory      2 and 4 ranks, m = 8: peak activation bytes on stage 0, 1f1b / gpipe (goal <= 0.30 at
#               2 ranks); the most any rank holds, zb-h1 / 1f1b.
#   eager       the plain form (to_global between stages, a backward per micro-batch), 2 and 4 ranks,
#               sleep stages: its step against GPipe's (m+p-1)(t_F+t_B) and against taking turns.
#   throughput  an MLP (8 x Linear(1024, 1024) + ReLU, 512 rows, m = 8), 1 thread per rank: 2-stage
#               1f1b on 2 ranks against the same 2 stages taking turns, alternated step by step
#               (goal >= 1.5 x, theory 1.78); also against the model unpipelined on 1 rank.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="$ROOT/build/bin"
QUIET_WAIT=600
LOG="$ROOT/bench/results/pipeline-$(date -u +%Y%m%dT%H%M%SZ).log"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quiet-wait) QUIET_WAIT="$2"; shift 2 ;;
    --log) LOG="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run_pipeline.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
source "$ROOT/bench/quiet.sh"
bench_start "$LOG" bench_pipeline globe-launch
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT
run() {  # NPROC ARGS...
  local n=$1; shift
  wait_quiet
  echo "\$ $BIN/globe-launch --nproc_per_node $n --no-prefix $BIN/bench_pipeline $*"
  "$BIN/globe-launch" --nproc_per_node "$n" --no-prefix "$BIN/bench_pipeline" "$@" | tee -a "$RESULTS"
}
for s in gpipe 1f1b interleaved zb-h1 zbv; do run 4 --case fidelity --schedule "$s" --steps 5; done
run 2 --case eager --steps 5
run 4 --case eager --steps 5
run 2 --case memory
run 4 --case memory
run 1 --case throughput --steps 5
run 2 --case throughput --steps 5
# The throughput ratio of the two throughput runs above.
python3 - "$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l.split("RESULT ", 1)[1]) for l in open(sys.argv[1]) if l.startswith("RESULT ")]
tp = {r["ranks"]: r for r in rows if r["case"] == "throughput"}
if 1 in tp and 2 in tp:
    out = {"case": "throughput", "over_in_turn": tp[2]["over_in_turn"],
           "over_one_rank": round(tp[2]["steps_per_s"] / tp[1]["steps_per_s"], 4),
           "theory": tp[2]["theory"], "pipelined_steps_per_s": tp[2]["steps_per_s"],
           "in_turn_steps_per_s": round(1e3 / tp[2]["in_turn_ms"], 3),
           "one_rank_steps_per_s": tp[1]["steps_per_s"]}
    print("RESULT " + json.dumps(out))
PY
echo "== log: $LOG"
