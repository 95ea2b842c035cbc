// The CUDA table's matmul on cuBLASLt (cublas.h: the device's handle and workspace), on the
// device's compute stream, in full float32 / float64 (CUBLAS_COMPUTE_32F / 64F), or with TF32
// products where set_float32_matmul_precision allows them (CUBLAS_COMPUTE_32F_FAST_TF32).
//
// cuBLASLt is column-major, where a row-major buffer reads as its transpose, so out [n, m] = a b
// is asked as out^T [m, n] = b^T a^T: b is cuBLASLt's A and a its B, each keeping its own transpose
// flag. That view, rather than CUBLASLT_ORDER_ROW layouts, is what puts the bias epilogue on the
// right dim: cuBLASLt's bias holds one value per row of D, and D's rows here are out's columns (its
// last dim, the one a Linear's bias runs along); with a row-ordered D they would be out's rows.
//
// An operand is read where it lies when each of its matrices is row- or column-major and its
// batch entries are evenly spaced (a batch broadcast whole is spacing 0); otherwise it is copied
// dense first. A bias that is one packed vector over the last dim is the GEMM's epilogue
// (CUBLASLT_EPILOGUE_BIAS), float32 and float64, batched too (every entry adds the same vector).
// Any other bias, or one for which cuBLASLt offers no epilogue algorithm, is written into the
// output first and the GEMM adds onto it (beta = 1), as on the CPU.
//
// Written and compile-checked on a machine without a GPU: this file has not run yet.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <type_traits>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/cublas.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/matmul_precision.h"
#include "globe/kernels/strides.h"

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

// A product operand [..., r, c] as cuBLASLt reads it: each matrix stored row-major with rows `ld`
// elements apart, or (trans) column-major with columns `ld` apart; batch entry i starts `i *
// stride` elements after element 0 (stride 0: one matrix for every entry).
struct Operand {
  Tensor t;  // what is read: the input, or a dense copy of it
  bool trans = false;
  int64_t ld = 0, stride = 0;
};

// t as an Operand over the output's batch dims, read where it lies, if its strides allow it.
std::optional<Operand> in_place(const Tensor& t, const Shape& batch) {
  const int64_t nd = t.dim(), rows = t.shape()[nd - 2], cols = t.shape()[nd - 1];
  const int64_t rs = t.strides()[nd - 2], cs = t.strides()[nd - 1];
  Operand o{t};
  if ((cs == 1 || cols == 1) && rs >= std::max<int64_t>(cols, 1)) {
    o.ld = rs;
  } else if ((rs == 1 || rows == 1) && cs >= std::max<int64_t>(rows, 1)) {
    o.trans = true;
    o.ld = cs;
  } else {
    return std::nullopt;
  }
  // One spacing for all entries: each batch dim's stride is the next one's times that one's size.
  Shape full = batch;
  full.insert(full.end(), {rows, cols});
  const Shape s = broadcast_strides(t, full);
  int64_t stride = -1, span = 1;  // the innermost batch dim's stride; the entries walked so far
  for (size_t i = batch.size(); i-- > 0;) {
    if (batch[i] == 1) continue;
    if (stride < 0) {
      stride = s[i];
    } else if (s[i] != stride * span) {
      return std::nullopt;
    }
    span *= batch[i];
  }
  o.stride = std::max<int64_t>(stride, 0);
  return o;
}

// t in place where it can be; else its matrices copied dense (its batch still read with one
// spacing where that works); else all of it copied dense over the output's batch, which always is.
Operand operand(const Tensor& t, const Shape& batch) {
  if (auto o = in_place(t, batch)) return *o;
  if (!t.is_contiguous())
    if (auto o = in_place(dense_as(t, t.shape()), batch)) return *o;
  Shape full = batch;
  full.insert(full.end(), t.shape().end() - 2, t.shape().end());
  return *in_place(dense_as(t, full), batch);
}

// Whether the bias is one packed vector over the last dim (m values, the same for every row and
// batch entry): what cuBLASLt's bias epilogue adds.
bool is_last_dim_vector(const Tensor& bias, int64_t m) {
  const int64_t d = bias.dim();
  if (d == 0 || bias.shape()[d - 1] != m || (m > 1 && bias.strides()[d - 1] != 1)) return false;
  for (int64_t i = 0; i + 1 < d; ++i)
    if (bias.shape()[i] != 1) return false;
  return true;
}

// One cuBLASLt call: out^T [m, rows] = op(b)^T op(a)^T for each of `count` entries.
struct Gemm {
  Operand a, b;
  int64_t rows, m, k, count;
  Tensor out;  // dense [count, rows, m]
};

// A cuBLASLt descriptor, destroyed with its scope (so an error thrown midway leaks none).
template <class D, auto CublasApi::*Destroy>
struct Owned {
  D d = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (d != nullptr) (void)(cublas_api().*Destroy)(d);
  }
};
using MatmulDesc = Owned<cublasLtMatmulDesc_t, &CublasApi::lt_desc_destroy>;
using Layout = Owned<cublasLtMatrixLayout_t, &CublasApi::lt_layout_destroy>;
using Preference = Owned<cublasLtMatmulPreference_t, &CublasApi::lt_preference_destroy>;

template <class V>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, V v) {
  check_cublas(cublas_api().lt_desc_set_attribute(d, attr, &v, sizeof(v)), "matmul", "cublasLtMatmulDescSetAttribute");
}
template <class V>
void set(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, V v) {
  check_cublas(cublas_api().lt_layout_set_attribute(l, attr, &v, sizeof(v)), "matmul",
               "cublasLtMatrixLayoutSetAttribute");
}
template <class V>
void set(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, V v) {
  check_cublas(cublas_api().lt_preference_set_attribute(p, attr, &v, sizeof(v)), "matmul",
               "cublasLtMatmulPreferenceSetAttribute");
}

// `count` column-major [rows, cols] matrices, columns `ld` apart, entries `stride` apart.
void make_layout(Layout& l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t count,
                 int64_t stride) {
  check_cublas(cublas_api().lt_layout_create(&l.d, type, uint64_t(rows), uint64_t(cols), ld), "matmul",
               "cublasLtMatrixLayoutCreate");
  if (count == 1) return;
  set(l.d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t(count));
  set(l.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
}

// An operand's row-major [r, c] matrices: stored row-major they are column-major [c, r], read as
// they are (op N); stored column-major they are [r, c], read transposed (op T).
void make_layout(Layout& l, cudaDataType_t type, const Operand& o, int64_t r, int64_t c, int64_t count) {
  make_layout(l, type, o.trans ? r : c, o.trans ? c : r, o.ld, count, o.stride);
}

// The largest power of two, up to the 256 cuBLASLt assumes by default, that divides p's address:
// the alignment its heuristic may count on (a view at an offset can have less).
int64_t alignment(const void* p) {
  int64_t a = 256;
  while (reinterpret_cast<uintptr_t>(p) % uint64_t(a) != 0) a /= 2;
  return a;
}

// What the heuristic's answer depends on: the problem, its pointers' alignments and the workspace.
using Key = std::array<int64_t, 19>;

// The algorithm cuBLASLt's heuristic picks (none where it offers none), asked once per key and
// remembered: the heuristic is a search on the host, and a training step repeats its shapes.
std::optional<cublasLtMatmulAlgo_t> algorithm(const Key& key, const CublasLt& lt, cublasLtMatmulDesc_t desc,
                                              const Layout& la, const Layout& lb, const Layout& lc,
                                              const std::array<int64_t, 3>& aligned) {
  static std::mutex mutex;
  static std::map<Key, std::optional<cublasLtMatmulAlgo_t>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Preference pref;
  check_cublas(cublas_api().lt_preference_create(&pref.d), "matmul", "cublasLtMatmulPreferenceCreate");
  set(pref.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(lt.workspace_bytes));
  set(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32_t(aligned[0]));
  set(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, uint32_t(aligned[1]));
  set(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, uint32_t(aligned[2]));
  set(pref.d, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, uint32_t(aligned[2]));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublas_api().lt_algo_get_heuristic(lt.handle, desc, la.d, lb.d, lc.d, lc.d, pref.d, 1, &result, &found);
  // NOT_SUPPORTED is the heuristic's "no algorithm for this", an answer rather than an error.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) check_cublas(status, "matmul", "cublasLtMatmulAlgoGetHeuristic");
  std::optional<cublasLtMatmulAlgo_t> algo;
  if (status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) algo = result.algo;
  if (cache.size() >= 4096) cache.clear();  // bounds a program that keeps making new shapes
  cache.emplace(key, algo);
  return algo;
}

// Queues g on cuBLASLt: out = a b + beta out, or + the bias vector as the epilogue when `bias` is
// given (beta 0 then). False where cuBLASLt has no algorithm for it.
template <class T>
bool run(const Gemm& g, const T* bias, T beta) {
  constexpr bool f32 = std::is_same_v<T, float>;
  const cudaDataType_t type = f32 ? CUDA_R_32F : CUDA_R_64F;
  const bool tf32 = f32 && float32_matmul_allows_tf32();
  const cublasComputeType_t compute = !f32 ? CUBLAS_COMPUTE_64F : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const Device device = g.out.device();
  const CublasLt lt = cublaslt(device);
  MatmulDesc desc;
  check_cublas(cublas_api().lt_desc_create(&desc.d, compute, type), "matmul", "cublasLtMatmulDescCreate");
  set(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(g.b.trans ? CUBLAS_OP_T : CUBLAS_OP_N));
  set(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(g.a.trans ? CUBLAS_OP_T : CUBLAS_OP_N));
  if (bias != nullptr) {
    set(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_BIAS));
    set(desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));
    // 0 (the default, set because it is meant): every batch entry adds the same vector.
    set(desc.d, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t(0));
  }
  Layout la, lb, lc;
  make_layout(la, type, g.b, g.k, g.m, g.count);     // cuBLASLt's A: b [k, m]
  make_layout(lb, type, g.a, g.rows, g.k, g.count);  // cuBLASLt's B: a [rows, k]
  make_layout(lc, type, g.m, g.rows, g.m, g.count, g.rows * g.m);
  const T *pa = ptr<T>(g.a.t), *pb = ptr<T>(g.b.t);
  T* pc = ptr<T>(g.out);
  const std::array<int64_t, 3> aligned = {alignment(pb), alignment(pa), alignment(pc)};
  const Key key = {device.index, int64_t(f32), bias != nullptr, g.b.trans, g.a.trans, g.rows, g.m, g.k, g.count,
                   g.b.ld, g.a.ld, g.b.stride, g.a.stride, aligned[0], aligned[1], aligned[2],
                   bias != nullptr ? alignment(bias) : 0, int64_t(lt.workspace_bytes), int64_t(tf32)};
  const std::optional<cublasLtMatmulAlgo_t> algo = algorithm(key, lt, desc.d, la, lb, lc, aligned);
  if (!algo) return false;
  const T alpha = T(1);
  const cublasStatus_t status = cublas_api().lt_matmul(lt.handle, desc.d, &alpha, pb, la.d, pa, lb.d, &beta, pc, lc.d, pc,
                                               lc.d, &*algo, lt.workspace, lt.workspace_bytes, stream_of(g.out));
  // A refusal here is taken as "no algorithm" too: the caller's fallback rewrites all of out.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return false;
  check_cublas(status, "matmul", "cublasLtMatmul");
  return true;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias) {
  const size_t nd = out_shape.size();
  const int64_t n = out_shape[nd - 2], m = out_shape[nd - 1], k = a.shape().back();
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  const auto bias_view = [&] {
    return Tensor::view_of(bias, out_shape, broadcast_strides(bias, out_shape), bias.offset());
  };

  Tensor out = Tensor::uninitialized(out_shape, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (k == 0) {  // empty sums: the bias, or zeros
    if (bias.defined()) copy_into(out, bias_view());
    else fill(out, 0.0);
    return out;
  }
  Gemm g{operand(a, batch), operand(b, batch), n, m, k, numel_of(batch), out};
  // One b for every entry and a's rows evenly spaced across the batch (a Linear on [B, T, E]):
  // one GEMM over all count * n rows, as on the CPU.
  if (g.count > 1 && g.b.stride == 0 && !g.a.trans && g.a.stride == n * g.a.ld && g.count * n <= INT32_MAX) {
    g.rows = g.count * n;
    g.count = 1;
  }
  GLOBE_CHECK(g.rows <= INT32_MAX && m <= INT32_MAX && k <= INT32_MAX && g.count <= INT32_MAX,
              "[matmul] a product this large (", shape_str(a.shape()), " @ ", shape_str(b.shape()),
              ") exceeds the 32-bit sizes matmul hands cuBLASLt");
  visit_floating(a.dtype(), "matmul", [&](auto tag) {
    using T = decltype(tag);
    if (bias.defined() && is_last_dim_vector(bias, m) && run<T>(g, ptr<T>(bias), T(0))) return;
    if (bias.defined()) copy_into(out, bias_view());
    GLOBE_CHECK(run<T>(g, static_cast<const T*>(nullptr), T(bias.defined() ? 1 : 0)),
                "[matmul] cuBLASLt has no algorithm for ", shape_str(a.shape()), " @ ", shape_str(b.shape()), " (",
                dtype_name(a.dtype()), ")");
  });
  return out;
}

}  // namespace globe::kernels::cuda
