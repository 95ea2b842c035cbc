// Globe against PyTorch: an MLP trained with SGD, and forward/backward of the nn functions, on
// data recorded by scripts/golden/make_golden.py (tests/golden/data/*.json).
#include <gtest/gtest.h>

#include <iostream>
#include <memory>

#include "golden_util.h"

using namespace globe;
using golden::Tolerance;

namespace {

// Relative 1e-5 plus a tiny absolute floor for values that sit near zero.
constexpr Tolerance kTol{1e-5, 1e-7};

TEST(GoldenMlp, SgdTrainingMatchesTorch) {
  const auto j = golden::load("mlp_sgd.json");
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::ReLU>(),
                                                std::make_shared<nn::Linear>(16, 4));
  StateDict init;
  for (const auto& [key, t] : j.at("initial").items()) init.set(key, golden::tensor(t));
  model->load_state_dict(init);  // strict: the torch keys 0.weight, 0.bias, 2.weight, 2.bias
  for (const auto& [key, t] : model->state_dict())
    golden::expect_close(t, j.at("initial").at(key), "loaded " + key, {0, 0});

  const Tensor x = golden::tensor(j.at("x")), y = golden::tensor(j.at("y"));
  optim::SGD opt(model->parameters(), {.lr = j.at("lr").get<double>()});
  const int steps = j.at("steps").get<int>();
  ASSERT_EQ(int(j.at("losses").size()), steps);
  double worst_loss = 0;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = mse_loss((*model)(x), y);
    loss.backward();
    opt.step();
    const float got = loss.item<float>();
    const double want = j.at("losses")[s].get<double>();
    golden::expect_close(got, want, "loss of step " + std::to_string(s), kTol);
    worst_loss = std::max(worst_loss, std::fabs(got - want) / std::fabs(want));
  }
  std::vector<float> got_w, want_w;
  for (const auto& [key, t] : model->state_dict()) {
    golden::expect_close(t, j.at("final").at(key), "final " + key, kTol);
    auto g = t.to_vector<float>();
    auto w = golden::values(j.at("final").at(key));
    got_w.insert(got_w.end(), g.begin(), g.end());
    want_w.insert(want_w.end(), w.begin(), w.end());
  }
  std::cout << "[golden mlp] max relative loss error " << worst_loss
            << "; worst final-weight error / (1e-5*|w| + 1e-7) = "
            << golden::worst_ratio(got_w, want_w, kTol) << "\n";
}

// ---- nn functions: forward values and gradients of sum(out * r) -----------------------------------

class GoldenOps : public ::testing::TestWithParam<std::string> {};

Tensor run_op(const std::string& name, const nlohmann::json& c, const std::vector<Tensor>& in) {
  const auto& p = c.at("params");
  if (name == "gelu") return gelu(in[0]);
  if (name.rfind("softmax", 0) == 0) return softmax(in[0], p.at("dim").get<int64_t>());
  if (name.rfind("log_softmax", 0) == 0) return log_softmax(in[0], p.at("dim").get<int64_t>());
  if (name == "layer_norm")
    return layer_norm(in[0], p.at("normalized_shape").get<Shape>(), in[1], in[2], p.at("eps").get<double>());
  if (name == "cross_entropy") return cross_entropy(in[0], in[1]);
  if (name == "mse_loss") return mse_loss(in[0], in[1]);
  throw std::runtime_error("unknown golden op " + name);
}

TEST_P(GoldenOps, ForwardAndBackwardMatchTorch) {
  const auto j = golden::load("ops.json");
  const nlohmann::json* found = nullptr;
  for (const auto& c : j.at("cases"))
    if (c.at("name") == GetParam()) found = &c;
  ASSERT_NE(found, nullptr) << "no case " << GetParam() << " in ops.json";
  const auto& c = *found;
  std::vector<Tensor> in;
  for (const auto& t : c.at("inputs")) {
    if (t.contains("int")) {
      in.push_back(golden::int_tensor(t));
    } else {
      Tensor v = golden::tensor(t);
      v.set_requires_grad(true);
      in.push_back(v);
    }
  }
  Tensor out = run_op(GetParam(), c, in);
  golden::expect_close(out, c.at("out"), GetParam() + " forward", {1e-5, 1e-6});
  sum(mul(out, golden::tensor(c.at("weight_r")))).backward();
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& want = c.at("grads")[i];
    if (want.is_null()) continue;
    golden::expect_close(in[i].grad(), want, GetParam() + " grad of input " + std::to_string(i), {1e-5, 1e-6});
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, GoldenOps,
                         ::testing::Values("gelu", "softmax_last", "softmax_dim0", "log_softmax_last",
                                           "layer_norm", "cross_entropy", "mse_loss"));

}  // namespace
