// Every tutorial example runs under globe-launch; the same program gives the same losses on 1 and
// 2 ranks (docs/design.md §10 end to end: "same program, any layout, same numbers") and it learns.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <sstream>
#include <tuple>

#include "launcher_process.h"

namespace {

// "iter I loss V" lines of an example's output, in order.
std::vector<double> losses(const std::string& out) {
  std::vector<double> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string iter, loss_word;
    int i;
    double value;
    if (words >> iter >> i >> loss_word >> value && iter == "iter" && loss_word == "loss") v.push_back(value);
  }
  return v;
}

// The hex floats after "bits" on each line (deterministic mode prints them).
std::vector<std::string> loss_bits(const std::string& out) {
  std::vector<std::string> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (const size_t at = line.find(" bits "); line.rfind("iter ", 0) == 0 && at != std::string::npos)
      v.push_back(line.substr(at + 6));
  return v;
}

launch_test::RunResult launch_example(const std::string& name, int nproc, int iters, const std::vector<std::string>& extra,
                                      const std::vector<std::string>& env = {}) {
  std::vector<std::string> args = {"--nproc_per_node", std::to_string(nproc), "--no-prefix",
                                   launch_test::bin_dir() + "/" + name, "--iters", std::to_string(iters)};
  args.insert(args.end(), extra.begin(), extra.end());
  return launch_test::run_launcher(args, env, 300);
}

std::vector<double> run_example(const std::string& name, int nproc, int iters,
                                const std::vector<std::string>& extra = {}) {
  auto r = launch_example(name, nproc, iters, extra);
  EXPECT_EQ(r.exit_code, 0) << name << " with " << nproc << " ranks failed:\n" << r.out << r.err;
  std::vector<double> v = losses(r.out);
  EXPECT_EQ(int(v.size()), iters) << name << " printed " << v.size() << " losses (one rank prints):\n" << r.out;
  return v;
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return s / double(to - from);
}

class Example : public ::testing::TestWithParam<const char*> {};

TEST_P(Example, SameLossesOnOneAndTwoRanksAndLearns) {
  const int iters = 30;
  const auto one = run_example(GetParam(), 1, iters);
  const auto two = run_example(GetParam(), 2, iters);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_NEAR(two[i], one[i], 1e-5 * std::abs(one[i])) << GetParam() << " iteration " << i;
  ASSERT_EQ(int(one.size()), iters);
  // Fresh random batches make single steps noisy: compare the first and last five.
  EXPECT_LT(mean(one, iters - 5, iters), mean(one, 0, 5)) << GetParam() << " did not learn";
}

// The same program with its placements on the sim device (globe/device/sim/: device memory of its
// own, collectives staged through the host, as a GPU without NCCL): the same losses as on the CPU
// (the sim device runs the CPU's kernels), on 2 ranks, so every tutorial's device paths (the
// batches' move to the device, the host staging of each collective, reading the loss back) run
// in CI.
TEST_P(Example, SameLossesOnTheSimDeviceAsOnTheCpu) {
  const int iters = 3;
  const auto cpu = run_example(GetParam(), 2, iters);
  const auto sim = run_example(GetParam(), 2, iters, {"--device", "sim"});
  ASSERT_EQ(sim.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_EQ(sim[i], cpu[i]) << GetParam() << " iteration " << i;
}

TEST(SaveLoadExample, RoundTripsOnOneAndTwoRanksAndOnTheSimDevice) {
  for (int nproc : {1, 2}) {
    launch_test::TempDir dir;
    const std::string path = dir.path() + "/model.safetensors";
    std::vector<std::string> args = {"--nproc_per_node", std::to_string(nproc), "--no-prefix",
                                     launch_test::bin_dir() + "/save_load", "--iters", "3", "--path", path};
    if (nproc == 2) args.insert(args.end(), {"--device", "sim"});  // saving and loading device shards
    auto r = launch_test::run_launcher(args, {}, 300);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("loaded parameters equal the saved ones: yes"), std::string::npos) << r.out;
    EXPECT_EQ(access(path.c_str(), R_OK), 0) << "no checkpoint at " << path;
  }
}

// The pipeline object's example: one stage per rank, every schedule, the losses of one process.
TEST(PipelineSchedulesExample, EveryScheduleOnOneTwoAndFourRanksGivesTheSameLosses) {
  const int iters = 4;
  const auto one = run_example("pipeline_schedules", 1, iters);
  for (const char* schedule : {"gpipe", "1f1b", "interleaved", "zb-h1", "zbv"})
    for (int nproc : {2, 4}) {
      const auto got = run_example("pipeline_schedules", nproc, iters, {"--schedule", schedule});
      ASSERT_EQ(got.size(), one.size()) << schedule << " on " << nproc;
      for (size_t i = 0; i < one.size(); ++i)
        EXPECT_NEAR(got[i], one[i], 1e-6 * std::abs(one[i])) << schedule << " on " << nproc << " iteration " << i;
    }
}

// Deterministic mode (docs/design.md §10): the tutorials print the same loss bits (hex floats) on
// 1, 2, 3 and 4 ranks, for every layout they take there.
TEST(DeterministicExamples, SameLossBitsOnOneToFourRanks) {
  const int iters = 10;
  for (const char* name : {"quickstart", "model_parallel", "pipeline_schedules"}) {
    std::vector<std::string> one;
    // The pipeline's micro-batches hold 32 rows each, as the mode's rule for micro-batches asks.
    const std::vector<std::string> extra = std::string(name) == "pipeline_schedules"
                                               ? std::vector<std::string>{"--batch", "64", "--microbatches", "2"}
                                               : std::vector<std::string>{};
    for (int nproc : {1, 2, 3, 4}) {
      const auto r = launch_example(name, nproc, iters, extra, {"GLOBE_DETERMINISTIC=1"});
      ASSERT_EQ(r.exit_code, 0) << name << " on " << nproc << ":\n" << r.out << r.err;
      const auto bits = loss_bits(r.out);
      ASSERT_EQ(int(bits.size()), iters) << name << " on " << nproc << " printed no bits:\n" << r.out;
      if (nproc == 1) one = bits;
      EXPECT_EQ(bits, one) << name << " on " << nproc << " ranks";
    }
  }
}

// Deterministic mode with 1, 2 and 4 micro-batches: each micro-batch's 128 / m rows are whole
// leaves of 32 and so a whole subtree of the batch's sums, and the gradients and the losses add
// over micro-batches in that tree, so the pipeline tutorial prints one process's single-batch
// bits on 1, 2 and 4 stages whatever the count.
TEST(DeterministicExamples, SameLossBitsForAnyPowerOfTwoOfMicroBatches) {
  const int iters = 5;
  std::vector<std::string> one;
  for (int nproc : {1, 2, 4})
    for (int m : {1, 2, 4}) {
      const auto r = launch_example("pipeline_schedules", nproc, iters,
                                    {"--batch", "128", "--microbatches", std::to_string(m)}, {"GLOBE_DETERMINISTIC=1"});
      ASSERT_EQ(r.exit_code, 0) << m << " micro-batches on " << nproc << ":\n" << r.out << r.err;
      const auto bits = loss_bits(r.out);
      ASSERT_EQ(int(bits.size()), iters) << r.out;
      if (one.empty()) one = bits;
      EXPECT_EQ(bits, one) << m << " micro-batches on " << nproc << " ranks";
    }
}

// Deterministic mode refuses micro-batches that would not give the whole batch's bits (fewer than
// 32 rows each, or a count that is not a power of two) on every rank, naming the batch, the cut and
// the rule, rather than print other bits without a word.
TEST(DeterministicExamples, MicroBatchesOutsideTheRuleAreAnErrorOnEveryRank) {
  for (const auto& [batch, m, cut] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"40", "2", "a batch of 40 rows in 2 micro-batches of 20 rows"},
           {"96", "3", "a batch of 96 rows in 3 micro-batches of 32 rows"}})
    for (int nproc : {1, 2}) {
      const auto r = launch_example("pipeline_schedules", nproc, 1, {"--batch", batch, "--microbatches", m},
                                    {"GLOBE_DETERMINISTIC=1"});
      EXPECT_EQ(r.exit_code, 1) << launch_test::describe(r);
      EXPECT_TRUE(launch_test::every_rank_reported(r.err, "pipeline_schedules", "[pipeline] deterministic mode: " + cut, nproc))
          << r.err;
      EXPECT_NE(r.err.find("leaves of 32 rows"), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("iter 0"), std::string::npos) << "trained outside the rule:\n" << r.out;
    }
}

// An error in an example (here a device type no placement takes) is its message and exit status
// 1, not std::terminate's abort (SIGABRT, exit 134): users copy this scaffolding. With two ranks
// the first to fail stops the other (which may not get to print its own line), as Python's does.
TEST(ExampleErrors, EveryExampleExitsOneWithTheMessage) {
  for (const char* name : {"quickstart", "data_parallel", "model_parallel", "save_load", "pipeline", "pipeline_schedules"})
    for (int nproc : {1, 2}) {
      const auto r = launch_example(name, nproc, 1, {"--device", "tpu"});
      EXPECT_EQ(r.exit_code, 1) << name << " on " << nproc << ":\n" << launch_test::describe(r);
      EXPECT_NE(r.err.find(std::string(name) + ": error on rank "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(": [placement] placement(tpu, ["), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("SIGABRT"), std::string::npos) << r.err;
    }
}

INSTANTIATE_TEST_SUITE_P(Tutorials, Example,
                         ::testing::Values("quickstart", "data_parallel", "model_parallel", "pipeline"));

}  // namespace
