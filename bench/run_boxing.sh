#!/usr/bin/env bash
# Boxing bandwidth of Globe's to_global against the raw MPI collectives, 2 ranks. Builds nothing:
#   ninja -C build -j2 bench_boxing globe-launch
# Usage: bench/run_boxing.sh [--quiet-wait SECONDS] [--runs N] [--log FILE] [-- BENCH FLAGS...]
#   --quiet-wait S  before each run, wait up to S seconds (default 600) for the machine to go idle
#                   (all processes together below 10% of the CPUs over 3 s); 0 skips the check.
#                   Both ranks spin in MPI: any other load on the 2 cores distorts every figure.
#   --runs N        run the benchmark N times (default 2)
#   --log FILE      also write everything printed to FILE (default bench/results/boxing-<UTC>.log)
# Each run: build/bin/globe-launch --nproc_per_node 2 build/bin/bench_boxing [BENCH FLAGS]
# (default: 1 MiB and 16 MiB, 31 reps after 10 warm-up). Goal (bench/RESULTS.md): every
# globe/MPI ratio >= 0.9.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BIN="$ROOT/build/bin"
QUIET_WAIT=600
RUNS=2
LOG="$ROOT/bench/results/boxing-$(date -u +%Y%m%dT%H%M%SZ).log"
FLAGS=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quiet-wait) QUIET_WAIT="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --log) LOG="$2"; shift 2 ;;
    --) shift; FLAGS=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_boxing.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

source "$ROOT/bench/quiet.sh"
bench_start "$LOG" bench_boxing globe-launch
RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT
for ((run = 1; run <= RUNS; ++run)); do
  wait_quiet
  echo "\$ $BIN/globe-launch --nproc_per_node 2 $BIN/bench_boxing ${FLAGS[*]:-}"
  "$BIN/globe-launch" --nproc_per_node 2 "$BIN/bench_boxing" "${FLAGS[@]}" | tee -a "$RESULTS"
done
# Per case: the median over runs of globe and MPI bandwidth and of the paired ratio, with its range.
echo "== summary over $RUNS runs (median [min, max] of the per-run paired ratio)"
python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    if "RESULT " not in line:
        continue
    d = json.loads(line.split("RESULT ", 1)[1])
    rows.setdefault((d["case"], d["bytes"]), []).append(d)
for (case, size), ds in rows.items():
    mib = size / 1048576
    if "mpi_GBps" not in ds[0]:  # the 4-byte latency case: microseconds, not bandwidth
        us = statistics.median(d["globe_fp_us"] for d in ds)
        mpi_us = statistics.median(d["mpi_us"] for d in ds)
        print(f"{case:30s} {size:5.0f} B    globe {us:6.2f} us  MPI_Allreduce {mpi_us:6.2f} us  ratio MPI/globe "
              f"{statistics.median(d['mpi_over_globe_fp'] for d in ds):.3f}")
        continue
    mpi = statistics.median(d["mpi_GBps"] for d in ds)
    if "globe_GBps" not in ds[0]:
        print(f"{case:30s} {mib:5.0f} MiB  {ds[0]['mpi_op']:24s} {mpi:6.2f} GB/s")
        continue
    g = statistics.median(d["globe_GBps"] for d in ds)
    r = [d.get("ratio_paired_median", d["ratio"]) for d in ds]
    print(f"{case:30s} {mib:5.0f} MiB  globe {g:6.2f} GB/s  {ds[0]['mpi_op']:24s} {mpi:6.2f} GB/s  "
          f"ratio {statistics.median(r):.3f} [{min(r):.3f}, {max(r):.3f}]")
PY
echo "== log: $LOG"
