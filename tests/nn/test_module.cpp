// Tests for globe/nn: registration by name, state dicts, train/eval, and the standard layers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "globe/globe.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::values;

using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using V = std::vector<double>;


std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> names;
  for (const auto& [name, t] : named) names.push_back(name);
  return names;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

// Two linear layers plus a parameter and a buffer of the parent's own.
struct Net : nn::Module {
  nn::Linear net1{4, 3}, net2{3, 2};
  Tensor scale = ones({2});
  Tensor steps = zeros({1}, kInt64);
  Net() {
    register_parameter("scale", scale);
    register_buffer("steps", steps);
    register_modules({{"net1", net1}, {"net2", net2}});
  }
  Tensor forward(const Tensor& x) { return mul(net2(relu(net1(x))), scale); }
};

TEST(Module, NamedParametersAreDottedInRegistrationOrder) {
  Net net;
  EXPECT_THAT(names_of(net.named_parameters()),
              ElementsAre("scale", "net1.weight", "net1.bias", "net2.weight", "net2.bias"));
  EXPECT_THAT(names_of(net.named_buffers()), ElementsAre("steps"));
  const auto named = net.named_parameters();
  EXPECT_TRUE(named[1].second.same(net.net1.weight));
  EXPECT_TRUE(named[4].second.same(net.net2.bias));
  for (const auto& [name, p] : named) EXPECT_TRUE(p.requires_grad()) << name;
  EXPECT_FALSE(net.steps.requires_grad());
  auto children = net.named_children();
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0].first, "net1");
  EXPECT_EQ(children[0].second, &net.net1);
}

TEST(Module, ParametersFollowTheSameOrder) {
  Net net;
  const std::vector<Tensor> params = net.parameters();
  ASSERT_EQ(params.size(), 5u);
  EXPECT_TRUE(params[0].same(net.scale));
  EXPECT_TRUE(params[1].same(net.net1.weight));
  EXPECT_TRUE(params[2].same(net.net1.bias));
  EXPECT_TRUE(params[3].same(net.net2.weight));
  EXPECT_TRUE(params[4].same(net.net2.bias));
}

TEST(Module, SharedParameterIsListedOnce) {
  struct Tied : nn::Module {
    nn::Linear a{3, 3}, b{3, 3, /*bias=*/false};
    Tied() {
      b.weight = a.weight;  // tied: b's "weight" slot now holds a's tensor
      register_modules({{"a", a}, {"b", b}});
    }
  } tied;
  EXPECT_THAT(names_of(tied.named_parameters()), ElementsAre("a.weight", "a.bias", "b.weight"));
  EXPECT_EQ(tied.parameters().size(), 2u);
}

TEST(Module, StateDictHoldsDetachedParametersThenBuffers) {
  Net net;
  StateDict sd = net.state_dict();
  EXPECT_THAT(sd.keys(), ElementsAre("scale", "net1.weight", "net1.bias", "net2.weight",
                                     "net2.bias", "steps"));
  for (const auto& [name, p] : net.named_parameters()) {
    const Tensor& saved = sd.at(name);
    EXPECT_EQ(saved.shape(), p.shape()) << name;
    EXPECT_EQ(values(saved), values(p)) << name;
    EXPECT_FALSE(saved.requires_grad()) << name;
  }
  EXPECT_EQ(sd.at("steps").dtype(), kInt64);
  EXPECT_THAT(error_of([&] { sd.at("nope"); }),
              AllOf(StartsWith("[state_dict]"), HasSubstr("nope")));
}

TEST(Module, LoadStateDictCopiesInPlace) {
  manual_seed(1);
  Net target;
  manual_seed(2);
  Net source;
  copy_(source.steps, full({1}, 7.0, kInt64));
  ASSERT_NE(values(target.net1.weight), values(source.net1.weight));

  const auto impl_before = target.net1.weight.impl_ptr();
  const auto storage_before = target.net1.weight.storage();
  optim::SGD opt(target.parameters(), {.lr = 0.5});
  target.load_state_dict(source.state_dict());

  // Same tensors, new values.
  EXPECT_EQ(target.net1.weight.impl_ptr(), impl_before);
  EXPECT_EQ(target.net1.weight.storage(), storage_before);
  EXPECT_TRUE(target.net1.weight.requires_grad());
  for (const auto& [name, p] : target.named_parameters())
    EXPECT_EQ(values(p), values(source.state_dict().at(name))) << name;
  EXPECT_THAT(target.steps.to_vector<int64_t>(), ElementsAre(7));
  // A copy, not an alias of the source.
  EXPECT_NE(target.net1.weight.storage(), source.net1.weight.storage());

  // The optimizer still updates the module's parameters.
  ASSERT_TRUE(opt.params()[1].same(target.net1.weight));
  const V loaded = values(target.net1.weight);
  target.net1.weight.set_grad(ones({3, 4}));
  opt.step();
  V expected;
  for (double v : loaded) expected.push_back(v - 0.5);
  EXPECT_THAT(values(target.net1.weight), ::testing::Pointwise(::testing::FloatNear(1e-6), expected));
}

TEST(Module, StrictLoadListsEveryProblemAndChangesNothing) {
  manual_seed(3);
  Net net;
  std::map<std::string, V> before;  // a snapshot of every value
  for (const auto& [name, t] : net.state_dict()) before[name] = values(t);
  StateDict bad;
  bad.set("scale", full({2}, 5.0));       // fine on its own
  bad.set("net1.weight", zeros({4, 3}));  // mis-shaped (model has [3, 4])
  bad.set("net1.bias", full({3}, 9.0));   // fine
  bad.set("net2.weight", zeros({2, 3}));  // fine
  bad.set("steps", zeros({1}, kInt64));   // fine
  bad.set("extra.weight", zeros({2}));    // unexpected
  // "net2.bias" is missing.
  const std::string msg = error_of([&] { net.load_state_dict(bad); });
  EXPECT_THAT(msg, StartsWith("[load_state_dict]"));
  EXPECT_THAT(msg, AllOf(HasSubstr("missing"), HasSubstr("net2.bias")));
  EXPECT_THAT(msg, AllOf(HasSubstr("unexpected"), HasSubstr("extra.weight")));
  EXPECT_THAT(msg, AllOf(HasSubstr("net1.weight"), HasSubstr("[4, 3]"), HasSubstr("[3, 4]")));
  // Nothing was assigned, not even the keys that matched.
  for (const auto& [name, t] : net.state_dict()) EXPECT_EQ(values(t), before.at(name)) << name;
}

TEST(Module, NonStrictLoadIgnoresMissingAndUnexpected) {
  Net net;
  StateDict partial;
  partial.set("net1.bias", full({3}, 2.0));
  partial.set("something.else", zeros({5}));
  const V w_before = values(net.net1.weight);
  const auto loaded = net.load_state_dict(partial, /*strict=*/false);
  EXPECT_THAT(loaded.unexpected, ElementsAre("something.else"));  // said, not silently ignored
  EXPECT_THAT(loaded.missing, ElementsAre("scale", "steps", "net1.weight", "net2.weight", "net2.bias"));
  EXPECT_THAT(values(net.net1.bias), ElementsAre(2, 2, 2));
  EXPECT_EQ(values(net.net1.weight), w_before);
  EXPECT_THROW(net.load_state_dict(partial, /*strict=*/true), Error);
  // A shape mismatch is an error even when not strict.
  StateDict wrong;
  wrong.set("net1.bias", zeros({4}));
  EXPECT_THAT(error_of([&] { net.load_state_dict(wrong, false); }),
              AllOf(StartsWith("[load_state_dict]"), HasSubstr("net1.bias")));
  EXPECT_THAT(values(net.net1.bias), ElementsAre(2, 2, 2));
}

TEST(Module, LoadConvertsDtypes) {
  nn::Linear fc(2, 2);
  StateDict sd;
  sd.set("weight", from_vector(V{1, 2, 3, 4}, {2, 2}));  // float64 into float32 parameters
  sd.set("bias", from_vector(V{5, 6}, {2}));
  fc.load_state_dict(sd);
  EXPECT_EQ(fc.weight.dtype(), kFloat32);
  EXPECT_THAT(fc.weight.to_vector<float>(), ElementsAre(1, 2, 3, 4));
}

TEST(Module, TrainAndEvalPropagate) {
  nn::Sequential net(std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Dropout>(0.5));
  EXPECT_TRUE(net.is_training());
  EXPECT_TRUE(net[1].is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net[0].is_training());
  EXPECT_FALSE(net[1].is_training());
  Tensor x = randn({16, 8});
  EXPECT_EQ(values(net[1](x)), values(x));  // dropout is the identity in eval
  EXPECT_EQ(values(net(x)), values(net[0](x)));
  net.train();
  EXPECT_TRUE(net[1].is_training());
  const V dropped = values(net[1](x));
  EXPECT_NE(dropped, values(x));
  EXPECT_TRUE(std::any_of(dropped.begin(), dropped.end(), [](double v) { return v == 0.0; }));
}

TEST(Module, ZeroGradDropsGradients) {
  Net net;
  sum(net.forward(randn({2, 4}))).backward();
  for (const Tensor& p : net.parameters()) EXPECT_TRUE(p.grad().defined());
  net.zero_grad();
  for (const Tensor& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToConvertsParametersAndKeepsRequiresGrad) {
  Net net;
  const V w = values(net.net1.weight);
  net.to(kFloat64);
  for (const auto& [name, p] : net.named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat64) << name;
    EXPECT_TRUE(p.requires_grad()) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
  }
  EXPECT_EQ(net.steps.dtype(), kInt64);  // integer buffers are left alone
  EXPECT_EQ(values(net.net1.weight), w);
  Tensor y = net.forward(randn({2, 4}, kFloat64));
  EXPECT_EQ(y.dtype(), kFloat64);
  sum(y).backward();
  EXPECT_EQ(net.net1.weight.grad().dtype(), kFloat64);
}

TEST(Module, ToKeepsTiedParametersTied) {
  struct Tied : nn::Module {
    nn::Linear a{3, 3}, b{3, 3, /*bias=*/false};
    Tied() {
      b.weight = a.weight;
      register_modules({{"a", a}, {"b", b}});
    }
  } tied;
  tied.to(kFloat64);
  EXPECT_EQ(tied.a.weight.dtype(), kFloat64);
  EXPECT_TRUE(tied.a.weight.same(tied.b.weight));
  EXPECT_EQ(tied.parameters().size(), 2u);
}

// to(device), as torch's module.to: every parameter and buffer moves in place (a handle taken
// before, as an optimizer's, sees the move), values and forward unchanged, and back; a global one
// keeps its ranks and SBP on a placement of the device's kind.
TEST(Module, ToADeviceMovesEveryParameterAndBufferInPlace) {
  const Device sim = Device::parse("sim:0");
  Net net;
  const Tensor w = net.net1.weight;
  const V before = values(w);
  const Tensor x = randn({2, 4});
  const V want = values(net.forward(x));
  net.to(sim);
  for (const auto& [name, t] : net.named_parameters()) {
    EXPECT_EQ(t.device(), sim) << name;
    EXPECT_TRUE(t.requires_grad()) << name;
  }
  EXPECT_EQ(net.steps.device(), sim) << "buffers move too";
  EXPECT_TRUE(w.same(net.net1.weight));
  EXPECT_EQ(w.device(), sim);
  EXPECT_EQ(values(net.forward(to(x, sim))), want);
  net.to(kCPU);
  EXPECT_TRUE(net.net1.weight.device().is_cpu());
  EXPECT_EQ(values(w), before);

  nn::Linear g(3, 2);
  g.to_global(Placement::all(), sbp::broadcast);
  const V gw = values(g.weight);
  g.to(sim);
  EXPECT_EQ(g.weight.placement().device(), "sim");
  EXPECT_EQ(g.weight.placement().ranks(), Placement::all().ranks());
  EXPECT_EQ(g.weight.sbp(), NdSbp(sbp::broadcast));
  EXPECT_EQ(values(g.weight), gw);
}

// A device this process cannot use (sim has sim:0 and sim:1) is an error naming it, and nothing
// moves, globals included.
TEST(Module, ToADeviceThisProcessCannotUseIsAnErrorThatMovesNothing) {
  Net net;
  net.net2.to_global(Placement::all(), sbp::broadcast);
  EXPECT_THAT(error_of([&] { net.to(Device::parse("sim:7")); }), AllOf(StartsWith("[to]"), HasSubstr("sim:7")));
  EXPECT_TRUE(net.net1.weight.device().is_cpu());
  EXPECT_EQ(net.net2.weight.placement().device(), "cpu");
}

TEST(Module, StateDictKeepsInsertionOrderOnReplace) {
  StateDict sd;
  sd.set("b", zeros({1}));
  sd.set("a", zeros({2}));
  sd.set("b", ones({3}));
  EXPECT_THAT(sd.keys(), ElementsAre("b", "a"));
  EXPECT_EQ(sd.size(), 2u);
  EXPECT_EQ(sd.at("b").shape(), (Shape{3}));
  EXPECT_TRUE(sd.contains("a"));
  EXPECT_FALSE(sd.contains("c"));
}

TEST(Module, StateDictEraseFilterSelect) {
  StateDict sd;
  sd.set("fc.weight", zeros({2, 2}));
  sd.set("fc.bias", zeros({2}));
  sd.set("batch.x", ones({4}));
  sd.set("out.weight", zeros({1, 2}));
  // A file holding weights and a data batch: keep the weights only.
  const StateDict weights = sd.filter([](const std::string& k) { return k.rfind("batch.", 0) != 0; });
  EXPECT_THAT(weights.keys(), ElementsAre("fc.weight", "fc.bias", "out.weight"));
  EXPECT_EQ(sd.size(), 4u);  // filter copies
  const StateDict picked = sd.select({"out.weight", "fc.bias"});
  EXPECT_THAT(picked.keys(), ElementsAre("out.weight", "fc.bias"));
  EXPECT_EQ(picked.at("out.weight").shape(), (Shape{1, 2}));
  EXPECT_THAT(error_of([&] { (void)sd.select({"fc.bias", "fc.wieght"}); }),
              AllOf(StartsWith("[state_dict]"), HasSubstr("'fc.wieght'")));
  EXPECT_TRUE(sd.erase("fc.bias"));
  EXPECT_FALSE(sd.erase("fc.bias"));
  EXPECT_THAT(sd.keys(), ElementsAre("fc.weight", "batch.x", "out.weight"));
  EXPECT_EQ(sd.at("out.weight").shape(), (Shape{1, 2}));  // the index follows the erase
  sd.set("fc.bias", ones({2}));
  EXPECT_THAT(sd.keys(), ElementsAre("fc.weight", "batch.x", "out.weight", "fc.bias"));
}

TEST(Module, RegisteringItselfIsAnError) {
  struct Self : nn::Module {};
  Self s;
  EXPECT_THAT(error_of([&] { s.register_module("me", s); }), StartsWith("[register_module]"));
}

TEST(Module, SetParameterTiesAfterRegistrationAndTheForwardUsesIt) {
  // Tying after construction, by name (what Python's `b.weight = a.weight` does): the registered
  // slot takes the tensor, so b's forward computes with a's weight and the registry lists it once.
  struct Pair : nn::Module {
    nn::Linear a{3, 4}, b{3, 4, /*bias=*/false};
    Pair() { register_modules({{"a", a}, {"b", b}}); }
  } pair;
  ASSERT_FALSE(pair.b.weight.same(pair.a.weight));
  pair.b.set_parameter("weight", pair.a.weight);
  EXPECT_TRUE(pair.b.weight.same(pair.a.weight));
  EXPECT_TRUE(pair.b.get("weight").same(pair.a.weight));
  EXPECT_EQ(pair.parameters().size(), 2u);  // a.weight (= b.weight) and a.bias
  Tensor x = randn({2, 3});
  EXPECT_EQ(values(pair.b(x)), values(matmul_nt(x, pair.a.weight)));
  // The gradient of the tied weight gathers both uses.
  sum(add(pair.a(x), pair.b(x))).backward();
  Tensor g = pair.a.weight.grad();
  EXPECT_EQ(values(g), values(mul(matmul(transpose(ones({2, 4}), 0, 1), x), 2.0)));
}

TEST(Module, SetParameterBufferAndModuleAddOrReplaceByName) {
  nn::Module m;
  m.set_parameter("w", ones({2}).set_requires_grad());
  m.set_buffer("count", zeros({1}, kInt64));
  auto child = std::make_shared<nn::Linear>(2, 3);
  m.set_module("fc", child);
  EXPECT_THAT(names_of(m.named_parameters()), ElementsAre("w", "fc.weight", "fc.bias"));
  EXPECT_THAT(names_of(m.named_buffers()), ElementsAre("count"));
  EXPECT_THAT(m.state_dict().keys(), ElementsAre("w", "fc.weight", "fc.bias", "count"));
  EXPECT_EQ(m.kind_of("w"), "parameter");
  EXPECT_EQ(m.kind_of("count"), "buffer");
  EXPECT_EQ(m.kind_of("fc"), "module");
  EXPECT_EQ(m.kind_of("nothing"), "");
  // Replacing the child: the registry follows, and the module keeps the new one alive.
  m.set_module("fc", std::make_shared<nn::Linear>(2, 5));
  child.reset();
  EXPECT_EQ(m.named_parameters()[1].second.shape(), (Shape{5, 2}));
  EXPECT_EQ(m.named_children().size(), 1u);
  // A name keeps its kind.
  EXPECT_THAT(error_of([&] { m.set_buffer("w", zeros({2})); }),
              AllOf(StartsWith("[set_buffer]"), HasSubstr("'w' is a parameter")));
  EXPECT_THAT(error_of([&] { m.set_module("count", std::make_shared<nn::ReLU>()); }),
              AllOf(StartsWith("[set_module]"), HasSubstr("'count' is a buffer")));
  EXPECT_THAT(error_of([&] { m.set_parameter("fc", ones({1})); }), HasSubstr("'fc' is a module"));
}

// ---- layers -------------------------------------------------------------------------------------

TEST(Layers, SequentialNamesChildrenByIndex) {
  nn::Sequential seq(std::make_shared<nn::Linear>(4, 5), std::make_shared<nn::ReLU>(),
                     std::make_shared<nn::Linear>(5, 2));
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_THAT(names_of(seq.named_parameters()),
              ElementsAre("0.weight", "0.bias", "2.weight", "2.bias"));
  EXPECT_EQ(seq.named_children()[1].first, "1");
  Tensor x = randn({3, 4});
  auto& first = dynamic_cast<nn::Linear&>(seq[0]);
  auto& last = dynamic_cast<nn::Linear&>(seq[2]);
  EXPECT_EQ(values(seq(x)), values(last(relu(first(x)))));
  EXPECT_EQ(seq(x).shape(), (Shape{3, 2}));
}

TEST(Layers, LinearInitWithinBoundsAndVaried) {
  manual_seed(9);
  nn::Linear fc(16, 32);
  EXPECT_EQ(fc.weight.shape(), (Shape{32, 16}));
  EXPECT_EQ(fc.bias.shape(), (Shape{32}));
  const double bound = 1.0 / std::sqrt(16.0);
  for (const Tensor* t : {&fc.weight, &fc.bias}) {
    const V v = values(*t);
    for (double x : v) {
      EXPECT_GE(x, -bound);
      EXPECT_LE(x, bound);
    }
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    EXPECT_LT(*lo, 0.0);
    EXPECT_GT(*hi, 0.0);
    EXPECT_GT(*hi - *lo, bound);  // spread over the range, not all equal
  }
  // Weight and bias are drawn independently.
  EXPECT_NE(values(narrow(reshape(fc.weight, {-1}), 0, 0, 32)), values(fc.bias));
}

TEST(Layers, LinearForward) {
  nn::Linear fc(3, 2);
  copy_(fc.weight, from_vector(std::vector<float>{1, 0, -1, 2, 1, 0}, {2, 3}));
  copy_(fc.bias, from_vector(std::vector<float>{0.5, -0.5}, {2}));
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_THAT(values(fc(x)), ElementsAre(1 - 3 + 0.5, 2 + 2 - 0.5, 4 - 6 + 0.5, 8 + 5 - 0.5));
  nn::Linear no_bias(3, 2, false);
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_THAT(names_of(no_bias.named_parameters()), ElementsAre("weight"));
  EXPECT_EQ(no_bias(randn({5, 7, 3})).shape(), (Shape{5, 7, 2}));
}

TEST(Layers, LayerNormDefaults) {
  nn::LayerNorm ln({4});
  EXPECT_THAT(values(ln.weight), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(values(ln.bias), ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(names_of(ln.named_parameters()), ElementsAre("weight", "bias"));
  Tensor y = ln(from_vector(std::vector<float>{1, 2, 3, 4, -2, 0, 2, 4}, {2, 4}));
  const V m = values(mean(y, {1})), sq = values(mean(mul(y, y), {1}));
  for (double v : m) EXPECT_NEAR(v, 0.0, 1e-6);
  for (double v : sq) EXPECT_NEAR(v, 1.0, 1e-4);  // eps 1e-5 shrinks it slightly
  nn::LayerNorm plain({4}, 1e-5, /*affine=*/false);
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_EQ(values(plain(from_vector(std::vector<float>{1, 2, 3, 4}, {4}))),
            values(ln(from_vector(std::vector<float>{1, 2, 3, 4}, {4}))));
}

TEST(Layers, EmbeddingShapeAndLookup) {
  manual_seed(12);
  nn::Embedding emb(10, 4);
  EXPECT_EQ(emb.weight.shape(), (Shape{10, 4}));
  EXPECT_THAT(names_of(emb.named_parameters()), ElementsAre("weight"));
  Tensor idx = from_vector(std::vector<int64_t>{1, 9, 1, 0, 3, 3}, {2, 3});
  Tensor out = emb(idx);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(values(narrow(reshape(out, {6, 4}), 0, 1, 1)), values(narrow(emb.weight, 0, 9, 1)));
  EXPECT_EQ(values(narrow(reshape(out, {6, 4}), 0, 2, 1)), values(narrow(emb.weight, 0, 1, 1)));
  const V w = values(emb.weight);
  EXPECT_THAT(w, Not(Each(w[0])));
}

TEST(Layers, FlattenAndActivations) {
  Tensor x = randn({2, 3, 4});
  EXPECT_EQ(nn::Flatten()(x).shape(), (Shape{2, 12}));
  EXPECT_EQ(nn::Flatten(0)(x).shape(), (Shape{24}));
  EXPECT_EQ(nn::Flatten(0, 1)(x).shape(), (Shape{6, 4}));
  EXPECT_EQ(values(nn::Flatten()(x)), values(x));
  EXPECT_EQ(values(nn::ReLU()(x)), values(relu(x)));
  EXPECT_EQ(values(nn::GELU()(x)), values(gelu(x)));
  EXPECT_EQ(values(nn::Tanh()(x)), values(tanh(x)));
}

TEST(Layers, Losses) {
  Tensor a = from_vector(std::vector<float>{1, 2}, {2}),
         b = from_vector(std::vector<float>{0, 0}, {2});
  EXPECT_FLOAT_EQ(nn::MSELoss()(a, b).item<float>(), 2.5f);
  Tensor logits = zeros({2, 4});
  Tensor target = from_vector(std::vector<int64_t>{0, 3}, {2});
  EXPECT_NEAR(nn::CrossEntropyLoss()(logits, target).item<float>(), std::log(4.0), 1e-6);
}

}  // namespace
}  // namespace globe
