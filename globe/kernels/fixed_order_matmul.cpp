#include "globe/kernels/fixed_order_matmul.h"

#include "globe/kernels/device_kernels.h"
#include "globe/kernels/elementwise.h"

namespace globe::kernels {

namespace {

// t [..., r, c] read over the output's batch dims `batch` as a [B, r, c] view, as fixed_order_gemm
// takes it: any strides within a matrix, one spacing between batch entries (0 where broadcast).
// t's own storage where its batch allows it, else a dense copy of the broadcast whole.
Tensor batch_of_matrices(const Tensor& t, const Shape& batch) {
  const int64_t nd = t.dim(), r = t.shape()[nd - 2], c = t.shape()[nd - 1];
  Shape full = batch;
  full.insert(full.end(), {r, c});
  const Shape s = broadcast_strides(t, full);
  int64_t spacing = 0, walked = 1;  // the innermost non-trivial batch dim's stride; entries so far
  bool even = true;
  for (size_t i = batch.size(); i-- > 0;) {
    if (batch[i] == 1) continue;
    if (walked == 1) spacing = s[i];
    else if (s[i] != spacing * walked) even = false;
    walked *= batch[i];
  }
  if (even) return Tensor::view_of(t, {numel_of(batch), r, c}, {spacing, s[s.size() - 2], s.back()},
                                     t.offset());
  const Tensor dense = device_dense(Tensor::view_of(t, full, s, t.offset()));
  return Tensor::view_of(dense, {numel_of(batch), r, c}, {r * c, c, 1}, dense.offset());
}

}  // namespace

Tensor fixed_order_matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, int64_t leaf) {
  if (a.dtype() == DType::bfloat16 || a.dtype() == DType::float16)
    return device_convert(
        fixed_order_matmul(device_convert(a, DType::float32), device_convert(b, DType::float32), out_shape, leaf),
        a.dtype());
  if (numel_of(out_shape) == 0) return Tensor::empty(out_shape, a.dtype(), a.device());
  const size_t nd = out_shape.size();
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  Tensor out = Tensor::uninitialized({numel_of(batch), out_shape[nd - 2], out_shape[nd - 1]}, a.dtype(), a.device());
  kernels_for(a).fixed_order_gemm(out, batch_of_matrices(a, batch), batch_of_matrices(b, batch), leaf);
  return Tensor::view_of(out, out_shape, contiguous_strides(out_shape), out.offset());
}

}  // namespace globe::kernels
