// The CUDA table's matmul: cuBLAS's strided-batched GEMM (cublas.h), on the device's compute stream. Operands
// whose batch dims broadcast, or that are not contiguous, are first copied dense; the bias is
// written into the output first and the GEMM adds onto it (beta = 1), as on the CPU.
#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/cublas.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/elementwise.h"

namespace globe::kernels::cuda {

namespace {

// `t` read as `shape` (broadcast), as a dense tensor: t itself when it already is one.
Tensor dense_as(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape && t.is_contiguous()) return t;
  const Tensor view = Tensor::view_of(t, shape, broadcast_strides(t, shape), t.offset());
  Tensor out = Tensor::uninitialized(shape, t.dtype(), t.device());
  copy_into(out, view);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias) {
  const size_t nd = out_shape.size();
  const int64_t n = out_shape[nd - 2], m = out_shape[nd - 1], k = a.shape().back();
  Shape batch(out_shape.begin(), out_shape.end() - 2);
  Shape a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {n, k});
  b_shape.insert(b_shape.end(), {k, m});
  const int64_t count = numel_of(batch);

  Tensor out = Tensor::uninitialized(out_shape, a.dtype(), a.device());
  if (bias.defined()) {
    copy_into(out, Tensor::view_of(bias, out_shape, broadcast_strides(bias, out_shape), bias.offset()));
  } else if (k == 0) {
    fill(out, 0.0);
  }
  if (k == 0 || out.numel() == 0) return out;
  const Tensor da = dense_as(a, a_shape), db = dense_as(b, b_shape);
  GLOBE_CHECK(n <= INT32_MAX && m <= INT32_MAX && k <= INT32_MAX && count <= INT32_MAX,
              "[matmul] a product this large (", shape_str(a.shape()), " @ ", shape_str(b.shape()),
              ") exceeds cuBLAS's 32-bit sizes");
  cublasHandle_t h = cublas_handle(a.device());
  visit_floating(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    gemm_rows<T>(h, "matmul", false, false, n, m, k, ptr<T>(da), k, n * k, ptr<T>(db), m, k * m,
                 T(bias.defined() ? 1 : 0), ptr<T>(out), m, n * m, count);
  });
  return out;
}

}  // namespace globe::kernels::cuda
