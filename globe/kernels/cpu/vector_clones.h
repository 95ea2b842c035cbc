// Hot loops compiled twice — for x86-64-v3 (AVX2 + FMA, 8 floats per instruction) and for the
// baseline x86-64 the library is built for (SSE2, 4) — the copy chosen once at load time by the
// CPU (GCC's target_clones, an ifunc): the library stays portable and runs 8-wide where it can.
// The two copies may differ in the last bit (fused multiply-adds). Loops in such functions must
// not branch on floats (fast_math.h's select), or the AVX2 copy is not vectorised.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__)
#define GLOBE_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GLOBE_VECTOR_CLONES
#endif

#include <cstdint>

namespace globe::kernels {

// The sum of term(0) + ... + term(n - 1) in double, kept in 8 running sums (a vector's lanes)
// that are folded at the end: a plain `total += term(i)` is one long dependency chain the compiler
// may not reorder, so it stays scalar; this loop vectorises. Inlined into its caller, it is
// compiled for the caller's target (the AVX2 copy of a GLOBE_VECTOR_CLONES function included).
template <class Term>
inline __attribute__((always_inline)) double lane_sum(int64_t n, Term term) {
  double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lanes[j] += term(i + j);
  double total = 0;
  for (; i < n; ++i) total += term(i);
  for (double v : lanes) total += v;
  return total;
}

// The largest of term(0), ..., term(n - 1) (start: `init`), kept in 8 running maxima folded at the
// end, as lane_sum: `m = t > m ? t : m` over one running value is a chain GCC leaves scalar. The
// maximum of a set does not depend on the order (NaN terms are skipped either way).
template <class T, class Term>
inline __attribute__((always_inline)) T lane_max(int64_t n, T init, Term term) {
  T lanes[8] = {init, init, init, init, init, init, init, init};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      const T t = term(i + j);
      lanes[j] = t > lanes[j] ? t : lanes[j];
    }
  T best = init;
  for (; i < n; ++i) best = term(i) > best ? term(i) : best;
  for (T v : lanes) best = v > best ? v : best;
  return best;
}

}  // namespace globe::kernels
