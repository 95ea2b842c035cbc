// The CUDA kernel table of a CPU-only build (CMake compiles this instead of the rest of kernels/cuda/).
#include "globe/base/error.h"
#include "globe/kernels/cuda/table.h"

namespace globe::kernels::cuda {

const DeviceKernels& table() {
  GLOBE_FAIL("[kernels] this build has no CUDA (configure with a CUDA toolkit: cmake -DGLOBE_CUDA=ON)");
}

}  // namespace globe::kernels::cuda
