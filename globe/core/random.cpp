#include "globe/core/random.h"

#include <cstdlib>

#include "globe/core/philox.h"

namespace globe {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  const philox::Words b = philox::philox4x32(philox::Words{{c[0], c[1], c[2], c[3]}}, k[0], k[1]);
  return {b.w[0], b.w[1], b.w[2], b.w[3]};
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

philox::Words block_at(const RandomStream& s, uint64_t index) { return philox::block_at(s.seed, s.call, index); }
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

GeneratorState generator_state() { return {g_default, g_seeded}; }

void set_generator_state(const GeneratorState& state) {
  g_default = state.stream;
  g_seeded = state.seeded;
}

float uniform_at(const RandomStream& s, uint64_t index) { return philox::uniform_of(block_at(s, index)); }

uint64_t bits_at(const RandomStream& s, uint64_t index) { return philox::bits_of(block_at(s, index)); }

float normal_at(const RandomStream& s, uint64_t index) { return philox::normal_of(block_at(s, index)); }

}  // namespace globe
