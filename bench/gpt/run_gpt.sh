#!/usr/bin/env bash
# GPT benchmarks (bench/RESULTS.md, "GPT"): build/bin/gpt beside our PyTorch reference
# (bench/gpt/torch_gpt.py, Debian's python3-torch) on the same machine in the same run. Builds
# nothing: ninja -C build -j2 gpt globe-launch
# Usage: bench/gpt/run_gpt.sh [--case speed|interop|learn|memory|prefetch|capacity|precision|all] [--quiet-wait SECONDS] [--log FILE]
#   speed   reference defaults (4 layers, 4 heads, 128 wide, context 64, 16 sequences, 30 timed
#           steps after 5), 1 thread per process:
#             single   globe 1 process vs torch 1 process          goal >= 1.2 x tokens/s
#             dp2      globe --dp 2 (global batch 32) vs torch DDP --nproc 2 (16 per rank)
#                                                                  goal >= 1.3 x tokens/s
#                      (each pair five times, back to back in alternating order; the median
#                      ratio counts)
#             tp2, pp2 (m = 8) on 2 ranks (global batch 32): tokens/s, peak bytes and parameter +
#                      AdamW bytes per rank against dp2's
#   interop Globe trains 10 steps and exports (--export); the reference loads that file
#           (--load-init) and evaluates it: the two validation losses must agree.
#   learn   600 steps at the defaults, 1 process: the validation loss (goal <= 2.6), every 50
#           steps, beside the reference's 600-step validation loss.
#   memory  the memory table per rank (parameters, gradients, AdamW state, activations):
#             recompute  8 layers, 1 process, with and without --recompute, five alternating pairs:
#                        activations goal <= 0.35 x, step time goal <= 1.4 x (median ratio)
#             zero       4 ranks dp4 (global batch 32) at --zero 0, 1, 2, 3 and 3 with --recompute:
#                        parameter + gradient + AdamW bytes per rank against --zero 0's (goal at 3:
#                        <= 0.30 x); step time at --zero 3 against --zero 2's, three alternating
#                        pairs (goal <= 1.15 x, median)
#   prefetch 4 ranks dp4 (global batch 32) at --zero 3 with --prefetch 0, 1 (the default) and 2
#           blocks, beside --zero 2, three rounds in rotating order: step time (median ratio to
#           --zero 2's) and peak bytes per rank
#   capacity the deepest GPT (width 256, 4 heads, context 64, global batch 16) that trains a step on
#           4 ranks dp4 under GLOBE_MEMORY_LIMIT=96M per rank: replicated, --zero 2, --zero 3 and
#           --zero 3 --recompute, and that with --dtype bf16; the ratio of trainable parameters against
#           replicated
#   precision mixed precision against float32 at the defaults, 1 process: step time and activations
#           of --dtype bf16 and --dtype fp16, three rounds in rotating order (median ratios), with
#           the bf16 GEMM path the run reports; dp2 at float32, bf16 and bf16 with --reduce-dtype
#           bf16; 600 steps at each dtype: the validation loss against float32's (goal within 2 %)
# Each measurement prints its command and its RESULT line; a summary table ends the run.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$(pwd)
source scripts/lib/require_torch.sh
BIN="$ROOT/build/bin"
CASE=all
QUIET_WAIT=600
LOG="$ROOT/bench/results/gpt-$(date -u +%Y%m%dT%H%M%SZ).log"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --case) CASE="$2"; shift 2 ;;
    --quiet-wait) QUIET_WAIT="$2"; shift 2 ;;
    --log) LOG="$2"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run_gpt.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $CASE == memory || $CASE == prefetch || $CASE == capacity || $CASE == precision ]] || require_torch run_gpt.sh  # these measure Globe alone
source "$ROOT/bench/quiet.sh"
bench_start "$LOG" gpt globe-launch
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
RESULTS=$(mktemp)
trap 'rm -f "$RESULTS"' EXIT

# TAG COMMAND...: runs it on a quiet machine, keeps its RESULT line tagged.
measure() {
  local tag=$1; shift
  wait_quiet
  echo "\$ $*"
  "$@" | tee /dev/stderr | grep '^RESULT ' | sed "s/^RESULT /$tag /" >> "$RESULTS"
}
torch() { /usr/bin/python3 "$ROOT/bench/gpt/torch_gpt.py" --threads 1 "$@"; }
globe() { "$BIN/globe-launch" --nproc_per_node "$1" --no-prefix "$BIN/gpt" --threads 1 --log-every 0 "${@:2}"; }

if [[ $CASE == speed || $CASE == all ]]; then
  # This machine's speed drifts by tens of percent over minutes: each pair runs back to back, in
  # alternating order (torch first, then globe first: a steady drift favours neither), five times,
  # and the summary takes the median of the five ratios.
  for rep in 1 2 3 4 5; do
    if (( rep % 2 )); then
      measure torch-single-$rep torch
      measure globe-single-$rep globe 1
      measure torch-ddp2-$rep torch --nproc 2
      measure globe-dp2-$rep globe 2 --batch 32 --dp 2
    else
      measure globe-single-$rep globe 1
      measure torch-single-$rep torch
      measure globe-dp2-$rep globe 2 --batch 32 --dp 2
      measure torch-ddp2-$rep torch --nproc 2
    fi
  done
  measure globe-tp2 globe 2 --batch 32 --tp 2
  measure globe-pp2 globe 2 --batch 32 --pp 2 --microbatches 8
fi
if [[ $CASE == interop || $CASE == all ]]; then
  # Globe's exported weights in the reference: the same validation loss from the same file.
  EXPORT=$(mktemp --suffix .safetensors)
  measure globe-export globe 1 --steps 10 --warmup 0 --export "$EXPORT"
  measure torch-import torch --load-init "$EXPORT" --steps 0 --warmup 0
  rm -f "$EXPORT"
fi
if [[ $CASE == learn || $CASE == all ]]; then
  measure torch-learn torch --steps 600 --warmup 0
  measure globe-learn globe 1 --steps 600 --warmup 0 --log-every 50 --val-every 50
fi
if [[ $CASE == memory || $CASE == all ]]; then
  for rep in 1 2 3 4 5; do
    first=(globe 1 --layers 8 --steps 10 --warmup 2 --val-batches 0) second=("${first[@]}" --recompute)
    if (( rep % 2 )); then
      measure globe-plain8-$rep "${first[@]}"
      measure globe-recompute8-$rep "${second[@]}"
    else
      measure globe-recompute8-$rep "${second[@]}"
      measure globe-plain8-$rep "${first[@]}"
    fi
  done
  dp4=(globe 4 --batch 32 --steps 5 --warmup 1 --val-batches 0)
  for z in 0 1; do measure globe-zero$z "${dp4[@]}" --zero $z; done
  for rep in 1 2 3; do
    if (( rep % 2 )); then
      measure globe-zero2-$rep "${dp4[@]}" --zero 2
      measure globe-zero3-$rep "${dp4[@]}" --zero 3
    else
      measure globe-zero3-$rep "${dp4[@]}" --zero 3
      measure globe-zero2-$rep "${dp4[@]}" --zero 2
    fi
  done
  measure globe-zero3r "${dp4[@]}" --zero 3 --recompute
fi
if [[ $CASE == prefetch || $CASE == all ]]; then
  dp4=(globe 4 --batch 32 --steps 5 --warmup 1 --val-batches 0)
  runs=("zero2:--zero 2" "pf0:--zero 3 --prefetch 0" "pf1:--zero 3 --prefetch 1" "pf2:--zero 3 --prefetch 2")
  for rep in 1 2 3; do
    for k in 0 1 2 3; do
      run=${runs[$(( (k + rep) % 4 ))]}
      # shellcheck disable=SC2086
      measure "prefetch-${run%%:*}-$rep" "${dp4[@]}" ${run#*:}
    done
  done
fi
if [[ $CASE == capacity || $CASE == all ]]; then
  CAP=96M
  # fits LAYERS FLAGS...: one training step of that depth stays under the cap (0), or runs out (1);
  # any other failure stops the benchmark.
  fits() {
    local layers=$1 out; shift
    out=$(GLOBE_MEMORY_LIMIT=$CAP globe 4 --embd 256 --heads 4 --block 64 --batch 16 --steps 1 --warmup 0 \
          --val-batches 0 --layers "$layers" "$@" 2>&1) && return 0
    grep -q "out of memory" <<<"$out" && return 1
    echo "$out" >&2; exit 1
  }
  for how in "replicated:" "zero2:--zero 2" "zero3:--zero 3" "zero3-recompute:--zero 3 --recompute" \
             "zero3-recompute-bf16:--zero 3 --recompute --dtype bf16"; do
    tag=${how%%:*}; read -r -a flags <<<"${how#*:}"
    lo=0 hi=1  # lo fits (0: none), hi to be tried; double, then bisect
    while fits "$hi" "${flags[@]}"; do lo=$hi; hi=$((hi * 2)); done
    while (( hi - lo > 1 )); do mid=$(((lo + hi) / 2)); if fits "$mid" "${flags[@]}"; then lo=$mid; else hi=$mid; fi; done
    echo "capacity $tag: $lo layers fit under $CAP per rank"
    (( lo > 0 )) && measure capacity-$tag globe 4 --embd 256 --heads 4 --block 64 --batch 16 --steps 1 --warmup 0 \
                   --val-batches 0 --layers "$lo" "${flags[@]}"
  done
fi
if [[ $CASE == precision || $CASE == all ]]; then
  dtypes=(float32 bf16 fp16)
  for rep in 0 1 2; do  # each round starts with another dtype: a steady drift favours none
    for k in 0 1 2; do d=${dtypes[$(((rep + k) % 3))]}; measure globe-$d-$((rep + 1)) globe 1 --dtype "$d" --val-batches 0; done
  done
  measure globe-dp2-float32 globe 2 --batch 32 --dp 2 --val-batches 0
  measure globe-dp2-bf16 globe 2 --batch 32 --dp 2 --val-batches 0 --dtype bf16
  measure globe-dp2-bf16r globe 2 --batch 32 --dp 2 --val-batches 0 --dtype bf16 --reduce-dtype bf16
  for d in "${dtypes[@]}"; do measure globe-learn-$d globe 1 --steps 600 --warmup 0 --dtype "$d"; done
fi

python3 - "$RESULTS" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    tag, js = line.split(" ", 1)
    rows[tag] = json.loads(js)
def tps(t): return rows[t]["tokens_per_s_median"] if t in rows else None
print("\n== summary")
for g, t, goal in (("globe-single", "torch-single", 1.2), ("globe-dp2", "torch-ddp2", 1.3)):
    pairs = [(tps(f"{g}-{k}"), tps(f"{t}-{k}")) for k in range(1, 6) if tps(f"{g}-{k}") and tps(f"{t}-{k}")]
    if pairs:
        ratios = sorted(a / b for a, b in pairs)
        r = ratios[len(ratios) // 2]
        each = ", ".join(f"{a:.0f}/{b:.0f}" for a, b in pairs)
        print(f"{g:14s} vs {t:13s} tokens/s per pair {each}: median ratio {r:.2f} x "
              f"(goal {goal} x: {'met' if r >= goal else 'NOT met'})")
rows.setdefault("globe-dp2", rows.get("globe-dp2-1"))
for g in ("globe-dp2", "globe-tp2", "globe-pp2"):
    if rows.get(g) and rows.get("globe-dp2"):
        r, d = rows[g], rows["globe-dp2"]
        print(f"{g:14s} {r['tokens_per_s_median']:9.0f} tokens/s; per rank: peak {r['peak_bytes'] / 2**20:6.1f} MiB, "
              f"parameters + AdamW {r['param_optim_bytes'] / 2**20:5.2f} MiB ({r['param_optim_bytes'] / d['param_optim_bytes']:.2f} x dp2's)")
if "globe-export" in rows and "torch-import" in rows:
    a, b = rows["globe-export"]["val_loss"], rows["torch-import"]["val_loss"]
    print(f"interop        exported weights: validation loss Globe {a:.6f}, PyTorch --load-init {b:.6f} "
          f"(relative difference {abs(a - b) / a:.1e})")
def med(v):
    v = sorted(v)
    return v[len(v) // 2]
pairs = [(rows[f"globe-recompute8-{k}"], rows[f"globe-plain8-{k}"]) for k in range(1, 6)
         if f"globe-recompute8-{k}" in rows and f"globe-plain8-{k}" in rows]
if pairs:
    act = med([r["memory"]["activations"] / p["memory"]["activations"] for r, p in pairs])
    step = med([r["step_ms_median"] / p["step_ms_median"] for r, p in pairs])
    r, p = pairs[0]
    print(f"recompute      8 layers: activations {p['memory']['activations'] / 2**20:.1f} -> {r['memory']['activations'] / 2**20:.1f} MiB "
          f"(median {act:.2f} x, goal <= 0.35 x: {'met' if act <= 0.35 else 'NOT met'}); step time per pair "
          + ", ".join(f"{q['step_ms_median']:.0f}/{o['step_ms_median']:.0f} ms" for o, q in pairs)
          + f" (plain/recomputed): median {step:.2f} x (goal <= 1.4 x: {'met' if step <= 1.4 else 'NOT met'}); losses "
          + ("equal" if all(a["loss_last"] == b["loss_last"] for a, b in pairs) else "DIFFER"))
if "globe-zero0" in rows:
    rows.setdefault("globe-zero2", rows.get("globe-zero2-1"))
    rows.setdefault("globe-zero3", rows.get("globe-zero3-1"))
    base = rows["globe-zero0"]["memory"]
    total0 = base["parameters"] + base["gradients"] + base["optimizer_state"]
    for z in ("0", "1", "2", "3", "3r"):
        m = (rows.get(f"globe-zero{z}") or {}).get("memory")
        if m:
            t = m["parameters"] + m["gradients"] + m["optimizer_state"]
            label = f"zero {z[0]}" + (" + recompute" if z.endswith("r") else "")
            print(f"{label:22s} dp4 per rank: parameters {m['parameters'] / 2**20:.2f}, gradients {m['gradients'] / 2**20:.2f}, "
                  f"AdamW {m['optimizer_state'] / 2**20:.2f}, activations {m['activations'] / 2**20:.2f} MiB; "
                  f"parameters + gradients + AdamW {t / total0:.2f} x --zero 0's"
                  + (f" (goal <= 0.30 x: {'met' if t / total0 <= 0.30 else 'NOT met'})" if z == "3" else "")
                  + f"; {rows[f'globe-zero{z}']['step_ms_median']:.0f} ms/step")
    pairs = [(rows[f"globe-zero3-{k}"], rows[f"globe-zero2-{k}"]) for k in range(1, 4)
             if f"globe-zero3-{k}" in rows and f"globe-zero2-{k}" in rows]
    if pairs:
        r = med([a["step_ms_median"] / b["step_ms_median"] for a, b in pairs])
        print("zero 3 vs 2 step time  " + ", ".join(f"{a['step_ms_median']:.0f}/{b['step_ms_median']:.0f} ms" for a, b in pairs)
              + f": median {r:.2f} x (goal <= 1.15 x: {'met' if r <= 1.15 else 'NOT met'})")
pf = {t: [rows[f"prefetch-{t}-{k}"] for k in (1, 2, 3) if f"prefetch-{t}-{k}" in rows] for t in ("zero2", "pf0", "pf1", "pf2")}
for t in ("pf0", "pf1", "pf2"):
    if pf[t] and len(pf[t]) == len(pf["zero2"]):
        r = med([a["step_ms_median"] / b["step_ms_median"] for a, b in zip(pf[t], pf["zero2"])])
        print(f"zero 3 --prefetch {t[2]} dp4: step time per round "
              + ", ".join(f"{a['step_ms_median']:.0f}/{b['step_ms_median']:.0f} ms" for a, b in zip(pf[t], pf["zero2"]))
              + f" (vs --zero 2): median {r:.2f} x (goal <= 1.15 x: {'met' if r <= 1.15 else 'NOT met'}); "
              + f"peak {pf[t][0]['peak_bytes'] / 2**20:.1f} MiB per rank; loss {pf[t][0]['loss_last']:.6f}")
if "capacity-replicated" in rows:
    base = rows["capacity-replicated"]["params"]
    for tag in ("replicated", "zero2", "zero3", "zero3-recompute", "zero3-recompute-bf16"):
        r = rows.get(f"capacity-{tag}")
        if r:
            print(f"capacity {tag:20s} {r['layers']:3d} layers, {r['params'] / 1e6:6.2f} M parameters "
                  f"({r['params'] / base:.2f} x replicated) under the per-rank cap; peak {r['peak_bytes'] / 2**20:.1f} MiB")
runs = {d: [rows[f"globe-{d}-{k}"] for k in (1, 2, 3) if f"globe-{d}-{k}" in rows] for d in ("float32", "bf16", "fp16")}
if runs["float32"]:
    for d in ("bf16", "fp16"):
        if runs[d]:
            step = med([a["step_ms_median"] / b["step_ms_median"] for a, b in zip(runs[d], runs["float32"])])
            act = runs[d][0]["memory"]["activations"] / runs["float32"][0]["memory"]["activations"]
            print(f"precision {d:5s} 1 process: step time per round "
                  + ", ".join(f"{a['step_ms_median']:.0f}/{b['step_ms_median']:.0f} ms" for a, b in zip(runs[d], runs["float32"]))
                  + f" ({d}/float32): median {step:.2f} x; activations {act:.2f} x; losses "
                  + f"{runs[d][0]['loss_last']:.4f} vs {runs['float32'][0]['loss_last']:.4f}"
                  + (f"; GEMM: {runs[d][0]['bf16_gemm']}" if "bf16_gemm" in runs[d][0] else ""))
for tag in ("globe-dp2-float32", "globe-dp2-bf16", "globe-dp2-bf16r"):
    if tag in rows:
        print(f"{tag:18s} {rows[tag]['tokens_per_s_median']:8.0f} tokens/s, {rows[tag]['step_ms_median']:.0f} ms/step, "
              f"loss {rows[tag]['loss_last']:.4f}")
if "globe-learn-float32" in rows:
    want = rows["globe-learn-float32"]["val_loss"]
    for d in ("float32", "bf16", "fp16"):
        r = rows.get(f"globe-learn-{d}")
        if r:
            rel = (r["val_loss"] - want) / want
            print(f"learn {d:7s} 600 steps: validation {r['val_loss']:.4f} ({rel:+.2%} vs float32; goal within 2 %: "
                  f"{'met' if abs(rel) <= 0.02 else 'NOT met'}), {r['tokens_per_s_median']:.0f} tokens/s")
for tag in ("torch-learn", "globe-learn"):
    if tag in rows:
        print(f"{tag:14s} 600 steps: loss {rows[tag]['loss_first']:.4f} -> {rows[tag]['loss_last']:.4f}, validation {rows[tag]['val_loss']:.4f}"
              + (f" (goal <= 2.6: {'met' if rows[tag]['val_loss'] <= 2.6 else 'NOT met'})" if tag.startswith("globe") else ""))
PY
echo "== log: $LOG"
