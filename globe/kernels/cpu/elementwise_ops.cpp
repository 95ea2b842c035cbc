// The CPU table's elementwise families: unary math, binary arithmetic and backward kernels with
// broadcasting, scalar arithmetic, fill (kernels/device_kernels.h). The loops are elementwise.h's
// templates; float32 exp and GELU take the vectorised loops of elementwise.cpp.
#include <cmath>
#include <type_traits>

#include "globe/kernels/cpu/table.h"
#include "globe/kernels/cpu/elementwise.h"
#include "globe/kernels/cpu/fast_math.h"

namespace globe::kernels::cpu {

namespace {

template <class T>
T gelu_value(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(M_SQRT1_2)));
}
template <class T>
T gelu_slope(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(M_SQRT1_2))) +
         x * std::exp(T(-0.5) * x * x) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);
}

// A float32 kernel kernel(x, y, n) over a contiguous copy of `a` (a itself when contiguous).
Tensor dense_f32(const Tensor& a, void (*kernel)(const float*, float*, int64_t)) {
  const Tensor d = dense(a);
  Tensor out = Tensor::uninitialized(d.shape(), d.dtype());
  kernel(d.data<float>(), out.data<float>(), d.numel());
  return out;
}

// A float32 two-operand kernel kernel(a, b, out, n) where a and b already have the output's shape
// (dense copies where they are not contiguous); undefined where either is broadcast.
Tensor dense_binary_f32(const Tensor& a, const Tensor& b, const Shape& s,
                        void (*kernel)(const float*, const float*, float*, int64_t)) {
  if (a.shape() != s || b.shape() != s) return Tensor();
  const Tensor x = dense(a), y = dense(b);
  Tensor out = Tensor::uninitialized(s, x.dtype());
  kernel(x.data<float>(), y.data<float>(), out.data<float>(), x.numel());
  return out;
}

template <class T>
Tensor arithmetic(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& s) {
  switch (kind) {
    case BinaryKind::add: return map_binary<T>(a, b, s, [](T x, T y) { return x + y; });
    case BinaryKind::sub: return map_binary<T>(a, b, s, [](T x, T y) { return x - y; });
    case BinaryKind::mul: return map_binary<T>(a, b, s, [](T x, T y) { return x * y; });
    case BinaryKind::div: return map_binary<T>(a, b, s, [](T x, T y) { return x / y; });
    default: GLOBE_FAIL("[", binary_name(kind), "] not defined for ", dtype_name(a.dtype()));
  }
}

}  // namespace

Tensor unary(UnaryKind kind, const Tensor& a) {
  return visit_floating(a.dtype(), unary_name(kind), [&](auto tag) {
    using T = decltype(tag);
    switch (kind) {
      case UnaryKind::neg: return map_unary<T, T>(a, [](T x) { return -x; });
      case UnaryKind::exp:
        if constexpr (std::is_same_v<T, float>) return dense_f32(a, exp_f32);
        return map_unary<T, T>(a, [](T x) { return std::exp(x); });
      case UnaryKind::log: return map_unary<T, T>(a, [](T x) { return std::log(x); });
      case UnaryKind::sqrt: return map_unary<T, T>(a, [](T x) { return std::sqrt(x); });
      // NaN passes through, as torch's (so abs, relu(x) + relu(-x), keeps it too).
      case UnaryKind::relu: return map_unary<T, T>(a, [](T x) { return x <= T(0) ? T(0) : x; });
      case UnaryKind::gelu: return map_unary<T, T>(a, [](T x) { return gelu_value(x); });
      case UnaryKind::gelu_tanh:
        if constexpr (std::is_same_v<T, float>) return dense_f32(a, gelu_tanh_f32);
        return map_unary<T, T>(a, [](T x) { return gelu_tanh_value(x); });
      case UnaryKind::tanh: return map_unary<T, T>(a, [](T x) { return std::tanh(x); });
      case UnaryKind::sigmoid: return map_unary<T, T>(a, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
      case UnaryKind::silu:
        if constexpr (std::is_same_v<T, float>) return dense_f32(a, silu_f32);
        return map_unary<T, T>(a, [](T x) { return silu_value(x); });
    }
    GLOBE_FAIL("[unary] bad kind");
  });
}

Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& s) {
  if (a.dtype() == DType::int64) {
    return visit_dtype(a.dtype(), [&](auto tag) { return arithmetic<decltype(tag)>(kind, a, b, s); });
  }
  return visit_floating(a.dtype(), binary_name(kind), [&](auto tag) {
    using T = decltype(tag);
    switch (kind) {
      case BinaryKind::relu_grad: return map_binary<T>(a, b, s, [](T g, T x) { return x > T(0) ? g : T(0); });
      case BinaryKind::gelu_grad: return map_binary<T>(a, b, s, [](T g, T x) { return g * gelu_slope(x); });
      case BinaryKind::gelu_tanh_grad:
        if constexpr (std::is_same_v<T, float>) {
          if (Tensor out = dense_binary_f32(a, b, s, gelu_tanh_grad_f32); out.defined()) return out;
        }
        return map_binary<T>(a, b, s, [](T g, T x) { return g * gelu_tanh_slope(x); });
      case BinaryKind::silu_grad:
        if constexpr (std::is_same_v<T, float>) {
          if (Tensor out = dense_binary_f32(a, b, s, silu_grad_f32); out.defined()) return out;
        }
        return map_binary<T>(a, b, s, [](T g, T x) { return g * silu_slope(x); });
      case BinaryKind::swiglu:
        if constexpr (std::is_same_v<T, float>) {
          if (Tensor out = dense_binary_f32(a, b, s, swiglu_f32); out.defined()) return out;
        }
        return map_binary<T>(a, b, s, [](T x, T u) { return silu_value(x) * u; });
      case BinaryKind::tanh_grad: return map_binary<T>(a, b, s, [](T g, T y) { return g * (T(1) - y * y); });
      case BinaryKind::sigmoid_grad: return map_binary<T>(a, b, s, [](T g, T y) { return g * y * (T(1) - y); });
      default: return arithmetic<T>(kind, a, b, s);
    }
  });
}

Tensor swiglu_backward(const Tensor& g_in, const Tensor& gate_in, const Tensor& up_in) {
  GLOBE_CHECK(g_in.shape() == gate_in.shape() && g_in.shape() == up_in.shape(), "[swiglu_backward] expects g, gate and ",
              "up of one shape, got ", describe(g_in), ", ", describe(gate_in), ", ", describe(up_in));
  const Tensor g = dense(g_in), a = dense(gate_in), b = dense(up_in);
  Shape packed = g.shape();
  packed.insert(packed.begin(), 2);
  Tensor out = Tensor::uninitialized(packed, g.dtype());
  const int64_t n = g.numel();
  visit_floating(g.dtype(), "swiglu_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *pg = g.data<T>(), *pa = a.data<T>(), *pb = b.data<T>();
    T* d = out.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      swiglu_backward_f32(pg, pa, pb, d, d + n, n);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        d[n + i] = pg[i] * silu_value(pa[i]);
        d[i] = pg[i] * pb[i] * silu_slope(pa[i]);
      }
    }
  });
  return out;
}

Tensor scalar(ScalarKind kind, const Tensor& a, double value) {
  // Floating tensors, and integer ones for + and * (the op checks which).
  return visit_summable(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T s = static_cast<T>(value);
    switch (kind) {
      case ScalarKind::add: return map_unary<T, T>(a, [s](T x) { return T(x + s); });
      case ScalarKind::mul: return map_unary<T, T>(a, [s](T x) { return T(x * s); });
      case ScalarKind::pow:
        if constexpr (std::is_floating_point_v<T>) {
          if (value == 2.0) return map_unary<T, T>(a, [](T x) { return x * x; });
          return map_unary<T, T>(a, [s](T x) { return std::pow(x, s); });
        }
        break;
    }
    GLOBE_FAIL("[", scalar_name(kind), "] has no ", dtype_name(a.dtype()), " kernel");
  }, scalar_name(kind));
}

Tensor clamp(const Tensor& a, double lo_in, double hi_in) {
  return visit_floating(a.dtype(), "clamp", [&](auto tag) {
    using T = decltype(tag);
    const T lo = T(lo_in), hi = T(hi_in);
    // torch's order: the min bound first, then the max (lo > hi gives hi everywhere).
    return map_unary<T, T>(a, [lo, hi](T x) { return x < lo ? lo : (x > hi ? hi : x); });
  });
}

Tensor clamp_backward(const Tensor& g, const Tensor& x, double lo_in, double hi_in) {
  return visit_floating(g.dtype(), "clamp_backward", [&](auto tag) {
    using T = decltype(tag);
    const T lo = T(lo_in), hi = T(hi_in);
    return map_binary<T>(g, x, g.shape(), [lo, hi](T gv, T xv) { return xv >= lo && xv <= hi ? gv : T(0); });
  });
}

Tensor compare(CompareKind kind, const Tensor& a, const Tensor& b, const Shape& s) {
  return visit_exact(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    switch (kind) {
      case CompareKind::eq: return map_binary<T, bool>(a, b, s, [](T x, T y) { return x == y; });
      case CompareKind::ne: return map_binary<T, bool>(a, b, s, [](T x, T y) { return x != y; });
      case CompareKind::lt: return map_binary<T, bool>(a, b, s, [](T x, T y) { return x < y; });
      case CompareKind::le: return map_binary<T, bool>(a, b, s, [](T x, T y) { return x <= y; });
      case CompareKind::gt: return map_binary<T, bool>(a, b, s, [](T x, T y) { return x > y; });
      case CompareKind::ge: return map_binary<T, bool>(a, b, s, [](T x, T y) { return x >= y; });
    }
    GLOBE_FAIL("[compare] bad kind");
  }, compare_name(kind));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& s) {
  return visit_condition(cond.dtype(), [&](auto ctag) {
    using C = decltype(ctag);
    return visit_exact(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      Tensor out = Tensor::uninitialized(s, a.dtype());
      const C* pc = static_cast<const C*>(cond.storage()->data);
      const T* pa = static_cast<const T*>(a.storage()->data);
      const T* pb = static_cast<const T*>(b.storage()->data);
      T* dst = out.data<T>();
      for_each_run<3>(s, {broadcast_strides(cond, s), broadcast_strides(a, s), broadcast_strides(b, s)},
                      {cond.offset(), a.offset(), b.offset()}, [&](const StridedRun<3>& r) {
                        const C* c = pc + r.offset[0];
                        const T* x = pa + r.offset[1];
                        const T* y = pb + r.offset[2];
                        for (int64_t i = 0; i < r.count; ++i)
                          dst[i] = c[i * r.stride[0]] != C(0) ? x[i * r.stride[1]] : y[i * r.stride[2]];
                        dst += r.count;
                      });
      return out;
    }, "where");
  });
}

void fill(const Tensor& dst, double value) {
  visit_stored(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* base = static_cast<T*>(dst.storage()->data);
    const T v = static_cast<T>(value);
    for_each_run<1>(dst.shape(), {dst.strides()}, {dst.offset()}, [&](const StridedRun<1>& r) {
      T* p = base + r.offset[0];
      for (int64_t i = 0; i < r.count; ++i) p[i * r.stride[0]] = v;
    });
  });
}

}  // namespace globe::kernels::cpu
