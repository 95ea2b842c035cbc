#!/usr/bin/env bash
# The Python front end's cost on a training step: bench_mlp (C++) and bench/python_mlp.py (the
# same data-parallel MLP step from Python) in pairs, 2 ranks x 1 thread, three pairs; prints each
# pair's step times and Python / C++. Builds nothing (ninja -C build bench_mlp _globe globe-launch).
#   bench/run_python_overhead.sh [--pairs N]
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=3
[[ ${1:-} == --pairs ]] && PAIRS=$2
export OPENBLAS_NUM_THREADS=1
field() { grep '^\(\[rank0\] \)\?RESULT' | sed 's/^\[rank0\] //; s/^RESULT //' | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
for i in $(seq "$PAIRS"); do
  cpp=$(build/bin/globe-launch --nproc_per_node 2 build/bin/bench_mlp --threads 1 | field step_ms_median)
  py=$(PYTHONPATH=build/python /usr/bin/python3 -m globe.launch --nproc_per_node 2 bench/python_mlp.py | field step_ms_median)
  python3 -c "print(f'pair $i: C++ {float($cpp):.3f} ms/step, Python {float($py):.3f} ms/step, Python / C++ {float($py) / float($cpp):.3f}')"
done
