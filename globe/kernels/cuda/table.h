// The CUDA kernel table (device_kernels.h). A CUDA build implements it in kernels/cuda/; a
// CPU-only build links kernels/cuda/no_cuda.cpp, which throws (kernels_on checks the device first).
// Included only by kernels/device_kernels.cpp and the CUDA table's own sources.
#pragma once

#include "globe/kernels/device_kernels.h"

namespace globe::kernels::cuda {

const DeviceKernels& table();

}  // namespace globe::kernels::cuda
