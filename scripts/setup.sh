#!/usr/bin/env bash
# Installs every dependency from Debian and builds Globe into build/.
# Usage: scripts/setup.sh            (Release build in build/)
#        GLOBE_JOBS=N scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libopenmpi-dev openmpi-bin          # communication (docs/design.md §0)
  libopenblas-dev                     # matmul
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  clang libclang-rt-14-dev            # sanitizer runtime + libFuzzer
  python3-torch python3-numpy         # PyTorch peer for golden data and benchmarks (/usr/bin/python3)
  fortunes                            # the GPT's training text (/usr/share/games/fortunes)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

jobs="${GLOBE_JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
echo "setup.sh: built into build/ (programs in build/bin/)"
