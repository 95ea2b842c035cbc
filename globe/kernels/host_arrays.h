// Arithmetic on host arrays, for the communicators' reductions over MPI's host buffers (dist's
// ring all-reduce and reduce-scatter, the small all-reduce's sum): memory no device holds, so no
// kernel table is involved. The loops are the CPU kernels' (kernels/cpu/elementwise.cpp).
#pragma once

#include <cstdint>

#include "globe/core/dtype.h"

namespace globe::kernels {

// Sums over host arrays of `dtype` that do not alias: out[i] = a[i] + b[i], and acc[i] += x[i].
void add_arrays(DType dtype, void* out, const void* a, const void* b, int64_t n);
void accumulate_array(DType dtype, void* acc, const void* x, int64_t n);

}  // namespace globe::kernels
