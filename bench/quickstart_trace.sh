#!/usr/bin/env bash
# Page 01's picture of one quick-start step: the quick start on 2 ranks, 3 iterations, recorded with
# globe-launch --trace; rank 0's last step (from its first module call to its loss.item()) kept as
# the sequence of module calls and collectives, forward then backward, in
# docs/data/quickstart-step.json, which docs/snippets/doc_pictures.cpp draws.
#   bench/quickstart_trace.sh [OUT.json]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/docs/data/quickstart-step.json}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ROOT/build/bin/globe-launch" --nproc_per_node 2 --trace "$tmp" "$ROOT/build/bin/quickstart" --iters 3 > "$tmp/run.log"
mkdir -p "$(dirname "$OUT")"
python3 - "$tmp/trace.rank-0.json" "$OUT" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
# Spans (X) and the starts (b) of collectives that ran in flight, in the order they began.
events = sorted((e for e in (data["traceEvents"] if isinstance(data, dict) else data) if e.get("ph") in ("X", "b")),
                key=lambda e: e["ts"])
backwards = [e for e in events if e["name"] == "backward" and e["cat"] == "region"]
# The last step begins with the first forward module call after the second-to-last backward.
after = backwards[-2]["ts"] + backwards[-2]["dur"]
start = next(e["ts"] for e in events if e["ts"] > after and e["cat"] == "module" and not e.get("args", {}).get("backward"))
steps = []  # [kind, name, module, op, layout, bytes, backward]: a top-level module call or a collective
for e in events:
    a = e.get("args", {})
    if e["ts"] < start:
        continue
    if e["cat"] == "module" and not a.get("module"):
        steps.append(["module", e["name"], "", "", "", 0, bool(a.get("backward"))])
    elif e["cat"] == "comm":
        steps.append(["comm", e["name"], a.get("module", ""), a.get("op", ""), a.get("layout", ""), a.get("bytes", 0),
                      bool(a.get("backward"))])
# Consecutive calls of one module (a backward visits a module once per node) count once.
kept = [s for i, s in enumerate(steps) if i == 0 or s[0] != "module" or s[:2] != steps[i - 1][:2] or s[6] != steps[i - 1][6]]
json.dump({"what": "rank 0's third step of the quick start on 2 ranks (bench/quickstart_trace.sh)", "steps": kept},
          open(sys.argv[2], "w"), indent=1)
print(f"quickstart_trace: {sys.argv[2]}")
PY
