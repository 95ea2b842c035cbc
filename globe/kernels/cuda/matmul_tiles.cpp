// The CUDA table's matmul_tiles (device_kernels.h): each tile's operands copied into fresh
// allocations, so that cuBLASLt sees the same shapes, strides and alignment for a tile wherever
// it lies, then one product per tile (matmul.cpp) written into its block of the output.
//
// Written and compile-checked on a machine without a GPU: this file has not run yet.
#include <algorithm>

#include "globe/kernels/cuda/kernels.h"

namespace globe::kernels::cuda {

namespace {

// t [B, r, c]'s matrix `e`, rows [r0, r0 + h), columns [c0, c0 + w), as a new dense [h, w].
Tensor block(const Tensor& t, int64_t e, int64_t r0, int64_t h, int64_t c0, int64_t w) {
  const Tensor view = Tensor::view_of(t, {h, w}, {t.strides()[1], t.strides()[2]},
                                      t.offset() + e * t.strides()[0] + r0 * t.strides()[1] + c0 * t.strides()[2]);
  Tensor dense = Tensor::uninitialized({h, w}, t.dtype(), t.device());
  copy_into(dense, view);
  return dense;
}

}  // namespace

void matmul_tiles(const Tensor& out, const Tensor& a, const Tensor& b, int64_t tile_n, int64_t tile_m) {
  const int64_t entries = out.shape()[0], n = out.shape()[1], m = out.shape()[2], k = a.shape()[2];
  for (int64_t e = 0; e < entries; ++e)
    for (int64_t r = 0; r < n; r += tile_n)
      for (int64_t c = 0; c < m; c += tile_m) {
        const int64_t h = std::min(tile_n, n - r), w = std::min(tile_m, m - c);
        const Tensor product = matmul(block(a, e, r, h, 0, k), block(b, e, 0, k, c, w), {h, w}, Tensor());
        copy_into(Tensor::view_of(out, {h, w}, {m, 1}, out.offset() + (e * n + r) * m + c), product);
      }
}

}  // namespace globe::kernels::cuda
