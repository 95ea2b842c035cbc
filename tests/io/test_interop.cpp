// Interoperability with other safetensors implementations: a file written by hand from PyTorch
// tensors (scripts/golden/make_safetensors_fixture.py; keys and data in different orders, no header
// padding) loads with the right values; and Interop.WriteForPython writes a Globe file plus the
// values it must hold, which scripts/golden/read_safetensors.py (numpy, no Globe code) checks as a
// CTest fixture (GLOBE_IO_INTEROP_DIR).
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "globe/io/safetensors.h"
#include "io_test_util.h"

namespace globe {
namespace {

using testing::expect_bit_equal;

Tensor from_json(const nlohmann::json& e) {
  const Shape shape = e.at("shape").get<Shape>();
  const std::string dtype = e.at("dtype").get<std::string>();
  if (dtype == "F32") return from_vector(e.at("values").get<std::vector<float>>(), shape);
  if (dtype == "F64") return from_vector(e.at("values").get<std::vector<double>>(), shape);
  return from_vector(e.at("values").get<std::vector<int64_t>>(), shape);
}

TEST(Interop, TorchWrittenFileLoadsWithTheRightValues) {
  const std::string path = std::string(GLOBE_IO_DATA_DIR) + "/torch_fixture.safetensors";
  nlohmann::json expect = nlohmann::json::parse(
      testing::read_bytes(std::string(GLOBE_IO_DATA_DIR) + "/torch_fixture.json"));
  const StateDict sd = load(path);
  std::vector<std::string> keys = sd.keys(), want;
  for (const auto& [name, e] : expect.items())
    if (name != "__metadata__") want.push_back(name);
  std::sort(keys.begin(), keys.end());
  std::sort(want.begin(), want.end());
  ASSERT_EQ(keys, want);
  for (const std::string& name : want)
    expect_bit_equal(sd.at(name), from_json(expect.at(name)), name);
  const io::SafetensorsReader r(path, "test");
  EXPECT_EQ(r.header().metadata.at("format"), "pt");
  EXPECT_NE(r.header().data_start % 8, 0u) << "the fixture is meant to be unpadded";
  // Loaded straight into a module-like layout: split over the ranks.
  const Tensor w = load(path).at("layer.weight").to_global(Placement::all(), sbp::split(0));
  expect_bit_equal(w, from_json(expect.at("layer.weight")), "layer.weight boxed to S(0)");
}

TEST(Interop, WriteForPython) {
  const char* env = std::getenv("GLOBE_IO_INTEROP_DIR");
  testing::SharedTempDir tmp;
  const std::string dir = env ? env : tmp.path();
  manual_seed(8);
  StateDict sd;
  sd.set("fc.weight", randn({5, 3}, Placement::all(), sbp::split(0)));  // gathered by save
  sd.set("fc.bias", randn({3}, kFloat64));
  sd.set("steps", from_vector(std::vector<int64_t>{-1, 1LL << 50, 7}, {3}));
  sd.set("scalar", from_vector(std::vector<float>{0.1f}, {}));
  sd.set("empty", zeros({2, 0}));
  if (dist::world_rank() == 0) testing::fs::create_directories(dir);
  save(sd, dir + "/globe.safetensors", {.global_dst_rank = 0, .metadata = {{"writer", "globe"}}});
  nlohmann::json expect = {{"__metadata__", {{"writer", "globe"}}}};
  for (const auto& [key, t] : sd) {
    const Tensor v = testing::whole(t);
    nlohmann::json values;
    if (v.dtype() == kInt64)
      values = v.to_vector<int64_t>();
    else
      values = v.to_vector<double>();  // float32 widened to double: exact
    expect[key] = {
        {"dtype", io::safetensors_dtype(v.dtype())}, {"shape", v.shape()}, {"values", values}};
  }
  if (dist::world_rank() == 0) testing::write_bytes(dir + "/globe_expected.json", expect.dump());
}

}  // namespace
}  // namespace globe
