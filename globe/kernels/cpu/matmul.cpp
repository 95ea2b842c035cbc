#include "globe/kernels/cpu/matmul.h"

#include <dlfcn.h>

#include <algorithm>

#include "globe/core/strided.h"
#include "globe/kernels/cpu/blas.h"
#include "globe/kernels/cpu/blas_core.h"
#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/via_float32.h"

namespace globe::kernels {

// Links blas_core.cpp into every program that multiplies, so OpenBLAS's kernels are chosen at load.
[[maybe_unused]] static const bool blas_core_checked = (blas_core_note(), true);

BlasView blas_view(const Tensor& t) {
  const int64_t nd = t.dim();
  const int64_t rows = t.shape()[nd - 2], cols = t.shape()[nd - 1];
  const int64_t rs = t.strides()[nd - 2], cs = t.strides()[nd - 1];
  if ((cs == 1 || cols == 1) && rs >= std::max<int64_t>(cols, 1)) return {t, CblasNoTrans, rs};
  if ((rs == 1 || rows == 1) && cs >= std::max<int64_t>(rows, 1)) return {t, CblasTrans, cs};
  Tensor d = dense(t);
  return {d, CblasNoTrans, std::max<int64_t>(cols, 1)};
}

namespace {

// `bias` broadcast to `shape` as a view (no copy); with `transposed`, its last two dims swapped
// (to fill C^T, which the transposed product writes).
Tensor bias_view(const Tensor& bias, Shape shape, bool transposed = false) {
  Shape strides = broadcast_strides(bias, shape);
  if (transposed) {
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  }
  return Tensor::view_of(bias, shape, strides, bias.offset());
}

// Whether batch entries of `strides` (broadcast ones 0) put every row of the operand at one
// spacing: batch entry i's rows follow entry i-1's, `block` elements (n rows x ld) apart.
bool rows_evenly_spaced(const Shape& batch, const Shape& strides, int64_t block) {
  int64_t expected = block;
  for (size_t i = batch.size(); i-- > 0;) {
    if (batch[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= batch[i];
  }
  return true;
}

// The product with operands of type T and a result of type C (C = T, or float for bfloat16
// operands on a bf16 GEMM); gemm() picks BLAS's routine by the pointer types.
template <class T, class C>
Tensor product(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias) {
  const DType out_dtype = dtype_of<C>();
  const int64_t nd = int64_t(out_shape.size());
  const int64_t n = out_shape[nd - 2], m = out_shape[nd - 1], k = a.shape()[a.dim() - 1];
  const bool has_bias = bias.defined();
  if (numel_of(out_shape) == 0 || k == 0) {
    Tensor out = Tensor::empty(out_shape, out_dtype);  // zeros
    if (has_bias && numel_of(out_shape) > 0) copy_into(out, bias_view(bias, out_shape));
    return out;
  }
  BlasView va = blas_view(a), vb = blas_view(b);
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  // Batch strides of each operand, broadcast to the output's batch dims.
  auto batch_strides = [&](const Tensor& t) {
    Shape s(batch.size(), 0);
    const size_t lead = batch.size() - (t.dim() - 2);
    for (int64_t i = 0; i < t.dim() - 2; ++i)
      s[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
    return s;
  };
  if (batch.empty() && va.trans == CblasNoTrans && vb.trans == CblasTrans && 4 * n <= m) {
    // x [n, k] @ W^T with few rows (Linear's forward): OpenBLAS runs the transposed product
    // C^T = W x^T markedly faster (64x1024x1024: 1.41 vs 1.89 ms on an AMD Zen 4, 0.81 vs 1.1 ms
    // on a Zen 5, Cooperlake kernels). C^T is then transposed into a row-major C (copy_into,
    // tiled once both dims reach 8; a small fraction of the product). Handed on as a transposed
    // view, it made the element-wise ops after it (ReLU, its gradient, the loss) walk one operand
    // with a stride, which cost the 1-process MLP step 5-8 % (bench_mlp --raw-ab, RESULTS.md).
    Tensor ct = Tensor::uninitialized({m, n}, out_dtype);
    if (has_bias) copy_into(ct, bias_view(bias, out_shape, /*transposed=*/true));
    gemm(CblasNoTrans, CblasTrans, m, n, k, static_cast<const T*>(vb.t.raw_data()), vb.ld,
         static_cast<const T*>(va.t.raw_data()), va.ld, ct.data<C>(), n, has_bias);
    Tensor out = Tensor::uninitialized(out_shape, out_dtype);
    copy_into(out, Tensor::view_of(ct, out_shape, {1, n}, 0));
    return out;
  }
  Tensor out = Tensor::uninitialized(out_shape, out_dtype);  // gemm writes every element
  if (has_bias) copy_into(out, bias_view(bias, out_shape));
  const Shape sa = batch_strides(va.t), sb = batch_strides(vb.t);
  if (!batch.empty() && va.trans == CblasNoTrans && rows_evenly_spaced(batch, sa, n * va.ld) &&
      std::all_of(sb.begin(), sb.end(), [](int64_t s) { return s == 0; })) {
    // [..., n, k] @ [k, m] with a's rows evenly spaced across its batch (a Linear on [B, T, E]):
    // one gemm over all the rows instead of one per batch entry.
    gemm(va.trans, vb.trans, numel_of(batch) * n, m, k, static_cast<const T*>(va.t.storage()->data) + va.t.offset(),
         va.ld, static_cast<const T*>(vb.t.storage()->data) + vb.t.offset(), vb.ld, out.data<C>(), m, has_bias);
    return out;
  }
  const T* pa = static_cast<const T*>(va.t.storage()->data);
  const T* pb = static_cast<const T*>(vb.t.storage()->data);
  C* pc = out.data<C>();
  for_each_run<2>(batch, {batch_strides(va.t), batch_strides(vb.t)}, {va.t.offset(), vb.t.offset()},
                  [&](const StridedRun<2>& r) {
                    for (int64_t i = 0; i < r.count; ++i) {
                      gemm(va.trans, vb.trans, n, m, k, pa + r.offset[0] + i * r.stride[0], va.ld,
                           pb + r.offset[1] + i * r.stride[1], vb.ld, pc, m, has_bias);
                      pc += n * m;
                    }
                  });
  return out;
}

Tensor matmul_float32(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias) {
  return product<float, float>(a, b, out_shape, bias);
}

}  // namespace

Bf16Gemm bf16_gemm() {
  static const Bf16Gemm f = reinterpret_cast<Bf16Gemm>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return f;
}

const char* bf16_gemm_path() {
  return bf16_gemm() ? "OpenBLAS cblas_sbgemm (bfloat16 operands, float32 accumulation)"
                     : "cblas_sgemm on operands widened to float32 (this OpenBLAS has no cblas_sbgemm)";
}

Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias) {
  switch (a.dtype()) {
    case DType::float32: return product<float, float>(a, b, out_shape, bias);
    case DType::float64: return product<double, double>(a, b, out_shape, bias);
    case DType::bfloat16:
      if (bf16_gemm()) return via_detail::narrow(product<bfloat16, float>(a, b, out_shape, bias), a.dtype());
      return call_via_float32(&matmul_float32, a, b, out_shape, bias);
    case DType::float16: return call_via_float32(&matmul_float32, a, b, out_shape, bias);
    default: break;
  }
  return visit_floating(a.dtype(), "matmul", [](auto) { return Tensor(); });
}

}  // namespace globe::kernels
