#!/usr/bin/env bash
# Installs what the PyTorch peers need beyond scripts/setup.sh: Debian's python3-torch, for the
# benchmarks against PyTorch (bench/torch_mlp.py, bench/gpt/) and for regenerating the golden data
# (scripts/golden/). Neither building nor testing Globe needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/install_missing.sh
install_missing python3-torch python3-numpy
/usr/bin/python3 -c "import torch; print('setup_peers.sh: torch', torch.__version__)"
