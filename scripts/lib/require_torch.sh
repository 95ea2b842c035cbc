# Sourced by the scripts that run the PyTorch peers: require_torch NAME exits 2 with a message
# naming the set-up command when Debian's python3-torch is not installed.
require_torch() {
  /usr/bin/python3 -c "import torch" 2>/dev/null && return 0
  echo "$1: needs PyTorch (Debian's python3-torch) for the peer it compares against; run scripts/setup_peers.sh" >&2
  exit 2
}
