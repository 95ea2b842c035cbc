// GLOBE_CUDA_CHECK(call, "op"): a failed CUDA runtime call becomes a globe::Error
// "[op] CUDA error: <the runtime's words> (<the call>)". For CUDA-build sources only.
#pragma once

#include <cuda_runtime.h>

#include "globe/base/error.h"

#define GLOBE_CUDA_CHECK(call, what)                                                              \
  do {                                                                                            \
    const cudaError_t globe_err_ = (call);                                                        \
    GLOBE_CHECK(globe_err_ == cudaSuccess, "[", what, "] CUDA error: ", cudaGetErrorString(globe_err_), \
                " (", #call, ")");                                                                \
  } while (0)
