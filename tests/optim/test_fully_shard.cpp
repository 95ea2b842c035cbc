// How a module's forward uses its parameters (nn/parameter_use.h), 1, 2 and 4 ranks.
// ZeRO-3 / fully sharded parameters (nn::fully_shard, docs/design.md §15): training equals the
// replicated run within float rounding — alone, with recomputation, with gradient accumulation
// (on a data x tensor mesh: tests/optim/test_zero.cpp) — each rank holds 1/n of the parameters, gradients and optimizer state,
// checkpoints load between sharded and replicated models, and the mistakes are errors.
// Mixed precision (nn::mixed_precision, §17): bfloat16 compute trains close to float32 with
// float32 master weights and gradients, with ZeRO-3 too, and reduces in bfloat16 only on request.
// The GPT's --zero 3 and --dtype bf16 (with pipeline stages) are in tests/gpt.
#include <gmock/gmock.h>

#include <bit>
#include <cmath>
#include <optional>

#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::error_of;
using testing::me;
using testing::world;

struct Mlp {
  std::shared_ptr<nn::Linear> fc1, fc2;
  nn::Sequential net;
  Mlp() {
    manual_seed(7);
    fc1 = std::make_shared<nn::Linear>(8, 12);
    fc2 = std::make_shared<nn::Linear>(12, 6);  // 6 rows: uneven blocks on 4 ranks
    net.push_back(fc1);
    net.push_back(std::make_shared<nn::ReLU>());
    net.push_back(fc2);
  }
};

struct Options {
  bool shard = false, recompute = false;
  int microbatches = 1;
  std::optional<nn::MixedPrecision> precision = std::nullopt;
  int prefetch = 0;                  // set_prefetch({fc1, fc2}, depth)
  bool reshard_after_forward = true;
  bool shard_fc2 = true;             // false: fc2 stays replicated, its gradient bucketed
  int64_t bucket_bytes = 0;          // the gradient buckets' size when > 0
};

struct Trained : testing::TrainedValues {
  optim::Optimizer::Memory memory;
};

Trained train(const Options& o, int steps = 5) {
  Mlp m;
  const Placement p = Placement::all();
  m.net.to_global(p, sbp::broadcast);
  for (nn::Linear* fc : {m.fc1.get(), m.fc2.get()}) {
    if (o.shard && (fc == m.fc1.get() || o.shard_fc2)) nn::fully_shard(*fc, {.reshard_after_forward = o.reshard_after_forward});
    fc->set_recompute(o.recompute, "fc");
  }
  if (o.prefetch > 0) nn::set_prefetch({m.fc1.get(), m.fc2.get()}, o.prefetch);
  const int64_t buckets_were = grad_bucket_bytes();
  if (o.bucket_bytes > 0) set_grad_bucket_bytes(o.bucket_bytes);
  struct PutBack {
    int64_t bytes;
    ~PutBack() { set_grad_bucket_bytes(bytes); }
  } put_back{buckets_were};
  if (o.precision) nn::mixed_precision(m.net, *o.precision);
  optim::AdamW opt(m.net.parameters(), {.lr = 0.01, .weight_decay = 0.1});
  Trained r;
  for (int s = 0; s < steps; ++s) {
    manual_seed(100 + uint64_t(s));
    Tensor x = randn({16, 8}, p, sbp::split(0)), y = randn({16, 6}, p, sbp::split(0));
    if (o.precision) y = to_dtype(y, o.precision->param_dtype);  // the target in the output's dtype
    double loss = 0;
    for (int k = 0; k < o.microbatches; ++k) {  // gradient accumulation: the mean over micro-batches
      const int64_t rows = 16 / o.microbatches;
      Tensor l = mul(mse_loss(m.net(narrow(x, 0, k * rows, rows)), narrow(y, 0, k * rows, rows)), 1.0 / o.microbatches);
      l.backward();
      loss += l.item<double>();
    }
    opt.step();
    if (s == steps - 1) r.memory = opt.memory();  // the last step's gradients, and the state
    opt.zero_grad();
    r.losses.push_back(loss);
  }
  for (const Tensor& t : m.net.parameters()) r.params.push_back(t.to_global(p, sbp::broadcast).to_vector<float>());
  return r;
}

using testing::sum_over_ranks;

void expect_close(const Trained& a, const Trained& b, const std::string& what) { testing::expect_same_training(a, b, what); }

TEST(FullyShard, TrainsAsTheReplicatedModel) {
  const Trained replicated = train({});
  expect_close(train({.shard = true}), replicated, "fully sharded");
  expect_close(train({.shard = true, .recompute = true}), replicated, "fully sharded + recomputation");
  expect_close(train({.shard = true, .microbatches = 2}), train({.microbatches = 2}), "fully sharded, 2 micro-batches");
}

TEST(FullyShard, EachRankHoldsItsShareOfParametersGradientsAndState) {
  const Trained replicated = train({}, 1), sharded = train({.shard = true}, 1);
  const auto& r = replicated.memory;
  const auto& s = sharded.memory;
  const int64_t whole = 4 * (12 * 9 + 6 * 13);  // bytes of the parameters
  EXPECT_EQ(r.parameters, whole);
  EXPECT_EQ(r.gradients, whole);
  EXPECT_EQ(r.state, 2 * whole);
  // The blocks cover each tensor once: over the ranks they add up to one copy.
  EXPECT_EQ(sum_over_ranks(s.parameters), whole);
  EXPECT_EQ(sum_over_ranks(s.gradients), whole);
  EXPECT_EQ(sum_over_ranks(s.state), 2 * whole);
  const int n = world();
  // No rank holds more than its blocks: 12 / n and 6 / n rows, rounded up.
  const int64_t most = 4 * ((12 + n - 1) / n * 9 + (6 + n - 1) / n * 13);
  EXPECT_LE(s.parameters, most);
  EXPECT_LE(s.gradients, most);
  EXPECT_LE(s.state, 2 * most);
}

TEST(FullyShard, GatheredCopiesAreReleasedAfterTheForwardAndGatheredAgainForTheBackward) {
  if (world() < 2) GTEST_SKIP() << "2+ ranks: one rank has nothing to shard";
  const Placement p = Placement::all();
  manual_seed(5);
  nn::Linear fc(64, 64), ref(64, 64);
  fc.to_global(p, sbp::broadcast);
  ref.to_global(p, sbp::broadcast);
  ref.load_state_dict(fc.state_dict());
  nn::fully_shard(fc);
  const Tensor x = randn({8, 64}, p, sbp::split(0));
  const int64_t before = memory_stats().current_bytes;
  const Tensor y = fc(x);
  // The graph holds the gathered weight (16 KiB) for the backward, but not its bytes.
  EXPECT_LT(memory_stats().current_bytes - before, 64 * 64 * 4);
  sum(mul(y, y)).backward();
  sum(mul(ref(x), ref(x))).backward();
  const std::vector<float> got = fc.weight.grad().to_vector<float>(), want = ref.weight.grad().to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "element " << i;
}

TEST(FullyShard, CheckpointsLoadBetweenShardedAndReplicatedModels) {
  const Placement p = Placement::all();
  Mlp sharded, replicated;
  sharded.net.to_global(p, sbp::broadcast);
  replicated.net.to_global(p, sbp::broadcast);
  nn::fully_shard(*sharded.fc1);
  nn::fully_shard(*sharded.fc2);
  {
    NoGradGuard g;
    for (Tensor& t : sharded.net.parameters()) copy_(t, randn(t.shape(), p, t.sbp()));
  }
  // Sharded -> replicated and back, through a state dict (what checkpoints carry).
  replicated.net.load_state_dict(sharded.net.state_dict());
  Mlp again;
  again.net.to_global(p, sbp::broadcast);
  nn::fully_shard(*again.fc1);
  nn::fully_shard(*again.fc2);
  again.net.load_state_dict(replicated.net.state_dict());
  const auto a = sharded.net.parameters(), b = replicated.net.parameters(), c = again.net.parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].sbp(), NdSbp(sbp::broadcast));
    EXPECT_EQ(a[i].to_global(p, sbp::broadcast).to_vector<float>(), b[i].to_vector<float>()) << "tensor " << i;
    EXPECT_EQ(c[i].to_global(p, sbp::broadcast).to_vector<float>(), b[i].to_vector<float>()) << "tensor " << i;
  }
}

// Prefetch changes when the gathers run, not what they gather: the same bits at every depth, with
// recomputation and gradient accumulation too; likewise keeping the gathered copies for the backward.
void expect_identical(const Trained& a, const Trained& b, const std::string& what) {
  EXPECT_EQ(a.losses, b.losses) << what;
  EXPECT_EQ(a.params, b.params) << what;
}

TEST(FullyShard, PrefetchAtAnyDepthAndKeptCopiesTrainBitIdentically) {
  for (const Options& base : {Options{.shard = true}, Options{.shard = true, .recompute = true},
                              Options{.shard = true, .microbatches = 2}}) {
    const Trained plain = train(base);
    for (int depth : {1, 2, 7}) {  // 7: beyond the last module
      Options o = base;
      o.prefetch = depth;
      expect_identical(train(o), plain, "prefetch depth " + std::to_string(depth));
    }
    Options kept = base;
    kept.reshard_after_forward = false;
    expect_identical(train(kept), plain, "reshard_after_forward = false");
  }
}

// The extremes of the two knobs together: every gradient its own bucket or all in one, prefetch
// off or past the end, with one module sharded and one replicated (its gradient bucketed).
TEST(FullyShard, BucketAndPrefetchExtremesTrainAsTheReplicatedModel) {
  const Trained replicated = train({});
  for (int64_t bytes : {int64_t(1), int64_t(1) << 30})
    for (int depth : {0, 7}) {
      const std::string what = "bucket " + std::to_string(bytes) + " B, prefetch " + std::to_string(depth);
      expect_close(train({.shard = true, .prefetch = depth, .shard_fc2 = false, .bucket_bytes = bytes}), replicated, what);
      expect_close(train({.shard = true, .prefetch = depth, .bucket_bytes = bytes}), replicated, what + ", both sharded");
    }
}

// A chain of four sharded layers with depth 2: calling the first starts the gathers of the next
// two, each call takes its own and starts one more; a forward that fails drops what it started.
TEST(FullyShard, PrefetchStartsTheNextModulesGathersAndTheirCallsTakeThem) {
  if (world() < 2) GTEST_SKIP() << "2+ ranks: one rank has nothing to shard";
  const Placement p = Placement::all();
  manual_seed(3);
  std::vector<std::shared_ptr<nn::Linear>> layers;
  std::vector<nn::Module*> chain;
  for (int i = 0; i < 4; ++i) {
    layers.push_back(std::make_shared<nn::Linear>(16, 16));
    layers.back()->to_global(p, sbp::broadcast);
    nn::fully_shard(*layers.back());
    chain.push_back(layers.back().get());
  }
  nn::set_prefetch(chain, 2);
  auto started = [&](int i) { return layers[size_t(i)]->prefetch().started.size(); };
  Tensor h = randn({4, 16}, p, sbp::split(0));
  h = (*layers[0])(h);
  EXPECT_EQ(started(1), 2u);  // weight and bias
  EXPECT_EQ(started(2), 2u);
  EXPECT_EQ(started(3), 0u);
  h = (*layers[1])(h);
  EXPECT_EQ(started(1), 0u);
  EXPECT_EQ(started(3), 2u);
  h = (*layers[3])((*layers[2])(h));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(started(i), 0u) << "layer " << i;
  sum(h).backward();
  // A forward that fails in layer 0 (a wrong width) leaves nothing started for the next layers.
  EXPECT_THAT(error_of([&] { (*layers[0])(randn({4, 5}, p, sbp::split(0))); }), HasSubstr("[Linear] input"));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(started(i), 0u) << "layer " << i << " after a failed forward";
  EXPECT_THAT(error_of([&] { nn::set_prefetch(chain, -1); }), HasSubstr("[fully_shard] prefetch depth -1"));
}

// The backward's prefetch, seen in its memory: with depth 0 one layer's gathered weight is whole
// at a time (beside its whole gradient); with depth 3 the first gather the backward needs starts the other three layers'
// too, so their weights are whole together. The gradients agree to the bit.
TEST(FullyShard, TheBackwardStartsTheNextModulesGathersAhead) {
  if (world() < 2) GTEST_SKIP() << "2+ ranks: one rank has nothing to shard";
  const Placement p = Placement::all();
  const int64_t weight = 64 * 64 * 4;
  auto backward = [&](int depth, int64_t& peak) {
    manual_seed(9);
    std::vector<std::shared_ptr<nn::Linear>> layers;
    std::vector<nn::Module*> chain;
    for (int i = 0; i < 4; ++i) {
      layers.push_back(std::make_shared<nn::Linear>(64, 64, /*bias=*/false));
      layers.back()->to_global(p, sbp::broadcast);
      nn::fully_shard(*layers.back());
      chain.push_back(layers.back().get());
    }
    nn::set_prefetch(chain, depth);
    Tensor h = randn({2, 64}, p, sbp::split(0));
    for (auto& l : layers) h = (*l)(h);
    const Tensor loss = sum(h);
    const int64_t before = memory_stats().current_bytes;
    reset_peak_memory();
    loss.backward();
    peak = memory_stats().peak_bytes - before;
    std::vector<std::vector<float>> grads;
    for (auto& l : layers) grads.push_back(l->weight.grad().to_global(p, sbp::broadcast).to_vector<float>());
    return grads;
  };
  int64_t peak0 = 0, peak3 = 0;
  const auto g0 = backward(0, peak0), g3 = backward(3, peak3);
  EXPECT_EQ(g0, g3);
  EXPECT_GE(peak3, 4 * weight) << "depth 3: all four layers' weights whole together";
  EXPECT_GE(peak3 - peak0, weight) << "depth 0 holds fewer of them at once";
}

TEST(FullyShard, ALocalModuleIsAnError) {
  nn::Linear fc(3, 3);
  EXPECT_THAT(error_of([&] { nn::fully_shard(fc); }), HasSubstr("[fully_shard] parameter weight"));
}

// ---- mixed precision ----

const nn::MixedPrecision kBf16{.param_dtype = kBFloat16, .reduce_dtype = kFloat32};

TEST(MixedPrecision, TrainsCloseToFloat32WithFloat32MasterWeights) {
  const Trained full = train({});
  const Trained mixed = train({.precision = kBf16});
  // bfloat16 keeps 8 bits: five AdamW steps land within 2 % of the loss; a weight within 0.05
  // (AdamW moves each by up to lr = 0.01 a step whatever the gradient's size, so a small gradient
  // whose sign rounding flips moves it the other way).
  testing::expect_same_training(mixed, full, "bfloat16 compute", 2e-2, 5e-2);
  // And it is not float32 in disguise: the losses differ.
  EXPECT_NE(mixed.losses.back(), full.losses.back());
}

TEST(MixedPrecision, ParametersGradientsAndStateStayFloat32WhileTheForwardComputesInBfloat16) {
  Mlp m;
  const Placement p = Placement::all();
  m.net.to_global(p, sbp::broadcast);
  nn::mixed_precision(m.net, kBf16);
  optim::AdamW opt(m.net.parameters(), {.lr = 0.01});
  const Tensor out = m.net(randn({16, 8}, p, sbp::split(0)));  // a float32 input, cast by the first layer
  EXPECT_EQ(out.dtype(), kBFloat16);
  sum(to_dtype(out, kFloat32)).backward();
  opt.step();
  for (const auto& [name, w] : m.net.named_parameters()) {
    EXPECT_EQ(w.dtype(), kFloat32) << name;
    ASSERT_TRUE(w.grad().defined()) << name;
    EXPECT_EQ(w.grad().dtype(), kFloat32) << name;
  }
  EXPECT_EQ(opt.memory().state, 2 * opt.memory().parameters);  // AdamW's two float32 moments
}

TEST(MixedPrecision, WithFullyShardTrainsAsTheReplicatedMixedRun) {
  // Gathered (float32), then cast: the same bfloat16 values as without sharding; the gradient's
  // float32 sum may be taken in another order (4 ranks), which can move a bfloat16 result by one
  // step (the loss, itself bfloat16, by 2^-7 near 1.2) and AdamW's update of a tiny gradient.
  const Trained replicated = train({.precision = kBf16});
  testing::expect_same_training(train({.shard = true, .precision = kBf16}), replicated, "fully sharded bfloat16", 1e-2, 2e-2);
  testing::expect_same_training(train({.shard = true, .recompute = true, .precision = kBf16}), replicated,
                                "fully sharded + recomputed bfloat16", 1e-2, 2e-2);
}

// Whether every element of the float32 tensor `t` is a bfloat16 value (its low 16 bits zero).
bool bfloat16_exact(const Tensor& t) {
  for (float v : t.to_global(t.placement(), sbp::broadcast).to_vector<float>())
    if ((std::bit_cast<uint32_t>(v) & 0xffffu) != 0) return false;
  return true;
}

TEST(MixedPrecision, GradientsAreReducedInFloat32UnlessBfloat16IsAskedFor) {
  if (world() < 2) GTEST_SKIP() << "2+ ranks: a reduction across ranks";
  for (DType reduce : {kFloat32, kBFloat16}) {
    Mlp m;
    const Placement p = Placement::all();
    m.net.to_global(p, sbp::broadcast);
    nn::mixed_precision(m.net, {.param_dtype = kBFloat16, .reduce_dtype = reduce});
    manual_seed(3);
    sum(to_dtype(m.net(randn({16, 8}, p, sbp::split(0))), kFloat32)).backward();
    resolve_pending_grads(m.net.parameters());
    // Each rank's gradient is widened from bfloat16 products; their float32 sum is not, in
    // general, a bfloat16 value; summed in bfloat16 it is.
    const Tensor g = m.fc1->weight.grad();
    EXPECT_EQ(g.dtype(), kFloat32);
    EXPECT_EQ(bfloat16_exact(g), reduce == kBFloat16) << "reduced in " << dtype_name(reduce);
  }
  set_grad_reduce_dtype(std::nullopt);
}

TEST(MixedPrecision, MistakesAreErrorsNamingTheirCause) {
  Mlp m;
  m.net.to(kFloat64);
  EXPECT_THAT(error_of([&] { nn::mixed_precision(m.net, kBf16); }),
              HasSubstr("[mixed_precision] parameter 0.weight is float64: the master weights must be float32"));
  Mlp n;
  EXPECT_THAT(error_of([&] { nn::mixed_precision(n.net, {.param_dtype = kInt64}); }),
              HasSubstr("[mixed_precision] dtypes are float32, bfloat16 or float16, got int64"));
  // An op without a bfloat16 kernel names itself and the way out.
  EXPECT_THAT(error_of([] { arange(0.0, 4.0, 1.0, kBFloat16); }),
              HasSubstr("[arange] has no bfloat16 kernel here (float32, float64 and int64 only): cast with to(float32)"));
}

// Last in the file: the diverged collective leaves the ranks' communicator unusable.
TEST(FullyShardLast, ARankThatSkipsAModuleFailsWithTheFingerprintsMessageNotAHang) {
  // The fingerprints alone (the suite runs with GLOBE_CHECK_CONSISTENCY=1, which stops ranks one op
  // earlier): on 2 ranks, rank 0's all-gather of fc2's weight meets rank 1's next collective.
  // On more ranks, a rank that sits in a collective of another kind than its neighbours' is only
  // freed by GLOBE_TIMEOUT (docs/design.md §13.1, "Not covered"), so this runs on 2.
  if (world() != 2) GTEST_SKIP() << "2 ranks";
  Mlp m;
  const Placement p = Placement::all();
  m.net.to_global(p, sbp::broadcast);
  nn::fully_shard(*m.fc1);
  nn::fully_shard(*m.fc2);
  Tensor x = randn({8, 8}, p, sbp::split(0));
  dist::set_consistency_checks(false);
  const std::string e = error_of([&] {
    Tensor h = relu((*m.fc1)(x));
    Tensor y = me() == 0 ? (*m.fc2)(h) : narrow(h, 1, 0, 6);
    sum(y).item<float>();
  });
  EXPECT_THAT(e, HasSubstr("[consistency] ranks diverged at global op"));
  EXPECT_THAT(e, HasSubstr("seen by the fingerprint of"));
}

}  // namespace
}  // namespace globe
