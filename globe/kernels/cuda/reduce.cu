// The CUDA table's sum: one thread per output element walks the reduced elements in row-major
// order, accumulating float32 in float64 as the CPU does (the CPU's blocked order differs, so
// results agree within rounding of the final float32, not bit for bit).
#include <cuda_runtime.h>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/cuda/strided.cuh"

namespace globe::kernels::cuda {

namespace {

// The reduced dims of the input: their extents and strides, walked by every thread.
struct Reduced {
  int dims = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t count = 1;
};

template <class T, class Acc>
__global__ void sum_kernel(int64_t n, Indexer<1> kept, Reduced reduced, const T* a, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t base[1];
  kept.offsets_of(i, base);
  Acc acc = Acc(0);
  for (int64_t j = 0; j < reduced.count; ++j) {
    int64_t off = base[0], rest = j;
    for (int d = reduced.dims - 1; d >= 0; --d) {
      off += (rest % reduced.shape[d]) * reduced.strides[d];
      rest /= reduced.shape[d];
    }
    acc += Acc(a[off]);
  }
  out[i] = T(acc);
}

}  // namespace

Tensor sum_to_keepdim(const Tensor& a, const Shape& keep) {
  GLOBE_CHECK(a.dim() <= kMaxDims, "[sum] CUDA kernels take at most ", kMaxDims, " dims, got ", shape_str(a.shape()));
  Tensor out = Tensor::uninitialized(keep, a.dtype(), a.device());
  // The kept dims index the output; the input is read through its own strides there (0 where the
  // output is reduced, so the walk below starts at the block's first element).
  Indexer<1> kept;
  kept.dims = int(keep.size());
  Reduced reduced;
  for (int d = 0; d < kept.dims; ++d) {
    kept.shape[d] = keep[size_t(d)];
    const bool summed = keep[size_t(d)] == 1 && a.shape()[size_t(d)] != 1;
    kept.strides[0][d] = summed ? 0 : a.strides()[size_t(d)];
    if (summed) {
      reduced.shape[reduced.dims] = a.shape()[size_t(d)];
      reduced.strides[reduced.dims] = a.strides()[size_t(d)];
      reduced.count *= a.shape()[size_t(d)];
      ++reduced.dims;
    }
  }
  kept.offsets[0] = a.offset();
  const int64_t n = out.numel();
  if (n == 0) return out;
  auto stream = stream_of(a);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    sum_kernel<T, Acc><<<blocks_for(n), kThreads, 0, stream>>>(n, kept, reduced, static_cast<const T*>(a.storage()->data),
                                                              static_cast<T*>(out.storage()->data));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "sum");
  return out;
}

}  // namespace globe::kernels::cuda
