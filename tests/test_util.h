// Small helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "globe/globe.h"

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

}  // namespace globe::testing
