// Random fills that depend only on (stream, logical position): a block of a larger logical tensor
// gets exactly the values the whole tensor would have there (docs/design.md §3). These are the CPU
// table's; the CUDA table's (kernels/cuda/random.cu) draw the same bits with core/philox.h.
#pragma once

#include "globe/core/random.h"
#include "globe/core/tensor.h"
#include "globe/kernels/kinds.h"

namespace globe::kernels {

// `out` (contiguous local) holds the block of a `logical`-shaped tensor starting at `start`.
void fill_normal(const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start);
void fill_uniform(const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                  double low, double high);
// int64 integers in [low, high): low + 64 random bits modulo (high - low) (a bias below 2^-32 for
// ranges under 2^32).
void fill_randint(const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                  int64_t low, int64_t high);
// Keep-mask for dropout: 1/(1-p) where uniform >= p, else 0.
void fill_dropout_mask(const Tensor& out, const RandomStream& s, const Shape& logical,
                       const Shape& start, double p);

// The CPU table's random_fill entry (device_kernels.h): the fill of `kind` above, with its
// parameters from `params`.
void random_fill(RandomKind kind, const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                 const RandomParams& params);

}  // namespace globe::kernels
