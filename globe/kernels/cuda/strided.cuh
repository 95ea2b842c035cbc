// Strided indexing for CUDA kernels: each thread maps the linear index of an element of the
// output shape to an offset in each operand, through per-operand strides (0 where an operand is
// broadcast). Up to kMaxDims dims; shapes and strides travel by value in the kernel's arguments.
#pragma once

#include <cstdint>

#include "globe/base/error.h"
#include "globe/core/tensor.h"

namespace globe::kernels::cuda {

using globe::kMaxDims;  // core/shape.h: every tensor's limit, so the check below never fires

template <int N>
struct Indexer {
  int dims = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
  int64_t offsets[N] = {};

  __device__ void offsets_of(int64_t linear, int64_t* out) const {
    for (int k = 0; k < N; ++k) out[k] = offsets[k];
    for (int d = dims - 1; d >= 0; --d) {
      const int64_t i = linear % shape[d];
      linear /= shape[d];
      for (int k = 0; k < N; ++k) out[k] += i * strides[k][d];
    }
  }
};

// Strides that read `t` as if broadcast to `out` (0 along broadcast dims), in elements.
inline void broadcast_into(const Tensor& t, const Shape& out, int64_t* strides) {
  const Shape &s = t.shape(), &st = t.strides();
  const size_t lead = out.size() - s.size();
  for (size_t i = 0; i < out.size(); ++i) strides[i] = i < lead || s[i - lead] == 1 ? 0 : st[i - lead];
}

// An indexer over `shape` for `operands` (each broadcastable to it).
template <int N>
Indexer<N> make_indexer(const Shape& shape, const Tensor* const (&operands)[N], const char* op) {
  GLOBE_CHECK(int(shape.size()) <= kMaxDims, "[", op, "] CUDA kernels take at most ", kMaxDims, " dims, got ",
              shape_str(shape));
  Indexer<N> ix;
  ix.dims = int(shape.size());
  for (int d = 0; d < ix.dims; ++d) ix.shape[d] = shape[size_t(d)];
  for (int k = 0; k < N; ++k) {
    broadcast_into(*operands[k], shape, ix.strides[k]);
    ix.offsets[k] = operands[k]->offset();
  }
  return ix;
}

constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

}  // namespace globe::kernels::cuda
