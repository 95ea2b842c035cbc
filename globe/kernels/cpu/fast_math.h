// Elementwise math without library calls, so that the loops using it vectorise (the library
// compiles with -fno-trapping-math, which lets GCC turn the selects below into blends).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace globe::kernels {

// `cond ? a : b` as bit operations: GCC vectorises the loops around it for every target (a `?:`
// on floats is vectorised for SSE2 but left as a branch for AVX2, which stops the vectoriser).
[[gnu::always_inline]] inline float select(bool cond, float a, float b) {
  const uint32_t m = -uint32_t(cond);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^x as y 2^n with x = n ln2 + r, |r| <= ln2 / 2, y = e^r by Cephes' expf polynomial (within 2 ulp
// of expf). n is rounded with the 1.5 * 2^23 trick rather than std::floor, which is a library
// call (and no vectorisation) below SSE4.1. x must be finite and in [-150 ln2, 128 ln2].
struct ExpParts {
  float y;
  int n;
};
[[gnu::always_inline]] inline ExpParts exp_parts(float x) {
  const float nf = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // nearest integer
  const float r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  return {y, int(nf)};
}
[[gnu::always_inline]] inline float pow2(int n) { return std::bit_cast<float>((n + 127) << 23); }  // -126 <= n <= 127

// e^x with x clamped to [-87, 88], so the result is a normal float, never inf or 0. The clamp is
// bit selects: written as ?: GCC evaluated the caller's formula at each bound too.
[[gnu::always_inline]] inline float exp_clamped(float x0) {
  const float x = select(x0 < -87.0f, -87.0f, select(x0 > 88.0f, 88.0f, x0));
  const ExpParts e = exp_parts(x);
  return e.y * pow2(e.n);
}

// e^x over the whole float range, as the exp op computes it: inf above ~88.72, subnormals down to
// ~-103.3 (2^n applied in two halves so that neither leaves the normal range), 0 below, NaN kept.
[[gnu::always_inline]] inline float exp_full(float x0) {
  const float x = select(x0 < -104.0f, -104.0f, select(x0 > 89.0f, 89.0f, x0));
  const ExpParts e = exp_parts(x);
  const int half = e.n >> 1;
  return e.y * pow2(half) * pow2(e.n - half);
}

// e^x for x <= 0, 0 below -87 (-inf included): what softmax needs after subtracting the maximum.
[[gnu::always_inline]] inline float exp_nonpositive(float x) { return select(x < -87.0f, 0.0f, exp_clamped(x)); }

// GELU's tanh approximation (GPT-2's): 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), and
// its derivative. They go through 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)), the logistic function of
// 2u: one exp and one division, no cancellation near 0 and no branch (tanh itself needs a series
// near 0; that form cost twice as much). float uses exp_clamped; its e^88 cap makes the gate
// ~1e-38 where it would underflow, which is the 0 the tanh form gives. double keeps std::exp.
constexpr double kGeluTanhScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluTanhCubic = 0.044715;
template <class T>
[[gnu::always_inline]] inline T gelu_gate_exp(T x) {  // e^(-2u)
  const T minus_2u = T(-2 * kGeluTanhScale) * (x + T(kGeluTanhCubic) * x * x * x);
  if constexpr (std::is_same_v<T, float>) {
    return exp_clamped(minus_2u);
  } else {
    return std::exp(minus_2u);
  }
}
template <class T>
[[gnu::always_inline]] inline T gelu_tanh_value(T x) {
  return x / (T(1) + gelu_gate_exp(x));
}
// d/dx [x s(x)], s = 1 / (1 + e^(-2u)): s + x s (1 - s) 2 du/dx, du/dx = sqrt(2/pi) (1 + 3 0.044715 x^2)
template <class T>
[[gnu::always_inline]] inline T gelu_tanh_slope(T x) {
  const T s = T(1) / (T(1) + gelu_gate_exp(x));
  return s * (T(1) + x * (T(1) - s) * T(2 * kGeluTanhScale) * (T(1) + T(3 * kGeluTanhCubic) * x * x));
}

// SiLU, x / (1 + e^-x), and its derivative s (1 + x (1 - s)), s = 1 / (1 + e^-x); float through
// exp_full (e^-x overflows to inf below x = -88.7, giving -0 as torch's x * sigmoid(x) does, where a
// capped exp would leave x e^-88), double through std::exp.
template <class T>
[[gnu::always_inline]] inline T silu_gate_exp(T x) {  // e^-x
  if constexpr (std::is_same_v<T, float>) {
    return exp_full(-x);
  } else {
    return std::exp(-x);
  }
}
template <class T>
[[gnu::always_inline]] inline T silu_value(T x) {
  return x / (T(1) + silu_gate_exp(x));
}
template <class T>
[[gnu::always_inline]] inline T silu_slope(T x) {
  const T s = T(1) / (T(1) + silu_gate_exp(x));
  return s * (T(1) + x * (T(1) - s));
}

}  // namespace globe::kernels
