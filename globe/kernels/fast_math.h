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

// e^x for x <= 0 (0 below -87, -inf included): Cephes' expf polynomial after x = n ln2 + r,
// within 2 ulp of expf.
[[gnu::always_inline]] inline float exp_nonpositive(float x0) {
  const float x = x0 < -87.0f ? -87.0f : x0;
  const int n = int(x * 1.44269504088896341f - 0.5f);  // nearest integer (truncation of a value <= 0)
  const float nf = float(n);
  const float r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const float v = y * std::bit_cast<float>((n + 127) << 23);  // y 2^n
  return select(x0 < -87.0f, 0.0f, v);                        // 0 below expf's range
}

// tanh through one exp and no branch (glibc's tanhf goes through expm1f and does not vectorise:
// it was a quarter of a GPT step). Near 0, where 1 - e cancels, a series (error < 1e-12 there);
// elsewhere within a few ulp. Double precision keeps std::tanh.
template <class T>
[[gnu::always_inline]] inline T tanh_fast(T u) {
  if constexpr (std::is_same_v<T, float>) {
    const float a = std::fabs(u);
    // the series on u clamped to where it is used, so that it stays finite everywhere
    const float c = u < -0.0625f ? -0.0625f : (u > 0.0625f ? 0.0625f : u), c2 = c * c;
    const float series = c * (1.0f + c2 * (-1.0f / 3 + c2 * (2.0f / 15 + c2 * (-17.0f / 315))));
    const float e = exp_nonpositive(-2.0f * a);
    const float t = std::copysign((1.0f - e) / (1.0f + e), u);
    return select(a < 0.0625f, series, t);
  } else {
    return std::tanh(u);
  }
}

// GELU's tanh approximation (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), and its
// derivative.
constexpr double kGeluTanhScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluTanhCubic = 0.044715;
template <class T>
[[gnu::always_inline]] inline T gelu_tanh_value(T x) {
  return T(0.5) * x * (T(1) + tanh_fast(T(kGeluTanhScale) * (x + T(kGeluTanhCubic) * x * x * x)));
}
template <class T>
[[gnu::always_inline]] inline T gelu_tanh_slope(T x) {
  const T t = tanh_fast(T(kGeluTanhScale) * (x + T(kGeluTanhCubic) * x * x * x));
  return T(0.5) * (T(1) + t) +
         T(0.5) * x * (T(1) - t * t) * T(kGeluTanhScale) * (T(1) + T(3 * kGeluTanhCubic) * x * x);
}

}  // namespace globe::kernels
