#!/usr/bin/env bash
# Installs the build tree BUILD into a fresh prefix, then builds SOURCE (the quick start's program
# of your own) against it both ways a C++ project would (find_package(Globe) through the CMake
# project CONSUMER_DIR, and pkg-config), and runs each with the installed globe-launch on 2 ranks.
# Every step must work and print what is expected.
#   check_install.sh BUILD CONSUMER_DIR SOURCE
set -euo pipefail
build=$1 consumer=$2 source=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in include/globe/globe.h include/globe/version.h lib/libglobe.a bin/globe-launch bin/globe-ckpt \
         lib/cmake/Globe/GlobeConfig.cmake lib/pkgconfig/globe.pc; do
  [[ -e $prefix/$f ]] || { echo "FAIL: $f is not installed"; exit 1; }
done
version=$("$prefix/bin/globe-launch" --version)
[[ $version == "globe-launch (Globe) "* ]] || { echo "FAIL: --version printed '$version'"; exit 1; }
echo "ok: installed; $version"

# 1. CMake: find_package(Globe) -> Globe::globe.
cmake -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_SOURCE="$source" > "$work/configure.log"
cmake --build "$work/cmake-build" > "$work/build.log"
out=$("$prefix/bin/globe-launch" --nproc_per_node 2 "$work/cmake-build/consumer")
echo "$out"
[[ $out == "[rank0] ranks 2, loss "* ]] || { echo "FAIL: find_package build printed '$out'"; exit 1; }
echo "ok: find_package(Globe)"

# 2. pkg-config.
g++ "$source" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs globe) -o "$work/consumer-pc"
out_pc=$("$prefix/bin/globe-launch" --nproc_per_node 2 "$work/consumer-pc")
[[ $out_pc == "$out" ]] || { echo "FAIL: the pkg-config build printed '$out_pc', the CMake one '$out'"; exit 1; }
echo "ok: pkg-config --cflags --libs globe"

# 3. A dependency the package needs but the consumer's system lacks (nlohmann_json's package hidden
#    with CMAKE_IGNORE_PATH): configuring fails, naming it and Globe's package file.
hidden=$(find /usr -name nlohmann_jsonConfig.cmake -printf '%h\n' 2>/dev/null | head -1)
[[ -n $hidden ]] || { echo "FAIL: nlohmann_jsonConfig.cmake not found under /usr"; exit 1; }
if cmake -S "$consumer" -B "$work/cmake-missing" -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_SOURCE="$source" \
     -DCMAKE_IGNORE_PATH="$hidden" > "$work/missing.log" 2>&1; then
  echo "FAIL: find_package(Globe) succeeded without nlohmann_json"; exit 1
fi
grep -q 'provided by "nlohmann_json"' "$work/missing.log" && grep -q "GlobeConfig.cmake" "$work/missing.log" ||
  { cat "$work/missing.log"; echo "FAIL: the error does not name nlohmann_json and Globe's package"; exit 1; }
echo "ok: without nlohmann_json, find_package(Globe) fails naming it (from GlobeConfig.cmake)"
# 4. The Python package, where the build has it: importable from the prefix, and its launcher
#    finds the installed globe-launch.
if [[ -d $build/python/globe ]]; then
  pkg=$prefix/lib/python3/dist-packages
  [[ -f $pkg/globe/__init__.py ]] || { echo "FAIL: the Python package is not installed under $pkg"; exit 1; }
  cat > "$work/job.py" <<'PY'
import globe as flow
p = flow.placement("cpu", ranks=[0, 1])
x = flow.ones(4, 2, placement=p, sbp=flow.sbp.split(0))
total = flow.sum(x).item()
if flow.env.get_rank() == 0:
    print(f"ranks {flow.env.get_world_size()}, sum {total:g}")
PY
  out_py=$(cd "$work" && PYTHONPATH=$pkg /usr/bin/python3 -m globe.launch --nproc_per_node 2 job.py)
  [[ $out_py == "[rank0] ranks 2, sum 8" ]] || { echo "FAIL: the installed Python package printed '$out_py'"; exit 1; }
  echo "ok: the installed Python package runs under python3 -m globe.launch: $out_py"
fi
echo "check_install: all checks passed"
