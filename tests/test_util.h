// Small helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "globe/globe.h"

namespace globe {
// The "cuda" kind under the names the tests use (the library names no kind: device/backend.h).
inline Device cuda_device(int index = 0) { return Device::parse("cuda:" + std::to_string(index)); }
inline bool cuda_built() { return device_built("cuda"); }
inline int cuda_device_count() { return device_count("cuda"); }
}  // namespace globe

namespace globe::testing {

// This process's world rank and the world size.
inline int me() { return dist::world_rank(); }
inline int world() { return dist::world_size(); }

// A tensor's values as doubles, row-major (collective for a global tensor).
inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// The message of the globe::Error `fn` throws; a test failure (and "") when it throws nothing.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

// A training run's record: its losses and, after training, every parameter's whole value.
struct TrainedValues {
  std::vector<double> losses;
  std::vector<std::vector<float>> params;
};

// Two runs agree within float rounding: losses to 1e-6 relative, parameters to 1e-5 (or the
// tolerances given, for runs that round differently: bfloat16 against float32).
inline void expect_same_training(const TrainedValues& got, const TrainedValues& want, const std::string& what,
                                 double loss_rtol = 1e-6, double param_atol = 1e-5) {
  ASSERT_EQ(got.losses.size(), want.losses.size()) << what;
  for (size_t i = 0; i < got.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], loss_rtol * std::abs(want.losses[i])) << what << " step " << i;
  ASSERT_EQ(got.params.size(), want.params.size()) << what;
  for (size_t k = 0; k < got.params.size(); ++k)
    for (size_t j = 0; j < got.params[k].size(); ++j)
      ASSERT_NEAR(got.params[k][j], want.params[k][j], param_atol) << what << " parameter " << k << " element " << j;
}

// The sum of `v` over every rank (collective).
inline int64_t sum_over_ranks(int64_t v) {
  if (dist::world_size() == 1) return v;
  const Tensor t = full({1}, double(v), kFloat64).to_global(Placement::all(), sbp::partial_sum).to_global(sbp::broadcast);
  return int64_t(t.item<double>());
}

}  // namespace globe::testing
