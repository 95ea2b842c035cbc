#!/usr/bin/env bash
# Page 06's real trace: one 1F1B step of pipeline_schedules' MLP on 4 stages (4 ranks) and 8
# micro-batches, recorded with globe-launch --trace; the last step's pipeline actions per rank
# (name, start and duration in microseconds from the step's start) are kept in
# docs/data/pipeline-1f1b-trace.json, which docs/snippets/doc_pictures.cpp draws. On a machine
# with fewer than 4 cores the ranks share them, and the picture shows that too.
#   bench/pipeline_trace.sh [OUT.json]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/docs/data/pipeline-1f1b-trace.json}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ROOT/build/bin/globe-launch" --nproc_per_node 4 --trace "$tmp" "$ROOT/build/bin/pipeline_schedules" \
  --schedule 1f1b --microbatches 8 --iters 5 > "$tmp/run.log"
mkdir -p "$(dirname "$OUT")"
python3 - "$tmp/trace.json" "$OUT" <<'PY'
import json, os, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ranks = sorted({e["pid"] for e in events if e.get("ph") == "X"})
out = {"what": "one 1F1B step, 4 stages x 8 micro-batches, pipeline_schedules (bench/pipeline_trace.sh)",
       "cores": os.cpu_count(), "ranks": []}
# Each rank's last step; the times count from the earliest of their starts (the ranks of one
# machine share its clock), so the ranks line up as they ran.
last = {r: max((e for e in events if e.get("ph") == "X" and e["pid"] == r and e["name"] == "pipeline step"),
               key=lambda e: e["ts"]) for r in ranks}
t0 = min(s["ts"] for s in last.values())
for r in ranks:
    a0, a1 = last[r]["ts"], last[r]["ts"] + last[r]["dur"]
    inside = [e for e in events if e.get("ph") == "X" and e["pid"] == r and a0 <= e["ts"] <= a1]
    acts = sorted((e for e in inside if e["cat"] == "pipeline"), key=lambda e: e["ts"])
    waits = sorted((e for e in inside if e["cat"] == "wait" and e["name"].startswith("receive ")), key=lambda e: e["ts"])
    out["ranks"].append({"rank": r, "step_start_us": round(a0 - t0, 1), "step_us": round(last[r]["dur"], 1),
                         "actions": [[a["name"], round(a["ts"] - t0, 1), round(a["dur"], 1)] for a in acts],
                         "receives": [[round(w["ts"] - t0, 1), round(w["dur"], 1)] for w in waits]})
json.dump(out, open(sys.argv[2], "w"), indent=1)
print(f"pipeline_trace: {sys.argv[2]}")
PY
