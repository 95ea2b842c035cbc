// The BLAS the CPU kernels run on, as the machine report names it (dist/machine.h).
#pragma once

#include <string>

namespace globe::kernels {

// "OpenBLAS 0.3.26 ... ; core Haswell", with the note when Globe re-picked OpenBLAS's kernels
// (kernels/cpu/blas_core.h).
std::string blas_description();

}  // namespace globe::kernels
