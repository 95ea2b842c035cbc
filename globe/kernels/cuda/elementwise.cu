// The CUDA table's elementwise families (kernels/device_kernels.h): unary, binary with
// broadcasting, scalar, copy with dtype conversion, fill. One thread per output element over any
// strides (strided.cuh), on the device's compute stream. The formulas are the CPU table's; results
// agree with it within float rounding (the GPU's exp / tanh / erf differ from glibc's by an ulp or
// two), exactly for neg, relu, add, sub, mul, copies and fills.
#include <cuda_runtime.h>

#include <type_traits>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/strided.cuh"
#include "globe/kernels/cuda/kernels.h"

namespace globe::kernels::cuda {

namespace {

template <class T>
__device__ T gelu_value(T x) {
  return T(0.5) * x * (T(1) + erf(x * T(M_SQRT1_2)));
}
template <class T>
__device__ T gelu_slope(T x) {
  return T(0.5) * (T(1) + erf(x * T(M_SQRT1_2))) + x * exp(T(-0.5) * x * x) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);
}
// GELU's tanh form through the logistic function, as the CPU's: 0.5 (1 + tanh u) = 1 / (1 + e^-2u).
template <class T>
__device__ T gelu_tanh_value(T x) {
  const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
  return x / (T(1) + exp(T(-2) * u));
}
template <class T>
__device__ T gelu_tanh_slope(T x) {
  const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
  const T s = T(1) / (T(1) + exp(T(-2) * u));  // 0.5 (1 + tanh u)
  const T du = T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * x * x);
  return s + x * T(2) * s * (T(1) - s) * du;
}

template <class T>
__device__ T apply_unary(UnaryKind k, T x) {
  switch (k) {
    case UnaryKind::neg: return -x;
    case UnaryKind::exp: return exp(x);
    case UnaryKind::log: return log(x);
    case UnaryKind::sqrt: return sqrt(x);
    case UnaryKind::relu: return x <= T(0) ? T(0) : x;  // NaN passes through, as on the CPU
    case UnaryKind::gelu: return gelu_value(x);
    case UnaryKind::tanh: return tanh(x);
    case UnaryKind::sigmoid: return T(1) / (T(1) + exp(-x));
    case UnaryKind::gelu_tanh: return gelu_tanh_value(x);
    case UnaryKind::silu: return x / (T(1) + exp(-x));
  }
  return x;
}

template <class T>
__device__ T apply_binary(BinaryKind k, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    switch (k) {
      case BinaryKind::add: return a + b;
      case BinaryKind::sub: return a - b;
      case BinaryKind::mul: return a * b;
      default: return T(0);  // refused on the host before launch
    }
  } else {
    switch (k) {
      case BinaryKind::add: return a + b;
      case BinaryKind::sub: return a - b;
      case BinaryKind::mul: return a * b;
      case BinaryKind::div: return a / b;
      case BinaryKind::relu_grad: return b > T(0) ? a : T(0);
      case BinaryKind::gelu_grad: return a * gelu_slope(b);
      case BinaryKind::tanh_grad: return a * (T(1) - b * b);
      case BinaryKind::sigmoid_grad: return a * b * (T(1) - b);
      case BinaryKind::gelu_tanh_grad: return a * gelu_tanh_slope(b);
      case BinaryKind::silu_grad: {
        const T s = T(1) / (T(1) + exp(-b));
        return a * s * (T(1) + b * (T(1) - s));
      }
      case BinaryKind::swiglu: return a / (T(1) + exp(-a)) * b;
    }
    return T(0);
  }
}

template <class T>
__device__ T apply_scalar(ScalarKind k, T x, T s) {
  switch (k) {
    case ScalarKind::add: return x + s;
    case ScalarKind::mul: return x * s;
    case ScalarKind::pow:
      if constexpr (std::is_floating_point_v<T>) return s == T(2) ? x * x : pow(x, s);
      return x;  // integer tensors take + and * only (the op checks)
  }
  return x;
}

// out (contiguous) [i] = f(operands at i); F gets the operands' offsets.
template <int N, class F>
__global__ void map_kernel(int64_t n, Indexer<N> ix, F f) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t off[N];
  ix.offsets_of(i, off);
  f(i, off);
}

template <int N, class F>
void launch(int64_t n, const Indexer<N>& ix, cudaStream_t stream, F f, const char* op) {
  if (n == 0) return;
  map_kernel<N><<<blocks_for(n), kThreads, 0, stream>>>(n, ix, f);
  GLOBE_CUDA_CHECK(cudaGetLastError(), op);
}

template <class T>
struct UnaryFn {
  UnaryKind k;
  const T* a;
  T* out;
  __device__ void operator()(int64_t i, const int64_t* off) const { out[i] = apply_unary(k, a[off[0]]); }
};
template <class T>
struct BinaryFn {
  BinaryKind k;
  const T* a;
  const T* b;
  T* out;
  __device__ void operator()(int64_t i, const int64_t* off) const { out[i] = apply_binary(k, a[off[0]], b[off[1]]); }
};
template <class T>
struct ScalarFn {
  ScalarKind k;
  T s;
  const T* a;
  T* out;
  __device__ void operator()(int64_t i, const int64_t* off) const { out[i] = apply_scalar(k, a[off[0]], s); }
};
template <class T>
struct ClampFn {
  T lo, hi;
  const T* a;
  T* out;
  // torch's order: the min bound first, then the max.
  __device__ void operator()(int64_t i, const int64_t* off) const {
    const T x = a[off[0]];
    out[i] = x < lo ? lo : (x > hi ? hi : x);
  }
};
template <class T>
struct ClampBackwardFn {
  T lo, hi;
  const T* g;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i, const int64_t* off) const {
    const T v = x[off[1]];
    out[i] = v >= lo && v <= hi ? g[off[0]] : T(0);
  }
};
// swiglu's backward over one shape: out[i] = g up silu'(gate), out[n + i] = g silu(gate).
template <class T>
struct SwigluBackwardFn {
  int64_t n;
  const T* g;
  const T* a;
  const T* b;
  T* out;
  __device__ void operator()(int64_t i, const int64_t* off) const {
    const T x = a[off[1]], s = T(1) / (T(1) + exp(-x)), gi = g[off[0]];
    out[n + i] = gi * x * s;
    out[i] = gi * b[off[2]] * s * (T(1) + x * (T(1) - s));
  }
};
template <class T>
struct CompareFn {
  CompareKind k;
  const T* a;
  const T* b;
  bool* out;
  __device__ void operator()(int64_t i, const int64_t* off) const {
    const T x = a[off[0]], y = b[off[1]];
    switch (k) {
      case CompareKind::eq: out[i] = x == y; break;
      case CompareKind::ne: out[i] = x != y; break;
      case CompareKind::lt: out[i] = x < y; break;
      case CompareKind::le: out[i] = x <= y; break;
      case CompareKind::gt: out[i] = x > y; break;
      case CompareKind::ge: out[i] = x >= y; break;
    }
  }
};
template <class C, class T>
struct WhereFn {
  const C* cond;
  const T* a;
  const T* b;
  T* out;
  __device__ void operator()(int64_t i, const int64_t* off) const {
    out[i] = cond[off[0]] != C(0) ? a[off[1]] : b[off[2]];
  }
};
// 16-bit floats on the device, the bits of core/dtype.h's codecs exactly (so a GPU's casts equal
// the CPU's, NaN included): widening is exact; narrowing rounds to nearest even.
__device__ float widen(bfloat16 v) { return __uint_as_float(uint32_t(v.bits) << 16); }
__device__ float widen(float16 v) {
  const uint32_t sign = uint32_t(v.bits & 0x8000u) << 16, e = (v.bits >> 10) & 0x1fu, m = v.bits & 0x3ffu;
  if (e == 0) return __uint_as_float(sign | __float_as_uint(float(m) * 5.9604644775390625e-8f));
  if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));
  return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}
__device__ uint16_t narrow_bits(float f, bfloat16*) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ uint16_t narrow_bits(float f, float16*) {
  const uint32_t x = __float_as_uint(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: infinity
  if (a < 0x38800000u) return sign | uint16_t(rintf(__uint_as_float(a) * 16777216.0f));  // subnormal
  a += 0xc8000fffu + ((a >> 13) & 1u);
  return sign | uint16_t(a >> 13);
}
// S's value as a D, through float where either is a 16-bit float (as the CPU converts).
template <class D, class S>
__device__ D convert(S s) {
  if constexpr (is_reduced_float_v<S>) {
    return convert<D>(widen(s));
  } else if constexpr (is_reduced_float_v<D>) {
    D d;
    d.bits = narrow_bits(float(s), static_cast<D*>(nullptr));
    return d;
  } else {
    return static_cast<D>(s);
  }
}

template <class D, class S>
struct CopyFn {
  D* dst;
  const S* src;
  __device__ void operator()(int64_t, const int64_t* off) const { dst[off[0]] = convert<D>(src[off[1]]); }
};
template <class T>
struct FillFn {
  T* dst;
  T v;
  __device__ void operator()(int64_t, const int64_t* off) const { dst[off[0]] = v; }
};


}  // namespace

Tensor unary(UnaryKind kind, const Tensor& a) {
  Tensor out = Tensor::uninitialized(a.shape(), a.dtype(), a.device());
  visit_floating(a.dtype(), unary_name(kind), [&](auto tag) {
    using T = decltype(tag);
    const Tensor* ops[1] = {&a};
    launch(a.numel(), make_indexer<1>(a.shape(), ops, unary_name(kind)), stream_of(a),
           UnaryFn<T>{kind, base_of<T>(a), base_of<T>(out)}, unary_name(kind));
  });
  return out;
}

Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& shape) {
  GLOBE_CHECK(is_floating(a.dtype()) || kind == BinaryKind::add || kind == BinaryKind::sub || kind == BinaryKind::mul,
              "[", binary_name(kind), "] not defined for ", dtype_name(a.dtype()));
  Tensor out = Tensor::uninitialized(shape, a.dtype(), a.device());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Tensor* ops[2] = {&a, &b};
    launch(out.numel(), make_indexer<2>(shape, ops, binary_name(kind)), stream_of(a),
           BinaryFn<T>{kind, base_of<T>(a), base_of<T>(b), base_of<T>(out)}, binary_name(kind));
  });
  return out;
}

Tensor swiglu_backward(const Tensor& g, const Tensor& gate, const Tensor& up) {
  GLOBE_CHECK(g.shape() == gate.shape() && g.shape() == up.shape(), "[swiglu_backward] expects g, gate and up of one ",
              "shape, got ", describe(g), ", ", describe(gate), ", ", describe(up));
  Shape packed = g.shape();
  packed.insert(packed.begin(), 2);
  Tensor out = Tensor::uninitialized(packed, g.dtype(), g.device());
  visit_floating(g.dtype(), "swiglu_backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor* ops[3] = {&g, &gate, &up};
    launch(g.numel(), make_indexer<3>(g.shape(), ops, "swiglu_backward"), stream_of(g),
           SwigluBackwardFn<T>{g.numel(), base_of<T>(g), base_of<T>(gate), base_of<T>(up), base_of<T>(out)},
           "swiglu_backward");
  });
  return out;
}

Tensor scalar(ScalarKind kind, const Tensor& a, double s) {
  Tensor out = Tensor::uninitialized(a.shape(), a.dtype(), a.device());
  visit_summable(a.dtype(), [&](auto tag) {  // floating, and integer for + and * (the op checks)
    using T = decltype(tag);
    const Tensor* ops[1] = {&a};
    launch(a.numel(), make_indexer<1>(a.shape(), ops, scalar_name(kind)), stream_of(a),
           ScalarFn<T>{kind, static_cast<T>(s), base_of<T>(a), base_of<T>(out)}, scalar_name(kind));
  }, scalar_name(kind));
  return out;
}

Tensor clamp(const Tensor& a, double lo, double hi) {
  Tensor out = Tensor::uninitialized(a.shape(), a.dtype(), a.device());
  visit_floating(a.dtype(), "clamp", [&](auto tag) {
    using T = decltype(tag);
    const Tensor* ops[1] = {&a};
    launch(a.numel(), make_indexer<1>(a.shape(), ops, "clamp"), stream_of(a),
           ClampFn<T>{T(lo), T(hi), base_of<T>(a), base_of<T>(out)}, "clamp");
  });
  return out;
}

Tensor clamp_backward(const Tensor& g, const Tensor& x, double lo, double hi) {
  Tensor out = Tensor::uninitialized(g.shape(), g.dtype(), g.device());
  visit_floating(g.dtype(), "clamp_backward", [&](auto tag) {
    using T = decltype(tag);
    const Tensor* ops[2] = {&g, &x};
    launch(g.numel(), make_indexer<2>(g.shape(), ops, "clamp_backward"), stream_of(g),
           ClampBackwardFn<T>{T(lo), T(hi), base_of<T>(g), base_of<T>(x), base_of<T>(out)}, "clamp_backward");
  });
  return out;
}

Tensor compare(CompareKind kind, const Tensor& a, const Tensor& b, const Shape& shape) {
  Tensor out = Tensor::uninitialized(shape, kBool, a.device());
  visit_exact(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const Tensor* ops[2] = {&a, &b};
    launch(out.numel(), make_indexer<2>(shape, ops, compare_name(kind)), stream_of(a),
           CompareFn<T>{kind, base_of<T>(a), base_of<T>(b), base_of<bool>(out)}, compare_name(kind));
  }, compare_name(kind));
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& shape) {
  Tensor out = Tensor::uninitialized(shape, a.dtype(), a.device());
  visit_condition(cond.dtype(), [&](auto ctag) {
    visit_exact(a.dtype(), [&](auto tag) {
      using C = decltype(ctag);
      using T = decltype(tag);
      const Tensor* ops[3] = {&cond, &a, &b};
      launch(out.numel(), make_indexer<3>(shape, ops, "where"), stream_of(a),
             WhereFn<C, T>{base_of<C>(cond), base_of<T>(a), base_of<T>(b), base_of<T>(out)}, "where");
    }, "where");
  });
  return out;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  GLOBE_CHECK(dst.shape() == src.shape(), "[copy] shapes differ: ", describe(dst), " and ", describe(src));
  visit_stored(dst.dtype(), [&](auto dtag) {
    visit_stored(src.dtype(), [&](auto stag) {
      using D = decltype(dtag);
      using S = decltype(stag);
      const Tensor* ops[2] = {&dst, &src};
      launch(dst.numel(), make_indexer<2>(dst.shape(), ops, "copy"), stream_of(dst),
             CopyFn<D, S>{base_of<D>(dst), base_of<S>(src)}, "copy");
    });
  });
}

void fill(const Tensor& dst, double value) {
  visit_stored(dst.dtype(), [&](auto tag) {  // a 16-bit value made on the host, by the codec
    using T = decltype(tag);
    const Tensor* ops[1] = {&dst};
    launch(dst.numel(), make_indexer<1>(dst.shape(), ops, "fill"), stream_of(dst),
           FillFn<T>{base_of<T>(dst), static_cast<T>(value)}, "fill");
  });
}

}  // namespace globe::kernels::cuda
