# Sourced by the GPU machine's scripts (scripts/gpu_check.sh, bench/gpt/run_gpu_gpt.sh): makes
# Open MPI, OpenBLAS, GoogleTest and nlohmann-json usable, from the machine itself or else from the
# Debian packages scripts/gpu_debs.sh downloaded into $debs, and finds the GPT's text.
#
# Reads: debs (the .deb folder), force_debs (1: always unpack), say (a function that reports),
# and for gpu_build out, jobs, start, report.
# Sets: cmake_deps (cmake's arguments to find the unpacked packages; empty when the machine has
# them), corpus (the fortunes folder); exports PATH, OPAL_PREFIX and LD_LIBRARY_PATH as needed.
# Returns 1 when mpirun is missing and no .deb files were carried. Defines gpu_build.
# ---- dependencies: the machine's own, else the carried Debian packages ------------------------
cmake_deps=()
if [ $force_debs = 1 ] || ! command -v mpirun >/dev/null 2>&1; then
  root=/tmp/globe-deps
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    say "- FAIL: no mpirun here and no .deb files in $debs (run scripts/gpu_debs.sh where the archive is reachable)"
    return 1
  fi
  rm -rf "$root" && mkdir -p "$root/bin"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done
  lib=$root/usr/lib/x86_64-linux-gnu
  # Debian picks these through update-alternatives, which dpkg -x does not run.
  ln -sf "$root/usr/bin/mpirun.openmpi" "$root/bin/mpirun"
  ln -sf "$root/usr/bin/mpicxx.openmpi" "$root/bin/mpicxx"
  ln -sf "$lib/openblas-pthread/libopenblas.so.0" "$lib/libopenblas.so.0"
  ln -sf "$lib/openblas-pthread/libopenblas.so" "$lib/libopenblas.so"
  # Open MPI relocated: its prefix, and its configuration (openmpi-mca-params.conf) under it.
  export PATH="$root/bin:$PATH" OPAL_PREFIX="$root/usr" OPAL_SYSCONFDIR="$root/etc/openmpi"
  export LD_LIBRARY_PATH="$lib:$lib/openmpi/lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # FindMPI without the wrapper compiler, and without the C++ bindings Open MPI no longer ships;
  # cblas.h from OpenBLAS's own folder (the alternatives link is not made either).
  cmake_deps=(-DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_CXX_SKIP_MPICXX=ON -DMPI_CXX_HEADER_DIR="$lib/openmpi/include"
              -DMPI_CXX_LIB_NAMES="mpi" "-DCMAKE_CXX_FLAGS=-isystem $root/usr/include/x86_64-linux-gnu/openblas-pthread"
              -DMPI_mpi_LIBRARY="$lib/openmpi/lib/libmpi.so" -DBLAS_LIBRARIES="$lib/openblas-pthread/libopenblas.so"
              -DCMAKE_PREFIX_PATH="$root/usr;$lib/cmake" -DGTest_DIR="$lib/cmake/GTest"
              -Dnlohmann_json_DIR="$root/usr/share/cmake/nlohmann_json")
  say "- dependencies: unpacked from $(ls "$debs"/*.deb | wc -l) carried .deb files into $root"
else
  say "- dependencies: the machine's own (mpirun at $(command -v mpirun))"
fi

# The GPT's training text: the machine's, else the carried fortunes packages'.
corpus=/usr/share/games/fortunes
if [ ! -d "$corpus" ] && ls "$debs"/fortunes*.deb >/dev/null 2>&1; then
  rm -rf /tmp/globe-corpus && for f in "$debs"/fortunes*.deb; do dpkg -x "$f" /tmp/globe-corpus; done
  corpus=/tmp/globe-corpus/usr/share/games/fortunes
fi
say "- the GPT's text: $corpus"


# gpu_build DIR TARGET...: configures a Release build with the CUDA backend in DIR and builds the
# targets with $jobs jobs, each step under a time limit (GPU time is lent by the minute); logs go
# to $out/configure.log and $out/build.log. The build goes on past a target that fails (-k 0), so
# the other targets' checks still run: 1 only when the configure fails or none of the targets
# was built; a failed target is named in the report.
gpu_build() {
  local dir=$1
  shift
  if ! timeout 180 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGLOBE_CUDA=ON -DGLOBE_BUILD_BENCH=OFF \
         "${cmake_deps[@]}" >"$out/configure.log" 2>&1; then
    say "- FAIL: configure; the end of its log:"
    tail -30 "$out/configure.log" | tee -a "$report"
    return 1
  fi
  local rc=0
  timeout "${GLOBE_BUILD_TIMEOUT:-420}" cmake --build "$dir" -j "$jobs" --target "$@" -- -k 0 >"$out/build.log" 2>&1 || rc=$?
  local built=0 missing=()
  for t in "$@"; do
    if [ -x "$dir/bin/$t" ]; then built=$((built + 1)); else missing+=("$t"); fi
  done
  if [ $rc -eq 0 ]; then
    say "- build: ok in $(($(date +%s) - start)) s ($(grep -c 'warning' "$out/build.log") warning lines in build.log)"
  else
    say "- build: exit $rc ($([ $rc -eq 124 ] && echo 'over its time limit' || echo 'a target failed')) after $(($(date +%s) - start)) s;" \
        "not built: ${missing[*]:-none}; the first errors:"
    grep -m5 -E 'error|FAILED' "$out/build.log" | cut -c1-300 | sed 's/^/    /' | tee -a "$report"
  fi
  [ $built -gt 0 ]
}
