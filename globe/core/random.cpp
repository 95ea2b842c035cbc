#include "globe/core/random.h"

#include <cmath>
#include <cstdlib>

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
constexpr uint64_t kDefaultSeed = 0x5eed;
RandomStream g_default{kDefaultSeed, /*call=*/0};
bool g_seeded = false;  // manual_seed called: local streams use the same seed on every rank

// The rank the launcher gave this process (mpirun, PMIx or PMI), 0 when started alone. Read from
// the environment, so it is known before MPI is initialised (which happens on first use).
uint64_t launch_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(name); v && *v) return std::strtoull(v, nullptr, 10);
  return 0;
}

std::array<uint32_t, 4> block_at(const RandomStream& s, uint64_t index) {
  return philox4x32({uint32_t(index), uint32_t(index >> 32), uint32_t(s.call), uint32_t(s.call >> 32)},
                    {uint32_t(s.seed), uint32_t(s.seed >> 32)});
}

// 24 random bits → [0, 1), exactly representable in float.
float to_unit(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
}  // namespace

void manual_seed(uint64_t seed) {
  g_default = RandomStream{seed, 0};
  g_seeded = true;
}

RandomStream next_random_stream() {
  RandomStream s = g_default;
  ++g_default.call;
  return s;
}

RandomStream next_local_random_stream() {
  RandomStream s = next_random_stream();
  // The golden-ratio step keeps rank seeds apart; rank 0 keeps the default seed.
  static const uint64_t rank_seed = kDefaultSeed + launch_rank() * 0x9E3779B97F4A7C15ull;
  if (!g_seeded) s.seed = rank_seed;
  return s;
}

float uniform_at(const RandomStream& s, uint64_t index) { return to_unit(block_at(s, index)[0]); }

uint64_t bits_at(const RandomStream& s, uint64_t index) {
  const auto b = block_at(s, index);
  return uint64_t(b[0]) | uint64_t(b[1]) << 32;
}

float normal_at(const RandomStream& s, uint64_t index) {
  auto b = block_at(s, index);
  // Box-Muller on two uniforms; u1 in (0, 1] so the log is finite.
  double u1 = (double(b[0] >> 8) + 1.0) / 16777216.0;
  double u2 = double(b[1] >> 8) / 16777216.0;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

}  // namespace globe
