// Consistency mode (docs/design.md §9) with ranks that diverge: different shapes, different ops, different
// boxing targets, and a rank that skips a global op. Every case must end in a globe::Error on the
// ranks that ran the op — never a hang — and name the ranks involved. Runs under globe-launch with
// 2 ranks (with 1 process every case skips); CTest sets GLOBE_TIMEOUT=5.
//
// Order matters: the divergence cases leave every communicator usable (each checks that), so they
// run first; the skipped-op case leaves its placement's check channel with an unmatched message,
// so it runs last and on a placement ([1, 0]) no other case uses.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <thread>

#include "globe/globe.h"

namespace globe {
namespace {

// Run directly (not by CTest), the timeout would be 300 s; keep it short unless set.
const bool kTimeoutDefaulted = [] { return setenv("GLOBE_TIMEOUT", "5", /*overwrite=*/0) == 0; }();

int me() { return dist::world_rank(); }
int world() { return dist::world_size(); }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Runs fn, which must throw globe::Error; returns the message and how long it took.
std::pair<std::string, double> error_of(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  try {
    fn();
  } catch (const Error& e) {
    std::cout << "error after " << seconds_since(start) << " s: " << e.what() << std::endl;  // for the log
    return {e.what(), seconds_since(start)};
  }
  ADD_FAILURE() << "rank " << me() << ": did not throw";
  return {"", seconds_since(start)};
}

class ConsistencyMode : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)kTimeoutDefaulted;
    if (world() != 2) GTEST_SKIP() << "runs with exactly 2 ranks";
    ASSERT_LE(dist::timeout_seconds(), 30.0) << "set GLOBE_TIMEOUT (CTest sets 5)";
    dist::set_consistency_checks(true);
  }
  // After a divergence error the ranks must still be able to run a correct global op together.
  void expect_usable(const Placement& p) {
    manual_seed(3);
    Tensor x = arange(5, p, sbp::split(0), kFloat64);
    Tensor y = add(x, x).to_global(sbp::broadcast);
    EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 2, 4, 6, 8})) << "communicators unusable";
  }
  const int other = 1 - me();
};

TEST_F(ConsistencyMode, DifferentShapesNameBothRanksOps) {
  const Placement p = Placement::all();
  const auto [msg, took] = error_of([&] {
    // Rank 0 adds [4, 3] tensors, rank 1 [6, 3] ones.
    Tensor x = randn({me() == 0 ? 4 : 6, 3}, p, sbp::split(0));
    Tensor y = add(x, x);
  });
  EXPECT_EQ(msg.rfind("[consistency]", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "this rank (" + std::to_string(me()) + ")")) << msg;
  EXPECT_TRUE(contains(msg, "rank " + std::to_string(other) + " runs")) << msg;
  // Both ranks' ops, with their shapes.
  EXPECT_TRUE(contains(msg, "add float32[4, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "add float32[6, 3]")) << msg;
  EXPECT_LT(took, 3.0) << "a divergence is found by the exchange, not by the timeout";
  expect_usable(p);
}

TEST_F(ConsistencyMode, DifferentOpsNameBothOps) {
  const Placement p = Placement::all();
  const auto [msg, took] = error_of([&] {
    Tensor x = randn({4, 3}, p, sbp::split(0));
    // Rank 1 skips the add and goes on with the mul that follows it on rank 0.
    Tensor y = me() == 0 ? add(x, x) : mul(x, x);
    if (me() == 0) y = mul(y, y);
  });
  EXPECT_EQ(msg.rfind("[consistency]", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "(add float32[4, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "(mul float32[4, 3]")) << msg;
  EXPECT_TRUE(contains(msg, "rank " + std::to_string(other))) << msg;
  EXPECT_LT(took, 3.0);
  expect_usable(p);
}

TEST_F(ConsistencyMode, DifferentBoxingTargets) {
  const Placement p = Placement::all();
  const auto [msg, took] = error_of([&] {
    Tensor x = randn({4, 3}, p, sbp::split(0));
    Tensor y = x.to_global(me() == 0 ? NdSbp(sbp::broadcast) : NdSbp(sbp::split(1)));
  });
  EXPECT_EQ(msg.rfind("[consistency]", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "to_global")) << msg;
  EXPECT_TRUE(contains(msg, "(B)")) << msg;
  EXPECT_TRUE(contains(msg, "(S(1))")) << msg;
  EXPECT_LT(took, 3.0);
  expect_usable(p);
}

TEST_F(ConsistencyMode, DifferentPlacements) {
  const auto [msg, took] = error_of([&] {
    // Rank 0 works on [0, 1], rank 1 on [1, 0]: the same ranks, a different mesh order.
    const Placement p = me() == 0 ? placement("cpu", {0, 1}) : placement("cpu", {1, 0});
    Tensor x = randn({4, 3}, p, sbp::split(0));
    Tensor y = x.to_global(Placement::all(), sbp::broadcast);
  });
  EXPECT_EQ(msg.rfind("[consistency]", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "placement(cpu, [0, 1])")) << msg;
  EXPECT_TRUE(contains(msg, "placement(cpu, [1, 0])")) << msg;
  EXPECT_LT(took, 3.0);
  expect_usable(Placement::all());
}

// Must stay the last case of this binary (see the top of the file).
TEST_F(ConsistencyMode, ZzRankThatSkipsAnOpIsNamedWithinTheTimeout) {
  const Placement p = placement("cpu", {1, 0});
  expect_usable(p);  // both ranks have made p's communicator; rank 1 now skips an op on it
  const double timeout = dist::timeout_seconds();
  if (me() == 0) {
    const auto [msg, took] = error_of([&] {
      Tensor x = randn({4, 3}, p, sbp::split(0));
      Tensor y = add(x, x);
    });
    EXPECT_EQ(msg.rfind("[consistency]", 0), 0u) << msg;
    EXPECT_TRUE(contains(msg, "add float32[4, 3]")) << msg;
    EXPECT_TRUE(contains(msg, "ranks [1] did not arrive")) << msg;
    EXPECT_GE(took, timeout - 0.5) << msg;
    EXPECT_LT(took, timeout + 3.0) << "the error came long after the timeout: " << msg;
  } else {
    // Skip the op; wait until rank 0 has given up (its barrier below must not time out either).
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout + 1.0));
  }
  // The world's communicator is untouched: both ranks meet again.
  dist::group({0, 1}).barrier();
  expect_usable(Placement::all());
}

}  // namespace
}  // namespace globe
