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
