#!/usr/bin/env bash
# `pip install` of the Python package into a fresh virtual environment, as a Python user installs:
# a wheel made by setup.py from the built tree BUILD (GLOBE_PREBUILT: the suite compiles nothing
# twice; `pip install .` on its own builds the same tree itself), installed with pip, offline
# (Debian's setuptools, wheel and numpy through --system-site-packages). Then, outside the source
# tree and with no PYTHONPATH: `import globe` comes from the venv, and the quick start runs on 2
# ranks through both `python -m globe.launch` and the `globe-launch` command, printing what the
# build tree's run prints.
#   check_pip.sh SOURCE_DIR BUILD
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset PYTHONPATH

/usr/bin/python3 -m venv --system-site-packages "$work/venv"
py=$work/venv/bin/python
# What setup.py reads, copied (pip builds in place; the checkout stays as it is). With
# GLOBE_PREBUILT it compiles nothing, so the sources themselves are not needed.
mkdir "$work/src"
cp "$src"/{setup.py,pyproject.toml,README.md,CMakeLists.txt} "$work/src"
GLOBE_PREBUILT=$build "$py" -m pip wheel --no-build-isolation --no-deps -q -w "$work/wheels" "$work/src" > "$work/wheel.log" 2>&1 ||
  { cat "$work/wheel.log"; echo "FAIL: building the wheel"; exit 1; }
wheel=$(ls "$work"/wheels/globe-*.whl)
[[ $(basename "$wheel") == globe-*-cp3*-linux_x86_64.whl ]] || { echo "FAIL: the wheel is not platform-tagged: $wheel"; exit 1; }
"$py" -m pip install --no-index --no-deps -q "$wheel" > "$work/install.log" 2>&1 ||
  { cat "$work/install.log"; echo "FAIL: pip install of $wheel"; exit 1; }
echo "ok: pip installed $(basename "$wheel")"

cd "$work/venv"
where=$("$py" -c 'import globe; print(globe.__file__)')
[[ $where == "$work/venv/lib/"*"/site-packages/globe/__init__.py" ]] || { echo "FAIL: import globe came from $where"; exit 1; }
[[ -x $work/venv/bin/globe-launch ]] || { echo "FAIL: no globe-launch command in the venv"; exit 1; }
echo "ok: import globe from the venv; globe-launch command installed"

expected=$(PYTHONPATH=$build/python /usr/bin/python3 -m globe.launch --nproc_per_node 2 "$src/examples/python/quickstart.py" --iters 3)
[[ $expected == *"loss"* ]] || { echo "FAIL: the build tree's quick start printed '$expected'"; exit 1; }
via_module=$("$py" -m globe.launch --nproc_per_node 2 "$src/examples/python/quickstart.py" --iters 3)
[[ $via_module == "$expected" ]] || { printf 'FAIL: python -m globe.launch printed\n%s\nexpected\n%s\n' "$via_module" "$expected"; exit 1; }
via_command=$(PATH=$work/venv/bin:$PATH globe-launch --nproc_per_node 2 python "$src/examples/python/quickstart.py" --iters 3)
[[ $via_command == "$expected" ]] || { printf 'FAIL: globe-launch ... python printed\n%s\nexpected\n%s\n' "$via_command" "$expected"; exit 1; }
echo "$via_command"
echo "ok: the quick start on 2 ranks, from the venv, both ways"
echo "check_pip: all checks passed"
