#!/usr/bin/env bash
# One command for a GPU machine (docs/design.md §16): builds Globe with the CUDA backend using all
# cores, runs the device tests (every CUDA kernel against the CPU's), the consistency harness on a
# "cuda" placement (1 and 2 ranks; it says whether collectives went over NCCL or host-staged) and
# the tutorials' programs on placement "cuda" and "cpu" on 1 and 2 ranks, compares their printed
# losses, checks that deterministic mode gives one rank's bits on dp2 (TF32 on too), and writes a
# report.
# Meant to finish within 8 minutes on a 16-core machine.
#
#   scripts/gpu_check.sh [--out DIR] [--debs DIR] [--jobs N] [--force-debs]
#
# Such a machine may have no network and lack Open MPI, OpenBLAS, GoogleTest or nlohmann-json:
# scripts/gpu_debs.sh downloads their Debian packages into .gpu-debs/ beforehand (where the archive
# can be reached), and this script unpacks them with dpkg -x into a private root when the machine
# lacks mpirun (or always, with --force-debs). The report goes to DIR/gpu_report.md (default
# build-gpu/), logs beside it.
set -uo pipefail
cd "$(dirname "$0")/.."
out=build-gpu
debs=.gpu-debs
jobs=$(nproc)
force_debs=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --force-debs) force_debs=1; shift ;;
    *) echo "gpu_check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
report="$out/gpu_report.md"
start=$(date +%s)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=
export GLOBE_TIMEOUT=${GLOBE_TIMEOUT:-60}  # a hung collective fails in a minute, not the launcher's default
say() { echo "$*" | tee -a "$report"; }
: >"$report"
say "# Globe GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
say ""
say "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
say "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "- nvcc: $( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) | xargs -I{} sh -c '{} --version 2>/dev/null | tail -1')"

# ---- dependencies and the GPT's text (scripts/gpu_env.sh) ----------------------------------------
. scripts/gpu_env.sh || exit 1

# ---- build ----------------------------------------------------------------------------------------
build=build-gpu
gpu_build "$build" globe-launch test_device test_consistency quickstart data_parallel model_parallel save_load pipeline gpt ||
  exit 1
say ""

status=0
plain() { sed -E 's/\x1b\[[0-9;]*m//g; s/^\[rank[0-9]+\] //' "$1"; }  # without "[rankN] " and colours
# ---- the device tests: every CUDA kernel against the CPU's --------------------------------------
say "## Device tests (build-gpu/bin/test_device)"
if "$build/bin/test_device" >"$out/test_device.log" 2>&1; then res=ok; else res=FAILED; status=1; fi
say ""
say "$res: $(grep -cE '^\[       OK \]' "$out/test_device.log") passed, $(grep -cE '^\[  FAILED  \] [A-Za-z].*\(' "$out/test_device.log") failed, $(grep -cE '^\[  SKIPPED \] [A-Za-z].*\(' "$out/test_device.log") skipped"
grep -E '^\[  FAILED  \] [A-Za-z]|Failure' -A3 "$out/test_device.log" | head -40 | sed 's/^/    /' >>"$report"
say ""

# ---- the consistency harness on a "cuda" placement: every op x layout against the CPU ------------
say "## Consistency harness on every device, cuda and sim (OneDimensionalMeshOnEveryDevice, 1 and 2 ranks)"
say ""
for n in 1 2; do
  log="$out/test_consistency-cuda-np$n.log"
  if timeout 240 "$build/bin/globe-launch" --nproc_per_node "$n" "$build/bin/test_consistency" \
       --gtest_filter='*OnEveryDevice*' >"$log" 2>&1; then res=ok; else res=FAILED; status=1; fi
  say "- $n rank(s): $res ($(plain "$log" | grep -cE '^\[       OK \]') OK lines over all ranks; the path the collectives took:" \
      "$(plain "$log" | grep -oE 'over NCCL [0-9.]+|host-staged over MPI[^:]*: .*' | cut -c1-200 | sort -u | head -2 | tr '\n' ' '))"
  grep -E '^\[  FAILED  \] [A-Za-z]|Failure' -A3 "$log" | head -20 | sed 's/^/    /' >>"$report"
done
say ""

# ---- the tutorials' programs on "cuda" against "cpu" ---------------------------------------------
say "## Tutorials' programs: the last printed loss on cpu and cuda"
say ""
say "| program | ranks | cpu | cuda | relative difference |"
say "|---|---|---|---|---|"
last_loss() { grep -oE 'loss[ =:]+[-0-9.e+]+' "$1" | tail -1 | grep -oE '[-0-9.e+]+$'; }
run_case() {  # name, ranks, program and its arguments
  local name=$1 n=$2
  shift 2
  local cpu gpu log_cpu="$out/$name-np$n-cpu.log" log_gpu="$out/$name-np$n-cuda.log"
  timeout 120 "$build/bin/globe-launch" --nproc_per_node "$n" "$@" --device cpu >"$log_cpu" 2>&1
  timeout 120 "$build/bin/globe-launch" --nproc_per_node "$n" "$@" --device cuda >"$log_gpu" 2>&1
  local rc=$?
  cpu=$(last_loss "$log_cpu"); gpu=$(last_loss "$log_gpu")
  local diff
  diff=$(python3 -c "c, g = float('${cpu:-nan}'), float('${gpu:-nan}'); print(f'{abs(c - g) / max(abs(c), 1e-12):.2e}')" 2>/dev/null)
  [ $rc -ne 0 ] && { diff="exit $rc: $(grep -m1 -oE '\[[a-z_]+\] .*' "$log_gpu" | cut -c1-160)"; status=1; }
  say "| $name | $n | ${cpu:-?} | ${gpu:-?} | $diff |"
}
for n in 1 2; do
  run_case quickstart "$n" "$build/bin/quickstart"
  run_case data_parallel "$n" "$build/bin/data_parallel"
  run_case model_parallel "$n" "$build/bin/model_parallel"
  run_case save_load "$n" "$build/bin/save_load" --path "$out/weights-np$n.safetensors"
  run_case gpt "$n" "$build/bin/gpt" --data "$corpus" --steps 20 --log-every 5 --val-batches 0
done
run_case pipeline 2 "$build/bin/pipeline"
say ""

# ---- deterministic mode on the GPU: one rank and dp2 must print the same bits ---------------------
# (its CUDA product, fixed_order_gemm.cu, and its leaf sums; docs/design.md §10). Each step's loss
# to the last bit, from --losses-out; then the TF32 setting, which deterministic mode ignores.
say "## Deterministic mode on cuda: the GPT's losses on 1 rank and on dp2, bit for bit"
say ""
det() {  # name, ranks, extra arguments
  local name=$1 n=$2
  shift 2
  GLOBE_DETERMINISTIC=1 timeout 180 "$build/bin/globe-launch" --nproc_per_node "$n" "$build/bin/gpt" --device cuda \
    --data "$corpus" --batch 64 --steps 4 --log-every 0 --val-batches 0 --losses-out "$out/det-$name.losses" "$@" \
    >"$out/det-$name.log" 2>&1 || { say "- $name: exit $?: $(grep -m1 -oE '\[[a-z_]+\] .*' "$out/det-$name.log" | cut -c1-160)"; status=1; }
}
det np1 1
det dp2 2 --dp 2
det dp2-tf32 2 --dp 2 --tf32
for other in dp2 dp2-tf32; do
  if [ -s "$out/det-np1.losses" ] && cmp -s "$out/det-np1.losses" "$out/det-$other.losses"; then
    say "- 1 rank against $other: the same bits ($(tr '\n' ' ' <"$out/det-np1.losses" | cut -c1-120))"
  else
    say "- 1 rank against $other: DIFFERENT ($(paste -d/ "$out/det-np1.losses" "$out/det-$other.losses" 2>/dev/null | tr '\n' ' ' | cut -c1-200))"
    status=1
  fi
done
say ""
say "Which communicator carried GPU tensors: $(grep -h -m1 'cross ranks' "$out"/*-np2-cuda.log 2>/dev/null | head -1 | cut -c1-200)"
say ""
say "Total: $(($(date +%s) - start)) s; exit status $status. Logs: $out/"
exit $status
