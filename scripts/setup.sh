#!/usr/bin/env bash
# Installs what building and testing Globe need, from Debian, and builds Globe into build/.
# Usage: scripts/setup.sh            (Release build in build/)
#        GLOBE_JOBS=N scripts/setup.sh
# The PyTorch peers (benchmarks against PyTorch, regenerating golden data) need more:
# scripts/setup_peers.sh. Figures for both: README.md, "Set-up".
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libopenmpi-dev openmpi-bin          # communication (docs/design.md §0)
  libopenblas-dev                     # matmul
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  clang libclang-rt-14-dev            # sanitizer runtime + libFuzzer
  python3-numpy                       # the independent safetensors reader in the tests; Python front end
  python3-dev pybind11-dev python3-pytest  # the Python front end (python/) and its tests
  fortunes                            # the GPT's training text (/usr/share/games/fortunes)
  libpcre2-dev libsentencepiece-dev   # the Llama's tokenizers: BPE's Unicode patterns, SentencePiece models
  mkdocs mkdocs-material chromium     # the documentation site and its browser test (docs_site)
)
source scripts/lib/install_missing.sh
install_missing "${packages[@]}"

jobs="${GLOBE_JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
if grep -q '^GLOBE_WITH_CUDA:INTERNAL=ON' build/CMakeCache.txt 2>/dev/null; then
  backend="CPU and CUDA backends (CUDA toolkit found; -DGLOBE_CUDA=OFF for CPU only)"
else
  backend="CPU backend only (no CUDA toolkit found: nvcc in PATH, \$CUDA_HOME or /usr/local/cuda)"
fi
echo "setup.sh: built into build/ (programs in build/bin/) with the $backend"
