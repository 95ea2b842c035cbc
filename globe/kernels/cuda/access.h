// How the CUDA table's sources reach a tensor on a GPU: the compute stream its kernels run on, and
// pointers into its memory. Plain C++, for .cu and .cpp sources alike.
#pragma once

#include <cuda_runtime.h>

#include "globe/core/tensor.h"
#include "globe/device/stream.h"

namespace globe::kernels::cuda {

// The compute stream of t's device (made current on the way: device/stream.h).
inline cudaStream_t stream_of(const Tensor& t) {
  return static_cast<cudaStream_t>(compute_stream(t.device()).handle);
}

// Element 0 of t (its offset applied), in device memory.
template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.device_data());
}

// The start of t's storage, for strided kernels that add each element's offset themselves.
template <class T>
T* base_of(const Tensor& t) {
  return static_cast<T*>(t.storage()->data);
}

}  // namespace globe::kernels::cuda
