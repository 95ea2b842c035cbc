// Counter-based random numbers (Philox4x32-10). A value depends only on (seed, call number,
// logical position), never on which rank computes it or how the tensor is sharded — docs/design.md §3's
// "same seed, any layout, same numbers". The arithmetic is core/philox.h's, which the CUDA fills
// (kernels/cuda/random.cu) share, so a GPU draws the same bits.
#pragma once

#include <array>
#include <cstdint>

#include "globe/core/shape.h"

namespace globe {

// Philox4x32-10 block: 4 random 32-bit words for a 128-bit counter and 64-bit key.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// The process-wide generator state: a seed and a counter of random calls made so far. Every rank
// runs the same program, so every rank's call counter agrees without communication.
struct RandomStream {
  uint64_t seed;
  uint64_t call;  // distinguishes successive random ops with the same seed
};

// Seeds the default generator on this rank; every rank calling it with the same seed (as every
// rank runs the same program) gives every rank the same stream, local and global alike.
void manual_seed(uint64_t seed);
// Reserves the next call number of the default generator, for a global random op: its stream is
// the same on every rank, so its values depend only on the logical position (any layout).
RandomStream next_random_stream();
// The same, for a local random op (a tensor of this rank alone). Until manual_seed is called its
// seed is this rank's: the default seed mixed with the rank the launcher gave the process (rank 0,
// or a process started alone, keeps the default seed), so unseeded local random tensors differ per
// rank, as in OneFlow and PyTorch, and repeat from run to run. After manual_seed(s) it is s on
// every rank. Local and global ops share one call counter.
RandomStream next_local_random_stream();

// The default generator's whole state, to replay a region's random draws: activation
// recomputation (autograd/checkpoint.h) saves it before a forward and sets it again to recompute
// it, so dropout draws the same masks.
struct GeneratorState {
  RandomStream stream;
  bool seeded;
};
GeneratorState generator_state();
void set_generator_state(const GeneratorState& state);

// Uniform [0, 1) and standard normal for logical element `index` of stream `s`.
float uniform_at(const RandomStream& s, uint64_t index);
float normal_at(const RandomStream& s, uint64_t index);
// 64 random bits for logical element `index` of stream `s` (randint's source).
uint64_t bits_at(const RandomStream& s, uint64_t index);

}  // namespace globe
