#!/usr/bin/env bash
# Regenerates the golden data of Globe's GPT test (tests/gpt, test_gpt) with the PyTorch reference
# bench/gpt/torch_gpt.py: a small model's initial weights and the losses of its first 20 steps.
#
#   scripts/golden/make_gpt_golden.sh          (from anywhere; needs python3-torch and fortunes)
#
# Writes tests/gpt/data/gpt_small_init.safetensors and tests/gpt/data/gpt_small_losses.json
# (see tests/gpt/data/README.md). Deterministic: seeded, one thread, CPU float32.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/require_torch.sh
require_torch make_gpt_golden.sh

python=/usr/bin/python3                   # Debian's interpreter, the one with python3-torch
corpus=/usr/share/games/fortunes          # the reference's default --data (package fortunes)
out=tests/gpt/data

if [ ! -d "$corpus" ]; then
  echo "make_gpt_golden.sh: $corpus is missing (apt-get install fortunes)" >&2
  exit 1
fi
mkdir -p "$out"

"$python" bench/gpt/torch_gpt.py \
  --layers 2 --heads 2 --embd 32 --block 16 --vocab 256 --batch 4 --seed 0 --threads 1 \
  --steps 20 --warmup 0 \
  --save-init "$out/gpt_small_init.safetensors" \
  --losses-out "$out/gpt_small_losses.json"

for f in "$out/gpt_small_init.safetensors" "$out/gpt_small_losses.json"; do
  echo "wrote $f ($(stat -c %s "$f") bytes)"
done
