// The machine a measurement ran on, for benchmark RESULT lines (bench/RESULTS.md keeps a table per
// machine kind): what a figure from one CPU says about another depends on all of these.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace globe::dist {

// (name, value) pairs, in this order:
//   cpu       the CPU's model name (/proc/cpuinfo)
//   cores     the CPUs this process may run on
//   isa       the vector ISA Globe's own loops run here ("x86-64-v3 (AVX2, FMA)" or the
//             baseline's), then what the CPU offers beyond it ("AVX-512", "AVX-512 BF16", "AMX")
//   blas      the BLAS's build (OpenBLAS's configuration) and the kernel core it runs, with a note
//             where Globe chose it over OpenBLAS's own pick (kernels/cpu/blas_core.h)
//   mpi       the MPI library's version line
//   gpus      how many GPUs this process sees (0 without a CUDA build)
std::vector<std::pair<std::string, std::string>> machine_info();

}  // namespace globe::dist
