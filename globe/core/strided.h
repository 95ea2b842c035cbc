// Strided iteration shared by every kernel. Dims that are contiguous for all operands are merged,
// so the common cases become one flat loop; the innermost dim is handed to the caller as a run
// (count + per-operand stride) it can vectorise.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "globe/core/shape.h"

namespace globe {

template <size_t K>
struct StridedRun {
  int64_t count;                     // elements in this run
  std::array<int64_t, K> offset;     // element offset of the run's start, per operand
  std::array<int64_t, K> stride;     // element stride inside the run, per operand
};

// Calls fn(StridedRun<K>) for every innermost run of `shape`, where operand k's element at index
// (i0, i1, ...) is base[k] + sum_d i_d * strides[k][d].
template <size_t K, class Fn>
void for_each_run(const Shape& shape, const std::array<Shape, K>& strides,
                  const std::array<int64_t, K>& base, Fn&& fn) {
  // Drop size-1 dims, then merge dim d into d+1 where every operand allows it.
  Shape dims;
  std::array<Shape, K> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (shape[d] == 0) return;
    dims.push_back(shape[d]);
    for (size_t k = 0; k < K; ++k) st[k].push_back(strides[k][d]);
  }
  if (dims.empty()) {
    StridedRun<K> run{1, base, {}};
    fn(run);
    return;
  }
  Shape md{dims.back()};
  std::array<Shape, K> ms;
  for (size_t k = 0; k < K; ++k) ms[k].push_back(st[k].back());
  for (size_t d = dims.size() - 1; d-- > 0;) {
    bool mergeable = true;
    for (size_t k = 0; k < K; ++k) mergeable &= st[k][d] == ms[k].front() * md.front();
    if (mergeable) {
      md.front() *= dims[d];
    } else {
      md.insert(md.begin(), dims[d]);
      for (size_t k = 0; k < K; ++k) ms[k].insert(ms[k].begin(), st[k][d]);
    }
  }
  const size_t nd = md.size();
  StridedRun<K> run;
  run.count = md[nd - 1];
  for (size_t k = 0; k < K; ++k) run.stride[k] = ms[k][nd - 1];
  std::vector<int64_t> idx(nd, 0);
  std::array<int64_t, K> off = base;
  while (true) {
    run.offset = off;
    fn(run);
    size_t d = nd - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++idx[d];
      for (size_t k = 0; k < K; ++k) off[k] += ms[k][d];
      if (idx[d] < md[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= ms[k][d] * md[d];
      idx[d] = 0;
    }
  }
}

}  // namespace globe
