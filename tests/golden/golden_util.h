// Helpers shared by the golden tests (tests/golden, tests/optim): load the JSON written by
// scripts/golden/make_golden.py and compare tensors against it with a relative + tiny absolute
// tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "globe/globe.h"

#ifndef GLOBE_GOLDEN_DIR
#error "GLOBE_GOLDEN_DIR must name tests/golden/data (set it in CMake)"
#endif

namespace golden {

inline nlohmann::json load(const std::string& file) {
  const std::string path = std::string(GLOBE_GOLDEN_DIR) + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  return nlohmann::json::parse(in);
}

inline globe::Shape shape_of(const nlohmann::json& t) { return t.at("shape").get<globe::Shape>(); }

// {"shape": [...], "data": [...]} -> float32 tensor (the stored doubles are float32-exact).
inline globe::Tensor tensor(const nlohmann::json& t) {
  std::vector<float> v;
  for (const auto& x : t.at("data")) v.push_back(static_cast<float>(x.get<double>()));
  return globe::from_vector(v, shape_of(t));
}

// {"shape": [...], "int": [...]} -> int64 tensor.
inline globe::Tensor int_tensor(const nlohmann::json& t) {
  return globe::from_vector(t.at("int").get<std::vector<int64_t>>(), shape_of(t));
}

inline std::vector<float> values(const nlohmann::json& t) {
  std::vector<float> v;
  for (const auto& x : t.at("data")) v.push_back(static_cast<float>(x.get<double>()));
  return v;
}

struct Tolerance {
  double rel = 1e-5;
  double abs = 1e-7;
};

// Largest |got - want| / (rel * |want| + abs) over all elements; <= 1 means every element agrees.
inline double worst_ratio(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol) {
  double worst = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(want[i]));
    worst = std::max(worst, err / (tol.rel * std::fabs(double(want[i])) + tol.abs));
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
  }
  return worst;
}

// Expects `got` to equal the golden tensor `want` elementwise within `tol`; names the first
// offending element.
inline void expect_close(const globe::Tensor& got, const nlohmann::json& want, const std::string& what,
                         Tolerance tol = {}) {
  ASSERT_TRUE(got.defined()) << what << ": undefined tensor";
  ASSERT_EQ(got.shape(), shape_of(want)) << what << ": shape";
  const std::vector<float> g = got.to_vector<float>(), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(double(g[i]) - double(w[i]));
    const double bound = tol.rel * std::fabs(double(w[i])) + tol.abs;
    if (!(err <= bound)) {
      ADD_FAILURE() << what << ": element " << i << " got " << g[i] << " want " << w[i] << " (|diff| "
                    << err << " > " << bound << ")";
      return;
    }
  }
}

inline void expect_close(float got, double want, const std::string& what, Tolerance tol = {}) {
  const double err = std::fabs(double(got) - want);
  EXPECT_LE(err, tol.rel * std::fabs(want) + tol.abs) << what << ": got " << got << " want " << want;
}

}  // namespace golden
