#include "globe/kernels/fixed_order_matmul.h"

#include "globe/kernels/device_kernels.h"
#include "globe/kernels/strides.h"

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

Tensor fixed_order_matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, int64_t leaf, const Tensor& bias) {
  // The kernel adds a bias of one value per column as it stores each sum; any other bias, and
  // one after a 16-bit product's rounding, is the separate add whose bits that pass reproduces.
  const bool fused = bias.defined() && bias.shape() == Shape{out_shape.back()} && bias.dtype() == a.dtype() &&
                     !is_reduced_precision(a.dtype());
  if (bias.defined() && !fused)
    return kernels_for(a).binary(BinaryKind::add, fixed_order_matmul(a, b, out_shape, leaf), bias, out_shape);
  if (is_reduced_precision(a.dtype()))
    return device_convert(
        fixed_order_matmul(device_convert(a, DType::float32), device_convert(b, DType::float32), out_shape, leaf),
        a.dtype());
  if (numel_of(out_shape) == 0) return Tensor::empty(out_shape, a.dtype(), a.device());
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  Tensor va = batch_of_matrices(a, batch), vb = batch_of_matrices(b, batch);
  int64_t entries = va.shape()[0], n = va.shape()[1];
  const int64_t k = va.shape()[2], m = vb.shape()[2];
  // One b for every entry and a's rows evenly spaced across the entries (a Linear on [B, T, E]):
  // one product over all the rows, so that b is packed once rather than once per entry. The
  // bits are the same: no element's sum depends on the call's shape.
  if (entries > 1 && vb.strides()[0] == 0 && va.strides()[0] == n * va.strides()[1]) {
    n *= entries;
    entries = 1;
    va = Tensor::view_of(va, {1, n, k}, {n * va.strides()[1], va.strides()[1], va.strides()[2]}, va.offset());
    vb = Tensor::view_of(vb, {1, k, m}, {0, vb.strides()[1], vb.strides()[2]}, vb.offset());
  }
  Tensor out = Tensor::uninitialized({entries, n, m}, a.dtype(), a.device());
  kernels_for(a).fixed_order_gemm(out, va, vb, fused ? device_dense(bias) : Tensor(), leaf);
  return Tensor::view_of(out, out_shape, contiguous_strides(out_shape), out.offset());
}

}  // namespace globe::kernels
