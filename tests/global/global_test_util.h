// Helpers shared by the multi-rank tests: layouts to iterate over and exact comparisons.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "globe/globe.h"
#include "test_util.h"

namespace globe::testing {

// The 1-D layouts of a tensor of `ndim` dims: S(0..ndim-1), B, P.
inline std::vector<Sbp> all_sbps(int64_t ndim, bool with_partial = true) {
  std::vector<Sbp> v;
  for (int64_t d = 0; d < ndim; ++d) v.push_back(sbp::split(d));
  v.push_back(sbp::broadcast);
  if (with_partial) v.push_back(sbp::partial_sum);
  return v;
}

inline std::string name_of(const NdSbp& s) { return s.to_string(); }

// Bitwise equality of two local tensors' values.
inline void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << what;
}

// The block of the full value `full` that `rank` holds under (p, sbp) — non-partial layouts.
inline Tensor expected_shard(const Tensor& full, const Placement& p, const NdSbp& sbp, int rank) {
  Block b = local_block(full.shape(), p, normalize_sbp(sbp, full.dim(), p.mesh_ndim(), "test"), rank);
  Tensor v = full;
  for (size_t d = 0; d < b.start.size(); ++d) v = narrow(v, int64_t(d), b.start[d], b.shape[d]);
  return contiguous(v);
}

inline std::vector<int> first_ranks(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

}  // namespace globe::testing
