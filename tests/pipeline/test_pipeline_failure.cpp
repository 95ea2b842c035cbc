// A stage that throws at micro-batch 3 of a two-stage pipeline, under globe-launch: the job ends
// within seconds, the launcher names rank 0, and rank 1 says what it was waiting for.
#include <gtest/gtest.h>

#include "launcher_process.h"

namespace {

TEST(PipelineFailure, AThrowingStageStopsEveryRankAndTheWaiterSaysForWhat) {
  const launch_test::RunResult r =
      launch_test::run_launcher({"--nproc_per_node", "2", launch_test::bin_dir() + "/pipeline_fail_fixture"}, {}, 60);
  const std::string all = r.out + r.err;
  EXPECT_FALSE(r.hung) << all;
  EXPECT_NE(r.exit_code, 0) << all;
  EXPECT_LT(r.seconds, 10) << all;
  EXPECT_NE(all.find("stage 0 fails at micro-batch 3"), std::string::npos) << all;
  EXPECT_NE(all.find("rank 0"), std::string::npos) << "the launcher names the failing rank\n" << all;
  EXPECT_NE(all.find("rank 1 was stopped while waiting for forward, stage 0 -> 1, micro-batch 3"), std::string::npos)
      << all;
  EXPECT_EQ(all.find("finished without the failure"), std::string::npos) << all;
}

}  // namespace
