#!/usr/bin/env bash
# Installs what the peers need beyond scripts/setup.sh, for the benchmarks against PyTorch
# (bench/torch_mlp.py, bench/gpt/) and for regenerating the golden data (scripts/golden/):
#   - Debian's python3-torch and python3-numpy (system Python);
#   - .venv-peers/: a virtual environment over the system packages (so Debian's torch) with Hugging
#     Face transformers, safetensors and tokenizers, and sentencepiece, from PyPI — the Llama references
#     (scripts/golden/make_llama_golden.py, CTest llama_checkpoint_loads_in_transformers).
#     transformers 4.46 is the last release that runs on Debian 12's torch 1.13.
# Neither building nor testing Globe needs any of it; the tests that use it skip without it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/install_missing.sh
install_missing python3-torch python3-numpy python3-venv
/usr/bin/python3 -c "import torch; print('setup_peers.sh: torch', torch.__version__)"
if ! .venv-peers/bin/python -c "import transformers, sentencepiece" 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages .venv-peers
  .venv-peers/bin/pip install --quiet "transformers==4.46.3" "safetensors<0.6" "tokenizers<0.21" "sentencepiece<0.3"
fi
.venv-peers/bin/python -c "import transformers; print('setup_peers.sh: transformers', transformers.__version__)"
