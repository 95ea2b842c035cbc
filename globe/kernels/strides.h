// Stride arithmetic on tensor metadata, for every device's kernels and for views (ops/shape_ops):
// no device's memory is touched.
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// Strides that read `t` as if broadcast to `out` (0 along broadcast dims).
inline Shape broadcast_strides(const Tensor& t, const Shape& out) {
  const Shape& s = t.shape();
  const Shape& st = t.strides();
  Shape r(out.size(), 0);
  const size_t lead = out.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) r[lead + i] = s[i] == 1 ? 0 : st[i];
  return r;
}

}  // namespace globe::kernels
