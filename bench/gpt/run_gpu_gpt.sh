#!/usr/bin/env bash
# GPT-2-small-shaped training on one GPU, Globe against PyTorch eager in the same run: 12 layers,
# 12 heads, 768 wide, context 1024, vocabulary 256 (bytes of the fortunes corpus), float32.
#
#   bench/gpt/run_gpu_gpt.sh [--out DIR] [--debs DIR] [--jobs N] [--batch N] [--steps N] [--warmup N]
#
# On the GPU machine (it may lack Open MPI and OpenBLAS: scripts/gpu_env.sh unpacks the .debs
# scripts/gpu_debs.sh downloaded). It builds build-gpu/bin/gpt with the CUDA backend, then:
#   1. measures the GPU's float32 matmul rate with PyTorch (8192^3, without and with TF32): the
#      peak the MFU figures are taken against;
#   2. writes PyTorch's initial weights once (--save-init), so both train from the same weights;
#   3. trains with Globe (`gpt --device cuda`) and with PyTorch (`torch_gpt.py --device cuda`, full
#      float32 as Globe's matmuls), then each with TF32 (PyTorch's allow_tf32, Globe's --tf32) and
#      Globe with --dtype bf16 (16-bit storage, computed through float32 for now) as extra rows;
# and writes DIR/gpu_gpt.md (default build-gpu/bench/): step ms, tokens/s, peak GPU memory, MFU
# (6 x parameters x tokens / step time, the attention's matmuls left out) and the losses.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=build-gpu/bench
debs=.gpu-debs
jobs=$(nproc)
force_debs=0
batch=8
steps=8
warmup=2
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    *) echo "run_gpu_gpt.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
report="$out/gpu_gpt.md"
start=$(date +%s)
say() { echo "$*" | tee -a "$report"; }
: >"$report"
say "# GPT-2-small-shaped training on one GPU, $(date -u +%Y-%m-%dT%H:%MZ)"
say ""
say "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "- PyTorch: $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>&1 | tail -1)"
. scripts/gpu_env.sh || exit 1
gpu_build build-gpu gpt || exit 1

python3 - >"$out/matmul_peak.log" 2>&1 <<'EOF'
import time, torch
a = torch.randn(8192, 8192, device="cuda")
b = torch.randn(8192, 8192, device="cuda")
for tf32 in (False, True):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    print(f"tf32={tf32} tflops={2 * 8192**3 * 20 / (time.perf_counter() - t) / 1e12:.1f}")
EOF
peak=$(grep -oP 'tf32=False tflops=\K[0-9.]+' "$out/matmul_peak.log")
peak_tf32=$(grep -oP 'tf32=True tflops=\K[0-9.]+' "$out/matmul_peak.log")
say "- float32 matmul 8192^3 (PyTorch): ${peak:-?} TFLOP/s; with TF32 ${peak_tf32:-?} TFLOP/s"

shape=(--layers 12 --heads 12 --embd 768 --block 1024 --vocab 256 --batch "$batch" --data "$corpus" --val-batches 0)
init="$out/init.safetensors"
python3 bench/gpt/torch_gpt.py "${shape[@]}" --steps 0 --warmup 0 --save-init "$init" >"$out/init.log" 2>&1 ||
  say "- FAIL: torch_gpt.py --save-init: $(tail -1 "$out/init.log")"
run=(--steps "$steps" --warmup "$warmup" --load-init "$init")
timeout 75 python3 bench/gpt/torch_gpt.py "${shape[@]}" "${run[@]}" --device cuda >"$out/torch.log" 2>&1
timeout 75 build-gpu/bin/gpt "${shape[@]}" "${run[@]}" --device cuda --log-every 1 >"$out/globe.log" 2>&1
timeout 75 python3 bench/gpt/torch_gpt.py "${shape[@]}" "${run[@]}" --device cuda --tf32 >"$out/torch-tf32.log" 2>&1
timeout 75 build-gpu/bin/gpt "${shape[@]}" "${run[@]}" --device cuda --tf32 --log-every 1 >"$out/globe-tf32.log" 2>&1
timeout 75 build-gpu/bin/gpt "${shape[@]}" "${run[@]}" --device cuda --dtype bf16 --log-every 1 >"$out/globe-bf16.log" 2>&1
nvidia-smi >"$out/nvidia-smi.log" 2>&1

say ""
python3 - "$out" "${peak:-0}" "${peak_tf32:-0}" <<'EOF' | tee -a "$report"
import json, sys
out, peak, peak_tf32 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def result(name):
    try:
        lines = [l for l in open(f"{out}/{name}.log", errors="replace") if l.startswith("RESULT ")]
    except OSError:
        return None, "no log"
    if not lines:
        tail = open(f"{out}/{name}.log", errors="replace").read().strip().splitlines()[-3:]
        return None, " / ".join(tail)[:300]
    return json.loads(lines[-1][7:]), ""
rows = [("globe", "Globe, float32"), ("torch", "PyTorch eager, float32"),
        ("torch-tf32", "PyTorch eager, TF32 matmuls"), ("globe-tf32", "Globe, --tf32"),
        ("globe-bf16", "Globe, --dtype bf16")]
print("| run | step ms | tokens/s | peak GPU memory | MFU (fp32 peak) | loss first -> last |")
print("|---|---|---|---|---|---|")
got = {}
for name, label in rows:
    r, why = result(name)
    if r is None or "step_ms_median" not in r:
        print(f"| {label} | failed: {why} | | | | |")
        continue
    got[name] = r
    mem = r.get("peak_gpu_bytes", r.get("peak_bytes", 0))
    flops = 6 * r["params"] * r["tokens_per_s_median"]
    print(f"| {label} | {r['step_ms_median']:.1f} | {r['tokens_per_s_median']:.0f} | {mem / 2**30:.2f} GiB "
          f"| {flops / (peak * 1e12) if peak else 0:.2f} | {r['loss_first']:.4f} -> {r['loss_last']:.4f} |")
if "globe" in got and "torch" in got:
    print(f"\nGlobe / PyTorch tokens/s, float32: {got['globe']['tokens_per_s_median'] / got['torch']['tokens_per_s_median']:.2f}x;"
          f" peak memory Globe / PyTorch: {got['globe']['peak_bytes'] / got['torch'].get('peak_gpu_bytes', float('nan')):.2f}x;"
          f" last loss relative difference {abs(got['globe']['loss_last'] - got['torch']['loss_last']) / abs(got['torch']['loss_last']):.1e}")
if "globe-tf32" in got and "torch-tf32" in got:
    print(f"Globe / PyTorch tokens/s, both TF32: {got['globe-tf32']['tokens_per_s_median'] / got['torch-tf32']['tokens_per_s_median']:.2f}x")
EOF
say ""
say "Total: $(($(date +%s) - start)) s. Logs: $out/"
