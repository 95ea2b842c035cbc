#!/usr/bin/env bash
# Instructions per call of the 4-byte P -> B against MPI_Allreduce (bench/RESULTS.md, "Boxing"):
# repeatable where microseconds are not. Builds nothing: ninja -C build bench_boxing globe-launch.
# Usage: bench/count_tiny.sh [--calls N] [--keep DIR]
#   --calls N   counted calls per variant (default 2000)
#   --keep DIR  keep the callgrind profiles there (callgrind_annotate reads them); default: a
#               temporary folder, removed
# Rank 0 runs under `valgrind --tool=callgrind --collect-atstart=no`, rank 1 natively, so rank 0
# finds its peer's message already there and its waits hardly poll. bench_boxing --count-calls
# dumps one profile per variant: globe_fp, globe_nofp (fingerprints off), mpi (MPI_Allreduce),
# mpi_nb (MPI_Iallreduce + MPI_Wait). Prints instructions per call and one RESULT line; for Globe
# also the share in the all-reduce itself (the outermost communicator's all_reduce_sum, inclusive:
# stamps, request, wait and MPI), the rest being the tensors, plan look-up and records around it.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=2000
KEEP=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --calls) CALLS="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "count_tiny.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "count_tiny.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
OUT=${KEEP:-$(mktemp -d)}
mkdir -p "$OUT"
[[ -n "$KEEP" ]] || trap 'rm -rf "$OUT"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
build/bin/globe-launch --nproc_per_node 2 --no-prefix bash -c '
  if [[ "$RANK" == 0 ]]; then
    exec valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="'"$OUT"'/callgrind.out.%p" "$@" 2>/dev/null
  else
    exec "$@"
  fi' _ build/bin/bench_boxing --count-calls "$CALLS"
python3 - "$OUT" "$CALLS" <<'PY'
import glob, json, os, re, subprocess, sys
out, calls = sys.argv[1], int(sys.argv[2])
per_call = {}
for f in glob.glob(os.path.join(out, "callgrind.out.*")):
    text = open(f).read()
    name = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
    total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
    if not (name and total):
        continue
    per_call[name.group(1)] = int(total.group(1)) / calls
    if name.group(1).startswith("globe"):
        tree = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", f],
                              capture_output=True, text=True).stdout
        comm = [int(m.group(1).replace(",", "")) for m in
                re.finditer(r"^\s*([\d,]+) .*Communicator::all_reduce_sum\(", tree, re.M)]
        if comm:
            per_call[name.group(1) + "_allreduce"] = max(comm) / calls
for k in ("globe_fp", "globe_fp_allreduce", "globe_nofp", "globe_nofp_allreduce", "mpi", "mpi_nb"):
    print(f"{k:20s} {per_call.get(k, float('nan')):10.0f} instructions per call")
if "globe_fp" in per_call and "mpi" in per_call:
    per_call = {k: round(v) for k, v in per_call.items()}
    res = {"bench": "boxing", "case": "P->B tiny instructions", "calls": calls, **per_call,
           "globe_fp_minus_mpi": per_call["globe_fp"] - per_call["mpi"]}
    print("RESULT " + json.dumps(res))
PY
