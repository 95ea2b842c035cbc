// The CUDA table's argmax, gather and scatter_add (kernels/cpu/reduce.h describes each). Out-of-range
// indices cannot be reported from a kernel without a host synchronisation: gather reads 0 for
// them and scatter_add skips them (the CPU throws naming the index). scatter_add adds with
// atomics, so a float32 sum over repeated indices may differ from the CPU's in the last bits and
// from run to run.
#include <cuda_runtime.h>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/cuda/strided.cuh"

namespace globe::kernels::cuda {

namespace {

// out[o] = the first j where a's row through o along dim is largest (ties to the first, as the CPU).
template <class T>
__global__ void argmax_kernel(int64_t n, Indexer<1> rows, int64_t extent, int64_t step, const T* a, int64_t* out) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= n) return;
  int64_t off[1];
  rows.offsets_of(o, off);
  const T* p = a + off[0];
  int64_t best = 0;
  for (int64_t j = 1; j < extent; ++j)
    if (p[j * step] > p[best * step]) best = j;
  out[o] = best;
}

// For element e of the index (dense, shaped like the walk): the offset in the indexed tensor of
// the element it names, or -1 when the index is out of range.
__device__ int64_t indexed_offset(const Indexer<1>& walk, int64_t e, const int64_t* index, int64_t extent,
                                  int64_t step) {
  int64_t off[1];
  walk.offsets_of(e, off);
  const int64_t k = index[e];
  return k >= 0 && k < extent ? off[0] + k * step : -1;
}

template <class T>
__global__ void gather_kernel(int64_t n, Indexer<1> walk, int64_t extent, int64_t step, const T* a,
                              const int64_t* index, T* out) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const int64_t from = indexed_offset(walk, e, index, extent, step);
  out[e] = from < 0 ? T(0) : a[from];
}

template <class T>
__global__ void scatter_add_kernel(int64_t n, Indexer<1> walk, int64_t extent, int64_t step, const int64_t* index,
                                   const T* src, T* out) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= n) return;
  const int64_t to = indexed_offset(walk, e, index, extent, step);
  if (to < 0) return;
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(out + to), static_cast<unsigned long long>(src[e]));
  } else {
    atomicAdd(out + to, src[e]);
  }
}

// Walks `index_shape` through `strides` (of the indexed tensor) with the dim's stride zeroed.
Indexer<1> walk_of(const Shape& index_shape, Shape strides, int64_t offset, int64_t dim) {
  GLOBE_CHECK(int(index_shape.size()) <= kMaxDims, "[gather] CUDA kernels take at most ", kMaxDims, " dims");
  strides[size_t(dim)] = 0;
  Indexer<1> ix;
  ix.dims = int(index_shape.size());
  for (int d = 0; d < ix.dims; ++d) {
    ix.shape[d] = index_shape[size_t(d)];
    ix.strides[0][d] = strides[size_t(d)];
  }
  ix.offsets[0] = offset;
  return ix;
}

}  // namespace

Tensor argmax_keepdim(const Tensor& a, int64_t dim) {
  Shape keep = a.shape();
  const int64_t extent = keep[size_t(dim)];
  GLOBE_CHECK(extent > 0, "[argmax] dim ", dim, " of shape ", shape_str(a.shape()), " is empty");
  keep[size_t(dim)] = 1;
  Tensor out = Tensor::uninitialized(keep, kInt64, a.device());
  const int64_t n = out.numel();
  if (n == 0) return out;
  const Indexer<1> rows = walk_of(keep, a.strides(), a.offset(), dim);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    argmax_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(a)>>>(n, rows, extent, a.strides()[size_t(dim)],
                                                                    static_cast<const T*>(a.storage()->data),
                                                                    ptr<int64_t>(out));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "argmax");
  return out;
}

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index_in) {
  const Tensor index = device_dense(index_in);
  Tensor out = Tensor::uninitialized(index.shape(), a.dtype(), a.device());
  const int64_t n = index.numel();
  if (n == 0) return out;
  const Indexer<1> walk = walk_of(index.shape(), a.strides(), a.offset(), dim);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(a)>>>(n, walk, a.shape()[size_t(dim)],
                                                                    a.strides()[size_t(dim)],
                                                                    static_cast<const T*>(a.storage()->data),
                                                                    ptr<int64_t>(index), ptr<T>(out));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "gather");
  return out;
}

Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index_in, const Tensor& src_in) {
  const Tensor index = device_dense(index_in), src = device_dense(src_in);
  Tensor out = Tensor::empty(shape, src.dtype(), src.device());
  const int64_t n = index.numel();
  if (n == 0) return out;
  const Indexer<1> walk = walk_of(index.shape(), out.strides(), 0, dim);
  visit_dtype(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    scatter_add_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(src)>>>(
        n, walk, shape[size_t(dim)], out.strides()[size_t(dim)], ptr<int64_t>(index), ptr<T>(src), ptr<T>(out));
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "scatter_add");
  return out;
}

}  // namespace globe::kernels::cuda
