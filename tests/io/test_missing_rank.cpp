// A rank that never calls a collective save is reported, not waited for: the ranks that did call
// it throw an error naming the op and the missing rank once GLOBE_TIMEOUT (3 s here) passes. Its
// own binary: after a timeout the ranks' consistency-check sequence is out of step by design, so
// nothing collective may follow but the final barrier.
#include <chrono>
#include <thread>

#include "io_test_util.h"

namespace globe {
namespace {

TEST(MissingRank, SaveWithoutOneRankIsAnError) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs two ranks";
  ASSERT_LE(dist::timeout_seconds(), 10) << "run with GLOBE_TIMEOUT=3";
  testing::SharedTempDir dir;
  StateDict sd;
  sd.set("x", ones({4}, Placement::all(), sbp::split(0)));
  const auto start = std::chrono::steady_clock::now();
  if (dist::world_rank() == 1) {
    // Forgets the save (e.g. it sits inside `if (rank != 1)`) and does other work meanwhile.
    std::this_thread::sleep_for(std::chrono::duration<double>(dist::timeout_seconds() + 2));
  } else {
    testing::expect_error([&] { save(sd, dir / "x.safetensors"); },
                          {"[consistency]", "save to rank 0", "ranks [1] did not arrive"},
                          "missing rank");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              dist::timeout_seconds() + 5);
    EXPECT_FALSE(testing::fs::exists(dir / "x.safetensors"));
  }
}

}  // namespace
}  // namespace globe
