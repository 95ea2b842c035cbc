#include "globe/core/random.h"

#include <cmath>

namespace globe {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kM0) * c[0];
    uint64_t p1 = uint64_t(kM1) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1],
         uint32_t(p0)};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

namespace {
RandomStream g_default{/*seed=*/0x5eed, /*call=*/0};

std::array<uint32_t, 4> block_at(const RandomStream& s, uint64_t index) {
  return philox4x32({uint32_t(index), uint32_t(index >> 32), uint32_t(s.call), uint32_t(s.call >> 32)},
                    {uint32_t(s.seed), uint32_t(s.seed >> 32)});
}

// 24 random bits → [0, 1), exactly representable in float.
float to_unit(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
}  // namespace

void manual_seed(uint64_t seed) { g_default = RandomStream{seed, 0}; }

RandomStream next_random_stream() {
  RandomStream s = g_default;
  ++g_default.call;
  return s;
}

float uniform_at(const RandomStream& s, uint64_t index) { return to_unit(block_at(s, index)[0]); }

float normal_at(const RandomStream& s, uint64_t index) {
  auto b = block_at(s, index);
  // Box-Muller on two uniforms; u1 in (0, 1] so the log is finite.
  double u1 = (double(b[0] >> 8) + 1.0) / 16777216.0;
  double u2 = double(b[1] >> 8) / 16777216.0;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace globe
