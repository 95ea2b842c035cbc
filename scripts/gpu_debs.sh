#!/usr/bin/env bash
# Downloads (here, where Debian's archive can be reached) the Debian packages that building and
# testing Globe needs on a GPU machine that has no network and may lack them: Open MPI with its
# run-time libraries, OpenBLAS, GoogleTest and nlohmann-json, and the GPT's text (fortunes). They land in .gpu-debs/ (ignored by
# git); scripts/gpu_check.sh unpacks them there with dpkg -x when the machine lacks them.
#   scripts/gpu_debs.sh            # then carry .gpu-debs to the GPU machine
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
  libpmix2 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libevent-2.1-7 libfabric1 libucx0
  libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1 libltdl7
  libmunge2 libpciaccess0 libxnvctrl0
  libopenblas0 libopenblas0-pthread libopenblas-dev libopenblas-pthread-dev libgfortran5 libquadmath0
  libgtest-dev libgmock-dev nlohmann-json3-dev
  fortunes fortunes-min
)
mkdir -p .gpu-debs
(cd .gpu-debs && apt-get download "${packages[@]}")
du -sh .gpu-debs
