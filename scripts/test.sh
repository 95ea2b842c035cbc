#!/usr/bin/env bash
# Runs the whole test suite through CTest: unit tests, the launcher's tests, multi-rank tests under
# globe-launch (1, 2 and 4 ranks), examples, then the same suite built with AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/). Builds whatever is missing first. build/ has the CUDA
# backend where scripts/setup.sh found a CUDA toolkit (its GPU tests skip without a GPU);
# build-asan/ is always CPU-only: the sanitizers do not see device code, and it tests the
# CPU-only build's own paths (no_cuda.cpp).
#   scripts/test.sh                  everything
#   GLOBE_SKIP_SANITIZE=1 scripts/test.sh   skip the sanitizer build
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${GLOBE_JOBS:-$(nproc)}"

[ -f build/build.ninja ] || scripts/setup.sh
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure --timeout 600

if [ "${GLOBE_SKIP_SANITIZE:-0}" != "1" ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/) =="
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGLOBE_SANITIZE=ON -DGLOBE_BUILD_BENCH=OFF -DGLOBE_CUDA=OFF >/dev/null
  cmake --build build-asan -j "$jobs"
  # Open MPI's run-time components leak at MPI_Finalize in ways LeakSanitizer cannot attribute.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 900 -LE slow
fi
