#!/usr/bin/env bash
# Page 07's loss curves: 600 steps of the GPT at the defaults from PyTorch's initial weights, in
# PyTorch (bench/gpt/torch_gpt.py) and in Globe on four layouts (one process; dp 2, tp 2 and
# pp 2 on two ranks), every step's training loss and the validation loss every 50 steps.
# Writes the data docs/snippets/doc_pictures.cpp draws (default docs/data/gpt-loss-curves.json);
# then `python3 scripts/sync_docs.py` redraws the picture. About 6 minutes on 2 cores.
#   bench/gpt/loss_curves.sh [OUT.json]      needs python3-torch (scripts/setup_peers.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/build/bin
OUT=${1:-$ROOT/docs/data/gpt-loss-curves.json}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$ROOT/bench/gpt/torch_gpt.py" --threads 1 --steps 600 --warmup 0 --val-every 50 \
  --save-init "$tmp/init.safetensors" --losses-out "$tmp/torch.json" > "$tmp/torch.log"
runs=("single 1" "dp2 2 --dp 2" "tp2 2 --tp 2" "pp2 2 --pp 2 --microbatches 4")
for run in "${runs[@]}"; do
  read -r name n rest <<< "$run"
  # shellcheck disable=SC2086
  "$BIN/globe-launch" --nproc_per_node "$n" --no-prefix "$BIN/gpt" --threads 1 --steps 600 --warmup 0 \
    --load-init "$tmp/init.safetensors" --losses-out "$tmp/$name.json" --log-every 0 --val-every 50 $rest \
    > "$tmp/$name.log"
done
mkdir -p "$(dirname "$OUT")"
python3 - "$tmp" "$OUT" "${runs[@]}" <<'PY'
import json, re, sys
tmp, out, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
data = {"what": "GPT at bench/gpt defaults, 600 steps from PyTorch's initial weights (bench/gpt/loss_curves.sh)",
        "runs": []}


def validation(log):
    """The validation losses a run printed: every 50 steps, then the final one in its RESULT line."""
    val = [[int(s), float(v)] for s, v in re.findall(r"step (\d+)  val loss ([0-9.]+)", log)]
    final = re.search(r'"val_loss": ?([0-9.e+-]+)', log)
    if final:
        val.append([600, float(final.group(1))])
    return val


for name in ["torch"] + [run.split()[0] for run in runs]:
    log = open(f"{tmp}/{name}.log").read()
    layout = "PyTorch 1 process" if name == "torch" else "Globe " + re.search(r'"layout":"([a-z0-9x]+)"', log).group(1)
    data["runs"].append({"name": layout, "losses": json.load(open(f"{tmp}/{name}.json")), "val": validation(log)})
with open(out, "w") as f:
    json.dump(data, f, indent=1)
    f.write("\n")
print(f"loss_curves: {out}")
PY
