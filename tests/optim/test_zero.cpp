// ZeRO as layouts (Optimizer::set_zero_stage, docs/design.md §15): data-parallel training with the
// optimizer state (stage 1) and the gradients too (stage 2) split over the data-parallel ranks
// gives the replicated run's losses and parameters, each rank holds 1/n of the state, and a
// checkpoint of the sharded state loads into an optimizer without ZeRO (and back) and continues
// the same run. 1 process (nothing to split), 2 and 4 ranks; a 2 x 2 data x tensor mesh on 4.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cmath>
#include <filesystem>

#include "globe/globe.h"
#include "test_util.h"

namespace globe {
namespace {

int world() { return dist::world_size(); }

using testing::sum_over_ranks;

struct Trained : testing::TrainedValues {
  int64_t state_bytes = 0;
};

std::vector<std::vector<float>> values(nn::Module& m) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : m.parameters()) {
    Tensor whole = p.is_global() ? p.to_global(Placement::all(), replicated(1)) : p;
    out.push_back(whole.to_vector<float>());
  }
  return out;
}

// An MLP whose second layer has 6 rows: with 4 ranks its blocks are uneven (2, 2, 1, 1).
std::shared_ptr<nn::Sequential> mlp() {
  manual_seed(7);
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(8, 12), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::Linear>(12, 6));
}

std::unique_ptr<optim::Optimizer> make_opt(nn::Module& m, bool adam) {
  if (adam) return std::make_unique<optim::AdamW>(m.parameters(), optim::AdamOptions{.lr = 0.01, .weight_decay = 0.1});
  return std::make_unique<optim::SGD>(m.parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
}

// `steps` data-parallel steps (parameters broadcast, the batch split) at ZeRO `stage`.
void train(nn::Sequential& model, optim::Optimizer& opt, int first, int steps, std::vector<double>& losses) {
  const Placement p = Placement::all();
  for (int i = first; i < first + steps; ++i) {
    manual_seed(100 + i);
    Tensor x = randn({16, 8}, p, sbp::split(0)), y = randn({16, 6}, p, sbp::split(0));
    opt.zero_grad();
    Tensor loss = mse_loss(model(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
}

Trained run(int stage, bool adam, int steps = 6) {
  auto model = mlp();
  model->to_global(Placement::all(), sbp::broadcast);
  auto opt = make_opt(*model, adam);
  opt->set_zero_stage(stage);
  Trained r;
  train(*model, *opt, 0, steps, r.losses);
  r.params = values(*model);
  r.state_bytes = opt->state_bytes();
  return r;
}

void expect_same(const Trained& a, const Trained& b, const std::string& what) { testing::expect_same_training(a, b, what); }

TEST(Zero, StagesGiveTheReplicatedLossesAndSplitTheState) {
  for (bool adam : {true, false}) {
    const Trained r0 = run(0, adam), r1 = run(1, adam), r2 = run(2, adam);
    expect_same(r0, r1, adam ? "AdamW stage 1" : "SGD stage 1");
    expect_same(r0, r2, adam ? "AdamW stage 2" : "SGD stage 2");
    // The state is split, not copied: the ranks' blocks add up to one replicated copy, and no
    // rank holds more than its share (the largest blocks: 12 / n rows, 6 / n rounded up).
    const int n = world();
    const int64_t per_tensor_max = (12 + n - 1) / n * (8 + 1) + (6 + n - 1) / n * (12 + 1);  // floats
    const int64_t copies = adam ? 2 : 1;
    EXPECT_EQ(r0.state_bytes, copies * 4 * (12 * 9 + 6 * 13));
    EXPECT_EQ(sum_over_ranks(r1.state_bytes), r0.state_bytes) << "the blocks cover the state once";
    EXPECT_LE(r1.state_bytes, copies * 4 * per_tensor_max);
    EXPECT_EQ(r2.state_bytes, r1.state_bytes);
    if (n == 4) {
      EXPECT_LE(r1.state_bytes * 3, r0.state_bytes) << "4 ranks: about a quarter each";
    }
  }
}

TEST(Zero, ShardedStateCheckpointLoadsWithAndWithoutZero) {
  // One directory per job: the bucket-size variants of this test run beside it (CTest -j).
  const char* bucket = std::getenv("GLOBE_BUCKET_MB");
  const std::string dir = "/tmp/globe-test-zero-" + std::to_string(world()) + (bucket ? std::string("-b") + bucket : "");
  if (dist::world_rank() == 0) std::filesystem::remove_all(dir);
  // The uninterrupted run: 6 steps at stage 1.
  Trained whole;
  {
    auto model = mlp();
    model->to_global(Placement::all(), sbp::broadcast);
    auto opt = make_opt(*model, true);
    opt->set_zero_stage(1);
    train(*model, *opt, 0, 6, whole.losses);
  }
  for (int resume_stage : {0, 2}) {
    std::vector<double> losses;
    auto model = mlp();
    model->to_global(Placement::all(), sbp::broadcast);
    auto opt = make_opt(*model, true);
    opt->set_zero_stage(1);
    train(*model, *opt, 0, 3, losses);
    StateDict state = model->state_dict();
    for (const auto& [k, v] : opt->state_dict()) state.set("optim." + k, v);
    save_sharded(state, dir + "-" + std::to_string(resume_stage));
    // A fresh model and optimizer at another stage load it and go on.
    auto model2 = mlp();
    model2->to_global(Placement::all(), sbp::broadcast);
    auto opt2 = make_opt(*model2, true);
    opt2->set_zero_stage(resume_stage);
    StateDict loaded = load_sharded(dir + "-" + std::to_string(resume_stage));
    StateDict model_part = loaded.filter([](const std::string& k) { return k.rfind("optim.", 0) != 0; });
    StateDict optim_part;
    for (const auto& [k, v] : loaded)
      if (k.rfind("optim.", 0) == 0) optim_part.set(k.substr(6), v);
    model2->load_state_dict(model_part);
    opt2->load_state_dict(optim_part);
    train(*model2, *opt2, 3, 3, losses);
    ASSERT_EQ(losses.size(), whole.losses.size());
    for (size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], whole.losses[i], 1e-6 * std::abs(whole.losses[i])) << "resumed at stage " << resume_stage
                                                                                  << ", step " << i;
  }
}

// Data x tensor parallelism on a 2 x 2 mesh: a column-parallel weight is split over the tensor
// axis already; ZeRO splits it (and the replicated bias) over the data axis as well — its state
// (stages 1, 2) or the parameter itself (stage 3).
TEST(Zero, DataTimesTensorMesh) {
  if (world() != 4) GTEST_SKIP() << "4 ranks";
  const Placement mesh = mesh_placement("cpu", {2, 2});
  auto run_mesh = [&](int stage) {
    manual_seed(11);
    nn::Linear fc(8, 12);
    // The weight split over the tensor axis (rows), replicated over the data axis.
    fc.distribute(mesh, {{"weight", NdSbp({sbp::broadcast, sbp::split(0)})}, {"bias", NdSbp({sbp::broadcast, sbp::split(0)})}},
                  NdSbp({sbp::broadcast, sbp::broadcast}));
    // Stage 3 (nn::fully_shard): the parameters themselves split over the data axis too.
    if (stage == 3) nn::fully_shard(fc);
    if (stage == 3) {
      EXPECT_EQ(fc.weight.sbp(), NdSbp({sbp::split(0), sbp::split(0)}));
    }
    optim::AdamW opt(fc.parameters(), {.lr = 0.01});
    opt.set_zero_stage(std::min(stage, 2));
    std::vector<double> losses;
    for (int i = 0; i < 4; ++i) {
      manual_seed(200 + i);
      Tensor x = randn({8, 8}, mesh, {sbp::split(0), sbp::broadcast});
      Tensor y = randn({8, 12}, mesh, {sbp::split(0), sbp::broadcast});
      opt.zero_grad();
      Tensor loss = mse_loss(fc(x), y);
      loss.backward();
      opt.step();
      losses.push_back(loss.item<double>());
    }
    return std::make_pair(losses, opt.state_bytes());
  };
  const auto [l0, b0] = run_mesh(0);
  const auto [l1, b1] = run_mesh(1);
  const auto [l2, b2] = run_mesh(2);
  const auto [l3, b3] = run_mesh(3);
  for (size_t i = 0; i < l0.size(); ++i) {
    EXPECT_NEAR(l1[i], l0[i], 1e-6 * l0[i]) << "stage 1, step " << i;
    EXPECT_NEAR(l2[i], l0[i], 1e-6 * l0[i]) << "stage 2, step " << i;
    EXPECT_NEAR(l3[i], l0[i], 1e-6 * l0[i]) << "stage 3, step " << i;
  }
  EXPECT_EQ(b1 * 2, b0) << "each rank holds half of its tensor-parallel block's state";
  EXPECT_EQ(b2, b1);
  EXPECT_EQ(b3, b1);
}

TEST(Zero, BadStageIsAnError) {
  auto model = mlp();
  auto opt = make_opt(*model, true);
  try {
    opt->set_zero_stage(3);
    FAIL() << "stage 3 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZeRO stage 3 is not supported"), std::string::npos) << e.what();
  }
  EXPECT_EQ(opt->zero_stage(), 0) << "the stage is unchanged";
}

}  // namespace
}  // namespace globe
