// Philox4x32-10 and the element transforms of the random fills, for the host and for CUDA device
// code alike: core/random.cpp's uniform_at / normal_at / bits_at and kernels/cuda/random.cu call
// these same functions, so a seed gives the same raw bits on every device (docs/design.md §16).
// Plain C++ with no library types, so nvcc compiles it as __host__ __device__; keep its arithmetic
// as it is: tests/core/test_tensor.cpp pins its outputs, and the CPU goldens depend on every bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "globe/base/host_device.h"

namespace globe::philox {

// Four 32-bit words: a Philox counter or one block of output.
struct Words {
  uint32_t w[4];
};

// Philox4x32-10 block: 4 random 32-bit words for a 128-bit counter and 64-bit key (k0, k1).
GLOBE_HOST_DEVICE inline Words philox4x32(Words c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * c.w[0];
    const uint64_t p1 = uint64_t(kM1) * c.w[2];
    c = Words{{uint32_t(p1 >> 32) ^ c.w[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c.w[3] ^ k1, uint32_t(p0)}};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

// The block of logical element `index` of the stream (seed, call): the counter is (index, call),
// the key the seed.
GLOBE_HOST_DEVICE inline Words block_at(uint64_t seed, uint64_t call, uint64_t index) {
  return philox4x32(Words{{uint32_t(index), uint32_t(index >> 32), uint32_t(call), uint32_t(call >> 32)}},
                    uint32_t(seed), uint32_t(seed >> 32));
}

// 24 random bits → [0, 1), exactly representable in float.
GLOBE_HOST_DEVICE inline float to_unit(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }

// Uniform [0, 1) from a block: its first word.
GLOBE_HOST_DEVICE inline float uniform_of(const Words& b) { return to_unit(b.w[0]); }

// 64 random bits from a block: its first two words.
GLOBE_HOST_DEVICE inline uint64_t bits_of(const Words& b) { return uint64_t(b.w[0]) | uint64_t(b.w[1]) << 32; }

// Standard normal from a block: Box-Muller on two uniforms, in double, rounded once to float;
// u1 in (0, 1] so the log is finite. The only transcendental one: glibc's log / cos and CUDA's
// agree to an ulp or two of double, so the float can differ, rarely, by one ulp between the CPU and
// the GPU (there is no a*b+c here for nvcc to contract into an FMA).
GLOBE_HOST_DEVICE inline float normal_of(const Words& b) {
  const double u1 = (double(b.w[0] >> 8) + 1.0) / 16777216.0;
  const double u2 = double(b.w[1] >> 8) / 16777216.0;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace globe::philox
