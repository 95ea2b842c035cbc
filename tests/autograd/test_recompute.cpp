// Activation recomputation (globe::checkpoint, UnaryModule::set_recompute; docs/design.md §6):
// the same bits as without it — outputs, every gradient, dropout on — locally and on global
// tensors (data parallel with the gradient buckets, tensor parallel), the saving in memory, and
// the errors. One process and 2 and 4 ranks; the pipeline schedules with recomputation are in
// tests/pipeline/test_pipeline.cpp.
#include <gmock/gmock.h>

#include <cstring>
#include <memory>

#include "globe/core/node.h"
#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::error_of;

// A residual block: x + fc2(dropout(gelu(fc1(ln(x))))), GPT's MLP half.
class Block : public nn::UnaryModule {
 public:
  Block(int64_t d, double p) : ln({d}), fc1(d, 4 * d), fc2(4 * d, d), drop(p) {
    register_modules({{"ln", ln}, {"fc1", fc1}, {"fc2", fc2}});
  }
  Tensor forward(const Tensor& x) override { return x + fc2(drop(gelu(fc1(ln(x))))); }
  nn::LayerNorm ln;
  nn::Linear fc1, fc2;
  nn::Dropout drop;
};

struct Net {
  std::vector<std::unique_ptr<Block>> blocks;
  Net(int n, int64_t d, double p, bool recompute) {
    manual_seed(11);
    for (int i = 0; i < n; ++i) {
      blocks.push_back(std::make_unique<Block>(d, p));
      blocks.back()->set_recompute(recompute, "blocks." + std::to_string(i));
    }
  }
  Tensor operator()(Tensor x) {
    for (auto& b : blocks) x = (*b)(x);
    return x;
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> out;
    for (auto& b : blocks)
      for (const Tensor& t : b->parameters()) out.push_back(t);
    return out;
  }
};

// Whole values, bit for bit comparable (collective for global tensors).
std::vector<float> bits(const Tensor& t) {
  return (t.is_global() ? t.to_global(t.placement(), replicated(t.placement().mesh_ndim())) : t).to_vector<float>();
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
}

// Two steps of loss = mean((net(x))^2) with and without recomputation, from the same seed; returns
// the losses and gradients of both.
struct Run {
  std::vector<std::vector<float>> outputs, grads;
};
Run run(bool recompute, const std::function<Tensor()>& input, const std::function<void(Net&)>& lay_out, int steps = 2) {
  Net net(3, 8, 0.25, recompute);
  lay_out(net);
  Run r;
  for (int s = 0; s < steps; ++s) {
    manual_seed(50 + uint64_t(s));
    const Tensor x = input();
    const Tensor y = net(x);
    mean(mul(y, y)).backward();
    r.outputs.push_back(bits(y));
  }
  for (const Tensor& p : net.parameters()) r.grads.push_back(bits(p.grad()));
  return r;
}

void expect_same_run(const Run& got, const Run& want) {
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t i = 0; i < got.outputs.size(); ++i) expect_same_bits(got.outputs[i], want.outputs[i], "output " + std::to_string(i));
  for (size_t i = 0; i < got.grads.size(); ++i) expect_same_bits(got.grads[i], want.grads[i], "gradient " + std::to_string(i));
}

TEST(Checkpoint, LocalBlocksWithDropoutGiveTheSameBits) {
  auto input = [] { return randn({6, 5, 8}); };
  auto local = [](Net&) {};
  expect_same_run(run(true, input, local), run(false, input, local));
}

TEST(Checkpoint, DataParallelGivesTheSameBits) {
  // The batch split over every rank, parameters broadcast: gradients reduced through the buckets
  // (GLOBE_BUCKET_MB runs cover both extremes), in the same order with recomputation.
  const Placement p = Placement::all();
  auto input = [&] { return randn({8, 3, 8}, p, sbp::split(0)); };
  auto dp = [&](Net& n) {
    for (auto& b : n.blocks) b->to_global(p, sbp::broadcast);
  };
  expect_same_run(run(true, input, dp), run(false, input, dp));
}

TEST(Checkpoint, TensorParallelGivesTheSameBits) {
  // fc1 column parallel, fc2 row parallel (its output a partial sum boxed to broadcast at the add).
  const Placement p = Placement::all();
  auto input = [&] { return randn({4, 3, 8}, p, sbp::broadcast); };
  auto tp = [&](Net& n) {
    for (auto& b : n.blocks)
      b->distribute(p, {{"fc1.weight", sbp::split(0)}, {"fc1.bias", sbp::split(0)}, {"fc2.weight", sbp::split(1)}},
                    sbp::broadcast);
  };
  expect_same_run(run(true, input, tp), run(false, input, tp));
}

TEST(Checkpoint, KeepsOnlyTheRegionInputs) {
  // 8 blocks of width 64 on 32 x 16 rows: without recomputation each block keeps its layer
  // norm, both products, GELU and the dropout mask; with it, only its input.
  auto peak = [](bool recompute) {
    Net net(8, 64, 0.1, recompute);
    const Tensor x = randn({32, 16, 64});
    const int64_t before = memory_stats().current_bytes;
    reset_peak_memory();
    const Tensor y = net(x);
    const int64_t kept = memory_stats().current_bytes - before;
    mean(mul(y, y)).backward();
    return std::pair{kept, memory_stats().peak_bytes - before};
  };
  const auto [kept_plain, peak_plain] = peak(false);
  const auto [kept_recompute, peak_recompute] = peak(true);
  const int64_t input_bytes = 32 * 16 * 64 * 4;
  // Each block's input and its output (the next block's input) and nothing else.
  EXPECT_LE(kept_recompute, 9 * input_bytes);
  EXPECT_LT(double(kept_recompute), 0.2 * double(kept_plain));
  EXPECT_LT(double(peak_recompute), 0.5 * double(peak_plain));
}

TEST(Checkpoint, WithoutGradModeItIsThePlainForward) {
  Net plain(1, 8, 0.0, false), marked(1, 8, 0.0, true);
  NoGradGuard no_grad;
  const Tensor x = randn({2, 8});
  const Tensor y = marked(x);
  EXPECT_FALSE(y.requires_grad());
  expect_same_bits(bits(y), bits(plain(x)), "output");
}

TEST(Checkpoint, FindsWhatTheRegionReadsAndGivesTheirGradients) {
  // A closure that reads a captured leaf and a captured intermediate, not listed as inputs.
  manual_seed(3);
  const Tensor a = randn({4}).set_requires_grad(), w = randn({4}).set_requires_grad();
  const Tensor b = mul(a, 2.0);  // an intermediate of the outer graph
  const Tensor y = checkpoint([&](const std::vector<Tensor>& in) { return sum(mul(tanh(mul(in[0], w)), b)); }, {a}, "f");
  EXPECT_EQ(y.grad_fn()->name(), "checkpoint(f)");
  EXPECT_EQ(y.grad_fn()->inputs().size(), 3u);  // a, w and b
  y.backward();
  const Tensor a2 = a.detach().set_requires_grad(), w2 = w.detach().set_requires_grad();
  sum(mul(tanh(mul(a2, w2)), mul(a2, 2.0))).backward();
  expect_same_bits(bits(w.grad()), bits(w2.grad()), "w");
  expect_same_bits(bits(a.grad()), bits(a2.grad()), "a");
}

// Its forward depends on how often it ran: the recomputation records other ops.
class Fickle : public nn::UnaryModule {
 public:
  Fickle() : fc(4, 4) { register_module("fc", fc); }
  Tensor forward(const Tensor& x) override { return ++calls_ % 2 ? fc(x) : tanh(fc(x)); }
  nn::Linear fc;

 private:
  int calls_ = 0;
};

TEST(Checkpoint, ARegionThatComputesDifferentlyWhenRecomputedIsAnError) {
  Fickle m;
  m.set_recompute(true, "decoder.2");
  const Tensor y = sum(m(randn({2, 4})));
  const std::string e = error_of([&] { y.backward(); });
  EXPECT_THAT(e, HasSubstr("[checkpoint] decoder.2: the recomputed forward differs from the first run"));
  EXPECT_THAT(e, HasSubstr("op 1 counted back from the output was matmul_nt_bias and is now tanh"));
  // Nothing was accumulated, and the module still works.
  EXPECT_FALSE(m.fc.weight.grad().defined());
  m.set_recompute(false);
  sum(m(randn({2, 4}))).backward();
  EXPECT_TRUE(m.fc.weight.grad().defined());
}

TEST(Checkpoint, AParameterReplacedBeforeTheBackwardIsAnError) {
  nn::Linear fc(3, 3);
  fc.set_recompute(true, "proj");
  const Tensor y = sum(fc(randn({2, 3})));
  fc.weight = randn({3, 3}).set_requires_grad();  // the module now reads another tensor
  EXPECT_THAT(error_of([&] { y.backward(); }), HasSubstr("is now another tensor"));
}

TEST(Engine, GradientsStopAtTheTargetsAndAccumulateNothing) {
  const Tensor a = randn({3}).set_requires_grad();
  const Tensor b = exp(a);
  const Tensor c = sum(mul(b, b));
  const std::vector<Tensor> g = gradients(c, Tensor(), {b});
  expect_same_bits(bits(g[0]), bits(mul(b.detach(), 2.0)), "dc/db");
  EXPECT_FALSE(a.grad().defined());
  EXPECT_THAT(error_of([&] { gradients(c, Tensor(), {}); }), HasSubstr("is not one of the targets"));
}

}  // namespace
}  // namespace globe
