// Small builders for SBP signatures (docs/design.md §5), shared by the op families.
#pragma once

#include <vector>

#include "globe/ops/op.h"

namespace globe::sbp_rules {

// Every input S(d) -> output S(d), for every d in [0, ndim) but `except` (an op that acts along
// that one dim; -1: none). With `drops_except` the output lacks that dim (a reduction without
// keepdim), so an input S(d) past it gives an output S(d - 1).
inline void add_same_split(std::vector<SbpSignature>& out, size_t n_inputs, int64_t ndim, int64_t except = -1,
                           bool drops_except = false) {
  for (int64_t d = 0; d < ndim; ++d) {
    if (d == except) continue;
    out.push_back({std::vector<Sbp>(n_inputs, sbp::split(d)), sbp::split(drops_except && d > except ? d - 1 : d)});
  }
}

// Every input P -> output P (ops linear in all inputs jointly, such as add).
inline void add_all_partial(std::vector<SbpSignature>& out, size_t n_inputs) {
  out.push_back({std::vector<Sbp>(n_inputs, sbp::partial_sum), sbp::partial_sum});
}

// Input `which` P, the others B -> P (ops linear in that one input, such as mul).
inline void add_partial_at(std::vector<SbpSignature>& out, size_t n_inputs, size_t which) {
  std::vector<Sbp> in(n_inputs, sbp::broadcast);
  in[which] = sbp::partial_sum;
  out.push_back({in, sbp::partial_sum});
}

// Numpy-broadcast elementwise: output dim d split; each input split at its matching dim, or B
// where it is broadcast (size 1 or missing) along d.
inline void add_broadcast_split(std::vector<SbpSignature>& out, const std::vector<TensorMeta>& in,
                                const Shape& out_shape) {
  const int64_t nd = int64_t(out_shape.size());
  for (int64_t d = 0; d < nd; ++d) {
    std::vector<Sbp> sig;
    bool any_split = false;
    for (const TensorMeta& m : in) {
      const int64_t k = d - (nd - int64_t(m.shape.size()));
      if (k >= 0 && m.shape[k] == out_shape[d]) {
        sig.push_back(sbp::split(k));
        any_split = true;
      } else {
        sig.push_back(sbp::broadcast);
      }
    }
    if (any_split) out.push_back({sig, sbp::split(d)});
  }
}

}  // namespace globe::sbp_rules
