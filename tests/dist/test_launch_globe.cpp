// globe-launch with a real Globe program (docs/design.md §7): a rank that throws a globe::Error in the
// middle of training, uncaught, stops the whole job within seconds; the launcher names that rank
// and how it died, exits non-zero, and leaves no rank process behind — even though the other
// ranks were blocked in a collective waiting for it (their own deadline is 300 s).
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <tuple>

#include "launcher_process.h"

namespace launch_test {
namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// (ranks, failing rank, step at which it throws, where: "" before the step, "after_backward" with
// its gradient reductions in flight)
class GlobeRankThrows : public ::testing::TestWithParam<std::tuple<int, int, int, const char*>> {};

TEST_P(GlobeRankThrows, JobStopsAndTheRankIsNamed) {
  const auto [n, failing, step, where] = GetParam();
  TempDir pid_dir;
  std::vector<std::string> args = {"--nproc_per_node", std::to_string(n), bin_dir() + "/dist_launch_fixture",
                                   pid_dir.path(), std::to_string(failing), std::to_string(step)};
  const bool in_flight = std::string(where) == "after_backward";
  if (in_flight) args.push_back(where);
  // GLOBE_TIMEOUT unset: the surviving ranks would wait 300 s; only the launcher can stop them.
  const RunResult r = run_launcher(args, {"GLOBE_TIMEOUT=300", "GLOBE_CHECK_CONSISTENCY=1"}, /*deadline_s=*/60);
  const std::string who = "[rank" + std::to_string(failing) + "] ";
  EXPECT_FALSE(r.hung) << describe(r);
  EXPECT_NE(r.exit_code, 0) << describe(r);
  // An uncaught exception ends in std::terminate -> abort.
  EXPECT_EQ(r.exit_code, 128 + SIGABRT) << describe(r);
  EXPECT_TRUE(contains(r.err, "globe-launch: rank " + std::to_string(failing) + " failed first: signal 6 (SIGABRT)"))
      << describe(r);
  // The error itself reaches the user, prefixed with the rank that raised it.
  EXPECT_TRUE(contains(r.err, "[fixture] rank " + std::to_string(failing) + " gives up at step " +
                                  std::to_string(step)))
      << describe(r);
  // Four parameters, a bucket each: all four reductions were started and none read.
  if (in_flight) EXPECT_TRUE(contains(r.err, "with 4 gradient reductions in flight")) << describe(r);
  EXPECT_TRUE(contains(r.err, who)) << describe(r);
  // It failed mid-training: earlier steps ran on every rank.
  for (int rank = 0; rank < n; ++rank)
    EXPECT_TRUE(contains(r.out, "[rank" + std::to_string(rank) + "] step " + std::to_string(step - 1) + " loss"))
        << describe(r);
  EXPECT_FALSE(contains(r.out, who + "step " + std::to_string(step) + " loss")) << describe(r);
  EXPECT_LT(r.seconds, 10.0) << describe(r);
  // Every rank started, and none is left.
  const std::vector<pid_t> pids = read_pids(pid_dir.path(), n);
  for (int rank = 0; rank < n; ++rank) EXPECT_GT(pids[rank], 0) << "rank " << rank << " never started";
  EXPECT_TRUE(still_alive_after(pids, 2.0).empty()) << "rank processes left behind\n" << describe(r);
}

// (mode, ranks, absent rank): a rank that never comes to an op is named by the others within
// GLOBE_TIMEOUT, without consistency mode, whether the op first creates a communicator or runs a
// collective on an existing one.
class GlobeRankAbsent : public ::testing::TestWithParam<std::tuple<const char*, int, int>> {};

TEST_P(GlobeRankAbsent, OthersNameItWithinTheTimeout) {
  const auto [mode, n, absent] = GetParam();
  const RunResult r = run_launcher({"--nproc_per_node", std::to_string(n), bin_dir() + "/dist_hang_fixture", mode,
                                    std::to_string(absent)},
                                   {"GLOBE_TIMEOUT=3", "GLOBE_CHECK_CONSISTENCY=0"}, /*deadline_s=*/60);
  EXPECT_FALSE(r.hung) << describe(r);
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  const std::string named = "ranks [" + std::to_string(absent) + "] did not arrive";
  for (int rank = 0; rank < n; ++rank) {
    if (rank == absent) continue;
    EXPECT_TRUE(contains(r.err, "[rank" + std::to_string(rank) + "] caught: [")) << describe(r);
  }
  EXPECT_TRUE(contains(r.err, named)) << describe(r);
  EXPECT_TRUE(contains(r.err, std::string(mode) == "new_group" ? "[group] creating the communicator" : "collective #"))
      << describe(r);
  EXPECT_FALSE(contains(r.out, "finished without the absent rank")) << describe(r);
  EXPECT_LT(r.seconds, 20.0) << describe(r);  // 3 s timeout (+ up to 3 s asking who is stuck)
}

// A program that catches the timeout and returns 0 ends without MPI_Finalize (it would wait for the
// absent rank); mpirun must not count that as a failure: the job's status is the programs' own,
// the absent rank is not killed, and the log says why MPI_Finalize was skipped.
TEST(GlobeRankAbsentHandled, TheJobEndsWithTheProgramsStatus) {
  const RunResult r = run_launcher({"--nproc_per_node", "2", bin_dir() + "/dist_hang_fixture", "collective", "1", "0", "5"},
                                   {"GLOBE_TIMEOUT=2", "GLOBE_CHECK_CONSISTENCY=0"}, /*deadline_s=*/60);
  EXPECT_FALSE(r.hung) << describe(r);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.err, "[rank0] caught: [")) << describe(r);
  EXPECT_TRUE(contains(r.err, "[rank0] [globe] rank 0 ends without MPI_Finalize: a collective timed out earlier"))
      << describe(r);
  EXPECT_TRUE(contains(r.out, "[rank1] absent rank done")) << describe(r);
  EXPECT_FALSE(contains(r.err, "exiting improperly")) << describe(r);
  EXPECT_FALSE(contains(r.err, "globe-launch: ")) << describe(r);  // nothing to blame
}

// (mode, ranks, leaving rank): a rank that ends its program normally instead of coming to an op
// (`if rank == 0: print(x)`) fails the ranks that wait for it at once, naming it, although each
// would wait 300 s for a rank that is merely late.
class GlobeRankLeaves : public ::testing::TestWithParam<std::tuple<const char*, int, int>> {};

TEST_P(GlobeRankLeaves, OthersFailAtOnceNamingIt) {
  const auto [mode, n, leaving] = GetParam();
  const RunResult r = run_launcher({"--nproc_per_node", std::to_string(n), bin_dir() + "/dist_hang_fixture", mode,
                                    std::to_string(leaving), "3", "0"},
                                   {"GLOBE_TIMEOUT=300", "GLOBE_CHECK_CONSISTENCY=0"}, /*deadline_s=*/60);
  EXPECT_FALSE(r.hung) << describe(r);
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_TRUE(contains(r.out, "[rank" + std::to_string(leaving) + "] absent rank done")) << describe(r);
  const bool new_group = std::string(mode) == "new_group";
  const std::string named = new_group ? "ranks [" + std::to_string(leaving) + " (it ended its program)] did not arrive"
                                      : "rank " + std::to_string(leaving) + " ended its program after ";
  // Every other rank says so (the first to fail may stop the rest before they print: at least one).
  EXPECT_TRUE(contains(r.err, named)) << describe(r);
  if (!new_group) EXPECT_TRUE(contains(r.err, "printing a global tensor")) << describe(r);
  EXPECT_FALSE(contains(r.err, "timed out")) << describe(r);
  EXPECT_LT(r.seconds, 20.0) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Cases, GlobeRankLeaves,
                         ::testing::Values(std::make_tuple("collective", 2, 1), std::make_tuple("collective", 4, 0),
                                           std::make_tuple("new_group", 4, 2)));

INSTANTIATE_TEST_SUITE_P(Cases, GlobeRankAbsent,
                         ::testing::Values(std::make_tuple("new_group", 2, 1), std::make_tuple("collective", 2, 1),
                                           std::make_tuple("collective", 3, 2)));

INSTANTIATE_TEST_SUITE_P(Cases, GlobeRankThrows,
                         ::testing::Values(std::make_tuple(2, 1, 3, ""), std::make_tuple(2, 0, 2, ""),
                                           std::make_tuple(4, 2, 3, ""), std::make_tuple(2, 1, 2, "after_backward"),
                                           std::make_tuple(4, 3, 1, "after_backward")));

}  // namespace
}  // namespace launch_test
