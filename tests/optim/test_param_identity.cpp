// Parameter identity: an optimizer made before Module::to_global / distribute / to(dtype) keeps
// training the model (the parameters change in place), its state follows each parameter's new
// layout, and one whose tensors were replaced anyway says so at step() instead of doing nothing.
// 1, 2 and 4 ranks: every run must give the single-process numbers.
#include "test_util.h"

namespace globe {
namespace {

using testing::error_of;

struct Net : nn::Module {
  nn::Linear fc1{6, 8}, fc2{8, 3};
  Net() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
};

// Trains `steps` Adam steps on fixed data; `move_after` steps in, the model moves to the layout
// (-1: it is laid out before the optimizer is made). Returns every loss and the final fc1.weight.
struct Trained {
  std::vector<float> losses;
  std::vector<float> weight;
};
Trained train(int steps, int move_after, bool split_weights) {
  manual_seed(11);
  Net net;
  const Placement p = Placement::all();
  auto lay_out = [&] {
    if (split_weights) {
      net.distribute(p, {{"fc1.weight", sbp::split(0)}, {"fc2.weight", sbp::split(1)}}, sbp::broadcast);
    } else {
      net.to_global(p, sbp::broadcast);
    }
  };
  if (move_after < 0) lay_out();
  optim::Adam adam(net.parameters(), {.lr = 0.05});
  const Tensor x_full = randn({12, 6}), y_full = randn({12, 3});
  Trained run;
  for (int s = 0; s < steps; ++s) {
    if (s == move_after) lay_out();
    const bool global = net.fc1.weight.is_global();
    const Tensor x = global ? from_full(x_full, p, sbp::split(0)) : x_full;
    const Tensor y = global ? from_full(y_full, p, sbp::split(0)) : y_full;
    adam.zero_grad();
    Tensor loss = mse_loss(net.forward(x), y);
    loss.backward();
    adam.step();
    run.losses.push_back(loss.item<float>());
  }
  run.weight = net.fc1.weight.to_vector<float>();
  return run;
}

void expect_same(const Trained& a, const Trained& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) EXPECT_NEAR(a.losses[i], b.losses[i], 1e-5) << what << " step " << i;
  ASSERT_EQ(a.weight.size(), b.weight.size());
  for (size_t i = 0; i < a.weight.size(); ++i) EXPECT_NEAR(a.weight[i], b.weight[i], 1e-5) << what << " weight " << i;
}

TEST(ParamIdentity, OptimizerMadeBeforeToGlobalTrains) {
  const Trained reference = train(8, -1, false);
  const Trained before = train(8, 0, false);  // the optimizer holds the local tensors; then to_global
  EXPECT_LT(before.losses.back(), before.losses.front() * 0.8) << "the loss must go down";
  expect_same(before, reference, "to_global after the optimizer");
}

TEST(ParamIdentity, StateFollowsAMoveMidTraining) {
  // Adam's moments are made on the local parameters, then the weights are split: the moments must
  // follow, so the run equals one laid out from the start.
  const Trained reference = train(8, -1, true);
  const Trained moved = train(8, 3, true);
  expect_same(moved, reference, "distribute after 3 steps");
}

TEST(ParamIdentity, ToDtypeKeepsTheParameters) {
  manual_seed(5);
  nn::Linear fc(4, 2);
  optim::SGD sgd(fc.parameters(), {.lr = 0.1});
  const Tensor before = fc.weight;
  fc.to(kFloat64);
  EXPECT_TRUE(fc.weight.same(before));
  EXPECT_EQ(before.dtype(), kFloat64);  // the optimizer's handle sees the change
  Tensor loss = sum(fc(randn({3, 4}, kFloat64)));
  loss.backward();
  sgd.step();
  EXPECT_EQ(sgd.params()[0].dtype(), kFloat64);
  // A dtype a gradient cannot have is refused, and nothing changes.
  const std::string msg = error_of([&] { fc.to(kInt64); });
  EXPECT_NE(msg.find("[to] 'weight' requires grad and cannot become int64"), std::string::npos) << msg;
  EXPECT_EQ(fc.weight.dtype(), kFloat64);
  EXPECT_EQ(fc.bias.dtype(), kFloat64);
}

TEST(ParamIdentity, ReplacedParametersAreAnErrorAtStep) {
  manual_seed(5);
  nn::Linear fc(4, 2);
  optim::SGD sgd(fc.parameters(), {.lr = 0.1});
  // Assignment makes new tensors the optimizer does not hold.
  fc.weight = randn({2, 4}).set_requires_grad(true);
  fc.bias = zeros({2}).set_requires_grad(true);
  sum(fc(randn({3, 4}))).backward();
  const std::string msg = error_of([&] { sgd.step(); });
  EXPECT_NE(msg.find("[SGD] step(): parameter 0 (float32[2, 4]) is held by this optimizer alone"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("replaced (by assignment) after the optimizer was made"), std::string::npos) << msg;
}

}  // namespace
}  // namespace globe
