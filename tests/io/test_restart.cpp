// Restart and resume (docs/design.md §7, §8): globe-launch --max-restarts carries a run through a
// rank killed with SIGKILL, and the run, resumed from its newest complete checkpoint
// (CheckpointManager), ends with the same losses, bit for bit, as one never interrupted. A save
// interrupted before its commit point is never the one resumed.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include "globe/globe.h"
#include "launcher_process.h"

namespace launch_test {
namespace {

namespace fs = std::filesystem;

std::string fixture() { return bin_dir() + "/restart_fixture"; }

// "step <i> loss <hex>" lines of rank 0, by step (a restarted run prints some steps twice: the
// later line is the one that counts), and the "start" lines.
struct Printed {
  std::map<int, std::string> loss_by_step;
  std::vector<std::string> starts;
};
Printed parse(const std::string& out) {
  Printed p;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    int step = 0;
    char hex[64] = {};
    if (std::sscanf(line.c_str(), "[rank0] step %d loss %63s", &step, hex) == 2) p.loss_by_step[step] = hex;
    if (line.rfind("[rank0] start ", 0) == 0) p.starts.push_back(line.substr(8));
  }
  return p;
}

// 2 and 4 ranks.
class RestartRanks : public ::testing::TestWithParam<int> {};

TEST_P(RestartRanks, AKilledRankIsRestartedAndTheRunEndsAsIfUninterrupted) {
  const std::string n = std::to_string(GetParam());
  TempDir tmp;
  const RunResult clean =
      run_launcher({"--nproc_per_node", n, fixture(), "--ckpt", tmp.path() + "/clean", "--steps", "12"}, {}, 120);
  ASSERT_EQ(clean.exit_code, 0) << describe(clean);
  const RunResult killed = run_launcher({"--nproc_per_node", n, "--max-restarts", "1", fixture(), "--ckpt",
                                         tmp.path() + "/killed", "--steps", "12", "--die-at", "7"},
                                        {}, 120);
  ASSERT_EQ(killed.exit_code, 0) << describe(killed);
  EXPECT_NE(killed.err.find("globe-launch: rank 1 failed first: signal 9 (SIGKILL)"), std::string::npos)
      << describe(killed);
  EXPECT_NE(killed.err.find("globe-launch: restarting every rank (restart 1 of 1, --max-restarts)"), std::string::npos)
      << describe(killed);
  const Printed a = parse(clean.out), b = parse(killed.out);
  // Checkpoints every 3 steps: killed at step 7, the second start resumes at step 6.
  EXPECT_EQ(a.starts, std::vector<std::string>{"start 0 at 0"});
  EXPECT_EQ(b.starts, (std::vector<std::string>{"start 0 at 0", "start 1 at 6"}));
  ASSERT_EQ(a.loss_by_step.size(), 12u) << clean.out;
  EXPECT_EQ(b.loss_by_step, a.loss_by_step) << "clean:\n" << clean.out << "\nrestarted:\n" << killed.out;
  // Keep 2: steps 9 and 12 remain.
  const auto latest = globe::latest_checkpoint(tmp.path() + "/killed");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 12);
  EXPECT_TRUE(fs::exists(tmp.path() + "/killed/step-000000000009/index.json"));
  EXPECT_FALSE(fs::exists(tmp.path() + "/killed/step-000000000006"));
}

INSTANTIATE_TEST_SUITE_P(TwoFour, RestartRanks, ::testing::Values(2, 4));

TEST(Restart, BadArgumentsAreRefused) {
  const RunResult r = run_launcher({"--max-restarts", "-1", fixture(), "--ckpt", "x"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_NE(r.err.find("--max-restarts: expected an integer >= 0, got '-1'"), std::string::npos) << describe(r);
  const RunResult word = run_launcher({"--max-restarts=two", fixture(), "--ckpt", "x"});
  EXPECT_EQ(word.exit_code, 2) << describe(word);
  auto error_of = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const globe::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of([] { globe::CheckpointManager("", {}); }).find("[CheckpointManager] needs a directory"),
            std::string::npos);
  EXPECT_NE(error_of([] { globe::CheckpointManager("d", {.keep = 0}); }).find("keep must be at least 1, got 0"),
            std::string::npos);
  TempDir tmp;
  globe::nn::Linear fc(2, 2);
  EXPECT_NE(error_of([&] { globe::CheckpointManager(tmp.path()).save(-1, fc); }).find("step must not be negative, got -1"),
            std::string::npos);
  EXPECT_EQ(globe::CheckpointManager(tmp.path() + "/none").resume(fc), 0);  // nothing to resume: 0, nothing changed
}

TEST(Restart, WithoutMaxRestartsAFailureEndsTheJob) {
  TempDir tmp;
  const RunResult r = run_launcher(
      {"--nproc_per_node", "2", fixture(), "--ckpt", tmp.path() + "/c", "--steps", "12", "--die-at", "4"}, {}, 120);
  EXPECT_EQ(r.exit_code, 128 + 9) << describe(r);
  EXPECT_EQ(r.err.find("restarting"), std::string::npos) << describe(r);
  EXPECT_EQ(parse(r.out).starts.size(), 1u) << describe(r);
}

TEST(Restart, AnInterruptedSaveIsNeverResumed) {
  // A save killed before its commit point leaves a step directory without index.json (save_sharded
  // writes that file last, docs/design.md §8). Make one from a complete checkpoint, as the crash would leave it.
  TempDir tmp;
  const std::string dir = tmp.path() + "/c";
  const RunResult r = run_launcher({"--nproc_per_node", "2", fixture(), "--ckpt", dir, "--steps", "6"}, {}, 120);
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  fs::copy(dir + "/step-000000000006", dir + "/step-000000000009", fs::copy_options::recursive);
  fs::remove(dir + "/step-000000000009/index.json");
  const auto latest = globe::latest_checkpoint(dir);
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 6);
  const RunResult resumed = run_launcher({"--nproc_per_node", "2", fixture(), "--ckpt", dir, "--steps", "9"}, {}, 120);
  ASSERT_EQ(resumed.exit_code, 0) << describe(resumed);
  EXPECT_EQ(parse(resumed.out).starts, std::vector<std::string>{"start 0 at 6"}) << describe(resumed);
  // The resumed run's save of step 9 replaced the broken directory with a complete one.
  EXPECT_TRUE(fs::exists(dir + "/step-000000000009/index.json"));
  EXPECT_EQ(globe::latest_checkpoint(dir)->step, 9);
}

}  // namespace
}  // namespace launch_test
