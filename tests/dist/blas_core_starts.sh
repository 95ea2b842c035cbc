#!/usr/bin/env bash
# Starts tests/dist/blas_core_start (a Globe program where the re-pick of OpenBLAS's kernels
# applies) N times, P at once so that the machine is busy and OpenBLAS's threads start late, and
# fails if any start dies (a signal) or prints no re-pick. The re-pick once crashed about one start
# in 700 on a busy machine (issue 54: a thread's own selection raced Globe's).
#   tests/dist/blas_core_starts.sh PROGRAM [N=2000] [P=4]
set -u
program=$1 n=${2:-2000} p=${3:-4}
first=$(OPENBLAS_CORETYPE=Prescott OPENBLAS_NUM_THREADS=4 "$program")
if ! grep -q "^note: chosen by Globe: OpenBLAS picked Prescott" <<<"$first"; then
  echo "the re-pick does not apply here (no AVX, or an OpenBLAS without DYNAMIC_ARCH):"
  echo "$first"
  echo "SKIPPED"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((w = 0; w < p; ++w)); do
  (
    for ((i = w; i < n; i += p)); do
      OPENBLAS_CORETYPE=Prescott OPENBLAS_NUM_THREADS=4 "$program" >"$dir/out.$w" 2>&1
      rc=$?
      if [ "$rc" != 0 ] || ! grep -q "^note: chosen by Globe" "$dir/out.$w"; then
        echo "start $i: exit status $rc"
        cat "$dir/out.$w"
      fi
    done >"$dir/failures.$w"
  ) &
done
wait
failures=$(cat "$dir"/failures.* | grep -c "^start ")
cat "$dir"/failures.* | head -20
echo "$n starts, $p at a time: $failures failed"
echo "$first"
[ "$failures" = 0 ]
