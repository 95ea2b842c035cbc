// Optimizers against torch.optim (tests/golden/data/optim.json, made by
// scripts/golden/make_golden.py): every configuration step by step, the saved state, a
// state_dict round trip, parameters without gradients, and option validation.
#include <gtest/gtest.h>

#include <memory>

#include "../golden/golden_util.h"

using namespace globe;
using golden::Tolerance;

namespace {

constexpr Tolerance kTol{1e-5, 1e-7};

const nlohmann::json& data() {
  static const nlohmann::json j = golden::load("optim.json");
  return j;
}

const nlohmann::json& config(const std::string& name, const char* section = "configs") {
  for (const auto& c : data().at(section))
    if (c.at("name") == name) return c;
  throw std::runtime_error("no optimizer config " + name);
}

Tensor leaf(const nlohmann::json& t) {
  Tensor p = golden::tensor(t);
  p.set_requires_grad(true);
  return p;
}

std::unique_ptr<optim::Optimizer> make(const nlohmann::json& c, std::vector<Tensor> params) {
  const auto& o = c.at("options");
  const std::string kind = c.at("kind");
  if (kind == "sgd") {
    optim::SGDOptions so;
    so.lr = o.at("lr");
    so.momentum = o.at("momentum");
    so.dampening = o.at("dampening");
    so.weight_decay = o.at("weight_decay");
    so.nesterov = o.at("nesterov");
    return std::make_unique<optim::SGD>(std::move(params), so);
  }
  optim::AdamOptions ao;
  ao.lr = o.at("lr");
  ao.beta1 = o.at("beta1");
  ao.beta2 = o.at("beta2");
  ao.eps = o.at("eps");
  ao.weight_decay = o.at("weight_decay");
  if (kind == "adamw") return std::make_unique<optim::AdamW>(std::move(params), ao);
  return std::make_unique<optim::Adam>(std::move(params), ao);
}

void set_grad_of_step(const Tensor& p, size_t step) {
  p.set_grad(golden::tensor(data().at("grads").at(step)));
}

const std::vector<std::string> kConfigs = {"sgd_plain_wd", "sgd_momentum", "sgd_momentum_dampening",
                                           "sgd_nesterov", "adam",         "adam_wd",
                                           "adamw"};

class OptimGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimGolden, EveryStepMatchesTorch) {
  const auto& c = config(GetParam());
  Tensor p = leaf(data().at("param0"));
  auto opt = make(c, {p});
  const auto& after = c.at("after");
  for (size_t s = 0; s < after.size(); ++s) {
    set_grad_of_step(p, s);
    opt->step();
    golden::expect_close(p, after[s], GetParam() + " after step " + std::to_string(s), kTol);
  }
  // The saved state holds torch's buffers (momentum_buffer / exp_avg / exp_avg_sq) under
  // "state.0.<name>", and Adam's per-parameter step count under "state.0.step".
  const StateDict sd = opt->state_dict();
  for (const auto& [name, want] : c.at("final_state").items()) {
    const std::string key = "state.0." + name;
    ASSERT_TRUE(sd.contains(key)) << GetParam() << ": state_dict lacks " << key;
    golden::expect_close(sd.at(key), want, GetParam() + " " + key, {1e-5, 1e-9});
  }
  if (!c.at("final_state_step").is_null()) {
    ASSERT_TRUE(sd.contains("state.0.step"));
    EXPECT_EQ(sd.at("state.0.step").item<int64_t>(), c.at("final_state_step").get<int64_t>());
  }
}

// Two steps, save, load into a fresh optimizer over a copy of the parameter, then both continue:
// they must agree bit for bit with each other and with torch.
TEST_P(OptimGolden, StateDictRoundTripContinuesIdentically) {
  const auto& c = config(GetParam());
  Tensor p = leaf(data().at("param0"));
  auto opt = make(c, {p});
  for (size_t s = 0; s < 2; ++s) {
    set_grad_of_step(p, s);
    opt->step();
  }
  Tensor q = leaf(data().at("param0"));
  copy_(q, p.detach());
  auto fresh = make(c, {q});
  fresh->load_state_dict(opt->state_dict());
  const auto& after = c.at("after");
  for (size_t s = 2; s < after.size(); ++s) {
    set_grad_of_step(p, s);
    set_grad_of_step(q, s);
    opt->step();
    fresh->step();
    EXPECT_EQ(p.to_vector<float>(), q.to_vector<float>()) << GetParam() << " diverged at step " << s;
    golden::expect_close(q, after[s], GetParam() + " (reloaded) after step " + std::to_string(s), kTol);
  }
}

// A freshly constructed optimizer loaded from an empty state behaves like a new one; loading must
// also reset state the target optimizer had accumulated.
TEST_P(OptimGolden, LoadingAFreshStateResets) {
  const auto& c = config(GetParam());
  Tensor p = leaf(data().at("param0"));
  auto opt = make(c, {p});
  const StateDict empty_state = make(c, {leaf(data().at("param0"))})->state_dict();
  set_grad_of_step(p, 0);
  opt->step();
  opt->load_state_dict(empty_state);
  copy_(p, golden::tensor(data().at("param0")));
  set_grad_of_step(p, 0);
  opt->step();
  golden::expect_close(p, c.at("after")[0], GetParam() + " after reset", kTol);
}

INSTANTIATE_TEST_SUITE_P(Torch, OptimGolden, ::testing::ValuesIn(kConfigs));

// A parameter whose grad is undefined is skipped (torch: grad None); its state starts at its
// first gradient. For Adam, torch keeps the step count per parameter, so the bias correction of a
// parameter that missed steps uses its own count.
void check_partial(const std::string& name) {
  const auto& c = config(name, "partial");
  Tensor p = leaf(data().at("param0")), q = leaf(data().at("second_param0"));
  auto opt = make(c, {p, q});
  for (size_t s = 0; s < c.at("after").size(); ++s) {
    set_grad_of_step(p, s);
    const auto& gq = data().at("second_grads").at(s);
    q.set_grad(gq.is_null() ? Tensor() : golden::tensor(gq));
    opt->step();
    golden::expect_close(p, c.at("after")[s], name + " first param after step " + std::to_string(s), kTol);
    golden::expect_close(q, c.at("after_second")[s], name + " second param after step " + std::to_string(s),
                         kTol);
  }
}

TEST(OptimPartialGrads, SgdMomentumSkipsParamsWithoutGrad) { check_partial("sgd_momentum_partial"); }

// torch keeps Adam's step count per parameter: one that had no grad in earlier steps gets the
// bias correction of its own first step.
TEST(OptimPartialGrads, AdamUsesPerParameterStepCount) { check_partial("adam_partial"); }

TEST(OptimZeroGrad, DropsGradients) {
  Tensor p = leaf(data().at("param0"));
  optim::SGD opt({p});
  set_grad_of_step(p, 0);
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  const auto before = p.to_vector<float>();
  opt.step();  // no gradient: nothing moves
  EXPECT_EQ(p.to_vector<float>(), before);
}

TEST(OptimOptions, InvalidOptionsThrow) {
  auto params = [] { return std::vector<Tensor>{leaf(data().at("param0"))}; };
  auto sgd = [&](optim::SGDOptions o) { optim::SGD s(params(), o); };
  auto adam = [&](optim::AdamOptions o) { optim::Adam a(params(), o); };
  EXPECT_THROW(sgd({.lr = -0.1}), Error);
  EXPECT_THROW(sgd({.lr = 0.1, .momentum = -0.5}), Error);
  EXPECT_THROW(sgd({.lr = 0.1, .weight_decay = -1e-3}), Error);
  EXPECT_THROW(sgd({.lr = 0.1, .momentum = 0.0, .nesterov = true}), Error);
  EXPECT_THROW(sgd({.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}), Error);
  EXPECT_NO_THROW(sgd({.lr = 0.1, .momentum = 0.9, .nesterov = true}));
  EXPECT_THROW(adam({.lr = -1e-3}), Error);
  EXPECT_THROW(adam({.beta1 = 1.0}), Error);
  EXPECT_THROW(adam({.beta1 = -0.1}), Error);
  EXPECT_THROW(adam({.beta2 = 1.0}), Error);
  EXPECT_THROW(adam({.eps = -1e-8}), Error);
  EXPECT_THROW(adam({.weight_decay = -0.1}), Error);  // torch: "Invalid weight_decay value"
  EXPECT_THROW((optim::AdamW(params(), {.weight_decay = -0.01})), Error);
  EXPECT_NO_THROW(adam({}));
  // Parameters must be leaves.
  Tensor p = leaf(data().at("param0"));
  EXPECT_THROW(optim::SGD({mul(p, 2.0)}), Error);
}

TEST(OptimOptions, AdamStateDictNeedsStep) {
  Tensor p = leaf(data().at("param0"));
  optim::Adam opt({p});
  StateDict state;  // moments without their step count
  state.set("state.0.exp_avg", zeros_like(p));
  state.set("state.0.exp_avg_sq", zeros_like(p));
  EXPECT_THROW(opt.load_state_dict(state), Error);
  EXPECT_NO_THROW(opt.load_state_dict(StateDict{}));  // no state at all: a fresh optimizer
}

}  // namespace

namespace globe {
namespace {

TEST(OptimGroups, AdamWGroupsEqualOneOptimizerPerGroup) {
  manual_seed(8);
  auto leaves = [] {
    manual_seed(8);
    std::vector<Tensor> ps = {randn({4, 3}), randn({3}), randn({2, 2}), randn({5})};
    for (Tensor& p : ps) p.set_requires_grad(true);
    return ps;
  };
  std::vector<Tensor> a = leaves(), b = leaves();
  const auto groups = optim::decay_matrices_only(a, 0.1);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_TRUE(groups[0].params[0].same(a[0]) && groups[0].params[1].same(a[2]));
  EXPECT_TRUE(groups[1].params[0].same(a[1]) && groups[1].params[1].same(a[3]));
  optim::AdamW grouped(groups, {.lr = 0.01, .beta2 = 0.95});
  optim::AdamW decay({b[0], b[2]}, {.lr = 0.01, .beta2 = 0.95, .weight_decay = 0.1});
  optim::AdamW no_decay({b[1], b[3]}, {.lr = 0.01, .beta2 = 0.95, .weight_decay = 0.0});
  for (int step = 0; step < 3; ++step) {
    manual_seed(20 + uint64_t(step));
    for (size_t i = 0; i < a.size(); ++i) {
      Tensor g = randn(a[i].shape());
      a[i].set_grad(g);
      b[i].set_grad(g);
    }
    grouped.step();
    decay.step();
    no_decay.step();
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << i;
  }
  EXPECT_THROW((optim::AdamW({{{a[0]}, -0.1}}, {})), Error);
}

}  // namespace
}  // namespace globe
