// The CPU table's optimizer updates (device_kernels.h: sgd_update, adam_update), the loops the
// optimizers ran before the tables, unchanged: the constants are cast to the parameter's type as
// they were, so every update keeps its bits.
#include <cmath>

#include "globe/kernels/cpu/table.h"
#include "globe/kernels/cpu/vector_clones.h"

namespace globe::kernels::cpu {

namespace {

template <class T>
struct AdamConstants {
  T b1, b2, one_minus_b1, one_minus_b2, step_size, decay, bc2s, eps, wd;
  bool decoupled;
};

// The branch is outside the loops and the arrays do not alias: the loops vectorise.
template <class T>
inline __attribute__((always_inline)) void adam_loop(T* __restrict p, const T* __restrict g, T* __restrict m,
                                                     T* __restrict v, int64_t n, const AdamConstants<T>& k) {
  auto one = [&](int64_t j, T grad) {
    m[j] = k.b1 * m[j] + k.one_minus_b1 * grad;
    v[j] = k.b2 * v[j] + k.one_minus_b2 * grad * grad;
    p[j] -= k.step_size * m[j] / (std::sqrt(v[j]) / k.bc2s + k.eps);
  };
  if (k.decoupled) {
    for (int64_t j = 0; j < n; ++j) {
      p[j] *= k.decay;
      one(j, g[j]);
    }
  } else {
    for (int64_t j = 0; j < n; ++j) one(j, g[j] + k.wd * p[j]);
  }
}

// The float update compiled for AVX2 too.
GLOBE_VECTOR_CLONES void adam_loop_f32(float* p, const float* g, float* m, float* v, int64_t n,
                                       const AdamConstants<float>& k) {
  adam_loop(p, g, m, v, n, k);
}

// Runs body(j) for j in [0, n) in fixed blocks of 16. With the __restrict pointers of the callers
// below this is what GCC vectorises at -O2 (its cheap cost model skips plain loops that need a
// scalar epilogue or alias checks); the per-element arithmetic is unchanged.
template <class Body>
inline void blocked(int64_t n, Body&& body) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int k = 0; k < 16; ++k) body(j + k);
  for (; j < n; ++j) body(j);
}

// noinline: the __restrict promises only hold while these are separate functions.
template <class T>
[[gnu::noinline]] void sgd_loop(T* __restrict p, const T* __restrict g, int64_t n, T lr, T wd) {
  if (wd == 0) blocked(n, [&](int64_t j) { p[j] -= lr * g[j]; });
  else blocked(n, [&](int64_t j) { p[j] -= lr * (g[j] + wd * p[j]); });
}

template <bool kFirst, bool kNesterov, class T>
[[gnu::noinline]] void sgd_momentum_loop(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n, T lr,
                                         T wd, T mom, T damp) {
  blocked(n, [&](int64_t j) {
    const T d = g[j] + wd * p[j];
    buf[j] = kFirst ? d : mom * buf[j] + damp * d;
    p[j] -= lr * (kNesterov ? d + mom * buf[j] : buf[j]);
  });
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buffer, const SgdStep& s) {
  visit_floating(param.dtype(), "SGD", [&](auto tag) {
    using T = decltype(tag);
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    const int64_t n = param.numel();
    const T lr = T(s.lr), wd = T(s.weight_decay), mom = T(s.momentum), damp = T(1 - s.dampening);
    if (s.momentum == 0) {
      sgd_loop<T>(p, g, n, lr, wd);
      return;
    }
    T* buf = buffer.data<T>();
    if (s.first && s.nesterov) sgd_momentum_loop<true, true, T>(p, g, buf, n, lr, wd, mom, damp);
    else if (s.first) sgd_momentum_loop<true, false, T>(p, g, buf, n, lr, wd, mom, damp);
    else if (s.nesterov) sgd_momentum_loop<false, true, T>(p, g, buf, n, lr, wd, mom, damp);
    else sgd_momentum_loop<false, false, T>(p, g, buf, n, lr, wd, mom, damp);
  });
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& s) {
  visit_floating(param.dtype(), s.decoupled ? "AdamW" : "Adam", [&](auto tag) {
    using T = decltype(tag);
    // 1 - beta in double, as torch does: 1 - float(0.999) would be off by 1.3e-5 relative.
    const AdamConstants<T> k{T(s.beta1),     T(s.beta2), T(1 - s.beta1), T(1 - s.beta2), T(s.step_size),
                             T(s.decay),     T(s.bc2_sqrt), T(s.eps),    T(s.weight_decay), s.decoupled};
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* m = exp_avg.data<T>();
    T* v = exp_avg_sq.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      adam_loop_f32(p, g, m, v, param.numel(), k);
    } else {
      adam_loop(p, g, m, v, param.numel(), k);
    }
  });
}

}  // namespace globe::kernels::cpu
