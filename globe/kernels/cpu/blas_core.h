// Which of OpenBLAS's kernel sets runs on this CPU.
//
// A DYNAMIC_ARCH OpenBLAS (Debian's) picks its kernels ("core") by the CPU model when it loads. A
// model it does not know gets a fallback: Debian's 0.3.21 runs Prescott's SSE3 kernels on an Intel
// Emerald Rapids (model 207), 3.5x slower in sgemm than its Cooperlake kernels on the same CPU
// (bench/RESULTS.md, "Machine kinds"). When the library loads, Globe compares the core's vector
// ISA with the CPU's and, where the CPU has more, re-runs OpenBLAS's own selection with
// OPENBLAS_CORETYPE set to the best core for the CPU's ISA (AVX-512 with BF16: Cooperlake;
// AVX-512: SkylakeX; AVX2: Haswell; AVX: Sandybridge). A user's OPENBLAS_CORETYPE is never
// overridden, and GLOBE_BLAS_CORE=keep leaves OpenBLAS's choice alone.
#pragma once

#include <string>

namespace globe::kernels {

// What happened at load: "" where OpenBLAS's own choice stands, else a sentence naming both cores
// ("chosen by Globe: OpenBLAS picked Prescott for this CPU"). The machine line of every benchmark
// carries it.
const std::string& blas_core_note();

// The widest vector ISA of an OpenBLAS kernel set by its name ("Prescott", "Cooperlake"): 0 SSE,
// 1 AVX, 2 AVX2 + FMA, 3 AVX-512, 4 AVX-512 with BF16; and the widest this CPU runs that the
// loaded OpenBLAS holds a kernel set for.
int blas_core_level(const char* core);
int blas_best_level();

}  // namespace globe::kernels
