// build/bin/gpt end to end (tutorial 07): the same losses as PyTorch from the same weights, the
// same losses on every data x tensor x pipeline layout, resuming on another layout, weights that
// export and load back, the same generated text on any layout, and a clear error on every rank for
// each kind of bad input. A small model keeps the 8-rank runs (oversubscribed) quick.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "launcher_process.h"

namespace {

using launch_test::TempDir;

// The model every test but the golden one trains: 2 layers, 4 heads (tp2 splits them), 32 wide.
const std::vector<std::string> kSmall = {"--layers", "2", "--heads", "4", "--embd", "32", "--block", "16",
                                         "--batch", "8", "--warmup", "0", "--log-every", "0", "--val-batches", "2"};

struct GptRun {
  launch_test::RunResult r;
  std::string all() const { return r.out + r.err; }
};

GptRun gpt(int nproc, std::vector<std::string> args) {
  std::vector<std::string> a = {"--nproc_per_node", std::to_string(nproc), "--no-prefix", launch_test::bin_dir() + "/gpt"};
  a.insert(a.end(), args.begin(), args.end());
  return {launch_test::run_launcher(a, {}, 280)};
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

std::vector<double> losses_in(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  return nlohmann::json::parse(in).get<std::vector<double>>();
}

// Trains and returns the per-step losses (asserting success).
std::vector<double> train(int nproc, const std::vector<std::string>& args, const TempDir& dir, const std::string& tag) {
  const std::string out = dir.path() + "/" + tag + ".json";
  const GptRun run = gpt(nproc, with(args, {"--losses-out", out}));
  EXPECT_EQ(run.r.exit_code, 0) << tag << " failed:\n" << run.all();
  return losses_in(out);
}

void expect_same(const std::vector<double>& want, const std::vector<double>& got, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::abs(want[i])) << what << ", step " << i;
}

TEST(Gpt, MatchesPyTorchLossForLossFromTheSameWeights) {
  // tests/gpt/data: written by scripts/golden/make_gpt_golden.sh with bench/gpt/torch_gpt.py.
  const std::string data = GLOBE_GPT_DATA;
  const std::vector<double> want = losses_in(data + "/gpt_small_losses.json");
  ASSERT_EQ(want.size(), 20u) << "missing golden losses in " << data;
  TempDir dir;
  const auto got = train(1, {"--layers", "2", "--heads", "2", "--embd", "32", "--block", "16", "--batch", "4", "--steps", "20",
                             "--warmup", "0", "--log-every", "0", "--val-batches", "0", "--load-init",
                             data + "/gpt_small_init.safetensors"},
                         dir, "golden");
  expect_same(want, got, 1e-4, "against PyTorch");
  EXPECT_LT(got.back(), want.front() - 0.8) << "the loss should fall by more than 0.8 in 20 steps";
}

TEST(Gpt, EveryLayoutGivesTheSingleProcessLosses) {
  TempDir dir;
  const auto args = with(kSmall, {"--steps", "10", "--microbatches", "2"});
  const auto one = train(1, args, dir, "single");
  ASSERT_EQ(one.size(), 10u);
  const std::vector<std::pair<int, std::vector<std::string>>> layouts = {
      {2, {"--dp", "2"}},
      {2, {"--tp", "2"}},
      {2, {"--pp", "2"}},
      {4, {"--dp", "2", "--tp", "2"}},
      {4, {"--tp", "2", "--pp", "2"}},
      {4, {"--dp", "2", "--pp", "2", "--schedule", "gpipe"}},
      {8, {"--dp", "2", "--tp", "2", "--pp", "2"}},
  };
  for (const auto& [n, layout] : layouts) {
    std::string name;
    for (const auto& s : layout) name += s + " ";
    expect_same(one, train(n, with(args, layout), dir, "layout" + std::to_string(&layout - &layouts[0].second)), 1e-5, name);
  }
}

// Each parallel dimension with the placements on the sim device (globe/device/sim/: memory of its
// own, host-staged collectives, the pipeline's device-to-device transfers through the host): the
// single process's losses on the CPU.
TEST(Gpt, LayoutsOnTheSimDeviceGiveTheSingleProcessLosses) {
  TempDir dir;
  const auto args = with(kSmall, {"--steps", "4", "--microbatches", "2"});
  const auto one = train(1, args, dir, "single");
  ASSERT_EQ(one.size(), 4u);
  const std::vector<std::pair<int, std::vector<std::string>>> layouts = {
      {2, {"--dp", "2"}},
      {4, {"--tp", "2", "--pp", "2"}},
  };
  for (size_t i = 0; i < layouts.size(); ++i) {
    std::string name = "sim:";
    for (const auto& s : layouts[i].second) name += " " + s;
    expect_same(one, train(layouts[i].first, with(with(args, layouts[i].second), {"--device", "sim"}), dir,
                           "sim" + std::to_string(i)),
                1e-5, name);
  }
}

// Deterministic mode (GLOBE_DETERMINISTIC=1, docs/design.md §10): every layout, 3 ranks and
// ZeRO-3 included, prints the single process's losses to the last bit (the JSON holds each float
// exactly), and so does a run resumed on another world size. On a batch of 64 sequences, 2
// micro-batches give the whole batch's bits too (each holds whole leaves of 32 along every
// summed batch dim, the position embedding's gradient summing over the sequences alone; the
// head's weight is the embedding's, tied on one stage and across two).
TEST(Gpt, DeterministicModeGivesTheSingleProcessBitsOnEveryLayout) {
  TempDir dir;
  auto det_train = [&](int n, const std::vector<std::string>& layout, const std::string& tag,
                       const std::vector<std::string>& base = {"--steps", "10"}) {
    const std::string out = dir.path() + "/" + tag + ".json";
    const GptRun run = {launch_test::run_launcher(
        with({"--nproc_per_node", std::to_string(n), "--no-prefix", launch_test::bin_dir() + "/gpt"},
             with(with(with(kSmall, base), layout), {"--losses-out", out})),
        {"GLOBE_DETERMINISTIC=1"}, 280)};
    EXPECT_EQ(run.r.exit_code, 0) << tag << " failed:\n" << run.all();
    return losses_in(out);
  };
  const auto one = det_train(1, {}, "single");
  ASSERT_EQ(one.size(), 10u);
  const std::vector<std::pair<int, std::vector<std::string>>> layouts = {
      {2, {"--dp", "2"}}, {2, {"--tp", "2"}}, {3, {"--dp", "3"}}, {4, {"--dp", "2", "--tp", "2"}},
      {4, {"--tp", "2", "--pp", "2"}}, {8, {"--dp", "2", "--tp", "2", "--pp", "2"}}, {2, {"--dp", "2", "--zero", "3"}},
  };
  for (size_t i = 0; i < layouts.size(); ++i) {
    std::string name;
    for (const auto& s : layouts[i].second) name += s + " ";
    EXPECT_EQ(det_train(layouts[i].first, layouts[i].second, "layout" + std::to_string(i)), one) << name;
  }
  const std::vector<std::string> wide = {"--batch", "64", "--steps", "6"};
  const auto whole = det_train(1, {}, "whole", wide);
  ASSERT_EQ(whole.size(), 6u);
  EXPECT_NE(whole, std::vector<double>(one.begin(), one.begin() + 6));  // another batch: other losses
  const std::vector<std::pair<int, std::vector<std::string>>> micro = {
      {1, {"--microbatches", "2"}}, {2, {"--dp", "2", "--microbatches", "2"}}, {4, {"--tp", "2", "--pp", "2", "--microbatches", "2"}}};
  for (size_t i = 0; i < micro.size(); ++i) {
    std::string name;
    for (const auto& s : micro[i].second) name += s + " ";
    EXPECT_EQ(det_train(micro[i].first, micro[i].second, "micro" + std::to_string(i), wide), whole) << name;
  }
  // Five steps on 2 ranks, then the rest on 3 from the checkpoint.
  const std::string ckpt = dir.path() + "/ckpt";
  std::vector<double> joined = det_train(2, {"--dp", "2", "--ckpt", ckpt}, "first", {"--steps", "5"});
  const auto rest = det_train(3, {"--dp", "3", "--resume", ckpt}, "rest");
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_EQ(joined, one) << "dp2 for 5 steps, then dp3 from the checkpoint";
}

// The interleaved and V schedules give each of 2 pipeline ranks 2 chunks of 4 layers: the embedding
// and head share rank 0 under zbv (the first and last stage), ZeRO-3 gathers inside each chunk.
TEST(Gpt, TwoChunkSchedulesGiveTheSingleProcessLosses) {
  TempDir dir;
  const auto args = with(kSmall, {"--layers", "4", "--steps", "4", "--microbatches", "3"});
  const auto one = train(1, args, dir, "single");
  ASSERT_EQ(one.size(), 4u);
  expect_same(one, train(2, with(args, {"--pp", "2", "--schedule", "interleaved"}), dir, "interleaved"), 1e-5,
              "interleaved");
  expect_same(one, train(2, with(args, {"--pp", "2", "--schedule", "zbv"}), dir, "zbv"), 1e-5, "zbv");
  // Generation afterwards builds its pipeline with training's stage map: no block moves, and
  // ZeRO-3's prefetch chains stay on the ranks that hold their blocks.
  expect_same(one,
              train(4, with(args, {"--dp", "2", "--pp", "2", "--zero", "3", "--schedule", "zbv", "--generate", "The ",
                                   "--tokens", "4"}),
                    dir, "zbv-zero3"),
              1e-5, "zbv, dp 2, zero 3");
}

TEST(Gpt, ZeroStagesAndRecomputationGiveTheSingleProcessLosses) {
  TempDir dir;
  const auto args = with(kSmall, {"--steps", "6", "--microbatches", "2"});
  const auto one = train(1, args, dir, "single");
  ASSERT_EQ(one.size(), 6u);
  // Recomputation changes no bit.
  EXPECT_EQ(train(1, with(args, {"--recompute"}), dir, "recompute"), one);
  const std::vector<std::pair<int, std::vector<std::string>>> runs = {
      {2, {"--dp", "2", "--zero", "1"}},
      {2, {"--dp", "2", "--zero", "2", "--recompute"}},
      {2, {"--dp", "2", "--zero", "3"}},
      {2, {"--dp", "2", "--zero", "3", "--recompute"}},
      {4, {"--dp", "2", "--tp", "2", "--zero", "3"}},
      {4, {"--dp", "2", "--pp", "2", "--zero", "3", "--recompute"}},
      {4, {"--dp", "2", "--pp", "2", "--zero", "3", "--schedule", "zb-h1"}},
  };
  for (const auto& [n, run] : runs) {
    std::string name;
    for (const auto& s : run) name += s + " ";
    expect_same(one, train(n, with(args, run), dir, "run" + std::to_string(&run - &runs[0].second)), 1e-5, name);
  }
}

// Prefetch moves the gathers, not their values: no prefetch, the default (1) and past the last
// block give the same bits, on data x tensor and on data x pipeline layouts.
TEST(Gpt, ZeroThreePrefetchAtAnyDepthGivesTheSameBits) {
  TempDir dir;
  const auto args = with(kSmall, {"--steps", "4", "--microbatches", "2", "--zero", "3"});
  for (const std::vector<std::string>& layout : {std::vector<std::string>{"--dp", "2", "--tp", "2"},
                                                 std::vector<std::string>{"--dp", "2", "--pp", "2"}}) {
    const auto none = train(4, with(with(args, layout), {"--prefetch", "0"}), dir, "none");
    ASSERT_EQ(none.size(), 4u);
    EXPECT_EQ(train(4, with(args, layout), dir, "default"), none) << layout[2];
    EXPECT_EQ(train(4, with(with(args, layout), {"--prefetch", "9"}), dir, "far"), none) << layout[2];
  }
}

TEST(Gpt, AVocabularyThatDoesNotDivideSplitsUnevenly) {
  // 257 entries over 2 ranks: 129 and 128 rows of the embedding and of the tied head.
  TempDir dir;
  const auto args = with(kSmall, {"--steps", "4", "--vocab", "257"});
  expect_same(train(1, args, dir, "one"), train(2, with(args, {"--tp", "2"}), dir, "tp2"), 1e-5, "vocab 257, tp2");
}

TEST(Gpt, ResumesOnAnotherLayoutWithTheUninterruptedLosses) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  const auto whole = train(1, with(kSmall, {"--steps", "6"}), dir, "whole");
  ASSERT_EQ(whole.size(), 6u);
  // Train data parallel for 3 steps, then continue as tensor x pipeline parallel.
  const auto first = train(2, with(kSmall, {"--steps", "3", "--dp", "2", "--ckpt", ckpt}), dir, "first");
  const auto rest = train(4, with(kSmall, {"--steps", "6", "--tp", "2", "--pp", "2", "--resume", ckpt}), dir, "rest");
  std::vector<double> joined = first;
  joined.insert(joined.end(), rest.begin(), rest.end());
  expect_same(whole, joined, 1e-5, "dp2 then tp2 x pp2");
  // Fully sharded blocks save their shards; a replicated run loads them.
  const std::string ckpt3 = dir.path() + "/ckpt3";
  const auto first3 = train(2, with(kSmall, {"--steps", "3", "--dp", "2", "--zero", "3", "--ckpt", ckpt3}), dir, "first3");
  const auto rest3 = train(2, with(kSmall, {"--steps", "6", "--tp", "2", "--resume", ckpt3}), dir, "rest3");
  joined = first3;
  joined.insert(joined.end(), rest3.begin(), rest3.end());
  expect_same(whole, joined, 1e-5, "dp2 --zero 3 then tp2");
}

double field(const std::string& out, const std::string& key) {
  const size_t at = out.rfind("RESULT ");
  if (at == std::string::npos) return NAN;
  const auto j = nlohmann::json::parse(out.substr(at + 7, out.find('\n', at) - at - 7));
  return j.contains(key) ? j[key].get<double>() : NAN;
}

// Deterministic mode and micro-batches of fewer than 32 sequences (--batch 40 --microbatches 2):
// they would cut the position embedding's sum over the sequences elsewhere than the batch does,
// so every rank refuses before training, naming the cut and the rule (the run printed other loss
// bits than the whole batch with exit status 0).
TEST(Gpt, DeterministicModeRefusesMicroBatchesOutsideItsRule) {
  const launch_test::RunResult r = launch_test::run_launcher(
      with({"--nproc_per_node", "2", "--no-prefix", launch_test::bin_dir() + "/gpt"},
           with(kSmall, {"--steps", "2", "--dp", "2", "--batch", "40", "--microbatches", "2"})),
      {"GLOBE_DETERMINISTIC=1"}, 280);
  EXPECT_EQ(r.exit_code, 1) << launch_test::describe(r);
  EXPECT_TRUE(launch_test::every_rank_reported(
      r.err, "gpt", "[pipeline] deterministic mode: a batch of 40 rows in 2 micro-batches of 20 rows", 2))
      << r.err;
  EXPECT_EQ(r.out.find("step "), std::string::npos) << r.out;
}

// ZeRO-2 holds each gradient split over the data-parallel ranks: it is reduce-scattered into its
// update layout as the backward completes it, and the whole partial one let go (it used to stay
// whole until the step, so the memory line printed stage 0's bytes). On dp2 the "gradients" bytes
// are half of stage 0's, with clipping (which then reads the split gradients) or without, and
// with micro-batches (accumulated whole, split at the last one's backward).
TEST(Gpt, ZeroTwoHoldsSplitGradients) {
  auto gradient_bytes = [](const std::vector<std::string>& more) -> double {
    const GptRun run = gpt(2, with(with(kSmall, {"--steps", "2", "--dp", "2"}), more));
    EXPECT_EQ(run.r.exit_code, 0) << run.all();
    const size_t at = run.r.out.rfind("RESULT ");
    if (at == std::string::npos) return NAN;
    const auto j = nlohmann::json::parse(run.r.out.substr(at + 7, run.r.out.find('\n', at) - at - 7));
    return j["memory"]["gradients"].get<double>();
  };
  const double zero0 = gradient_bytes({"--zero", "0"});
  ASSERT_GT(zero0, 0.0);
  for (const auto& more : std::vector<std::vector<std::string>>{
           {"--zero", "2", "--grad-clip", "0"}, {"--zero", "2"}, {"--zero", "2", "--microbatches", "2"}}) {
    const double zero2 = gradient_bytes(more);
    EXPECT_NEAR(zero2, 0.5 * zero0, 0.02 * zero0) << more[1] << " " << (more.size() > 2 ? more[2] : "");
  }
}

// --dtype bf16: mixed precision (float32 master weights and AdamW state, bfloat16 compute).
TEST(Gpt, MixedPrecisionTrainsCloseToFloat32OnEveryLayout) {
  TempDir dir;
  const auto args = with(kSmall, {"--steps", "6", "--microbatches", "2"});
  const auto fp32 = train(1, args, dir, "fp32");
  const auto bf16 = train(1, with(args, {"--dtype", "bf16"}), dir, "bf16");
  expect_same(fp32, bf16, 2e-2, "bf16 against float32");
  // --tf32 is a CUDA product mode: on the CPU every loss keeps float32's bits.
  expect_same(fp32, train(1, with(args, {"--tf32"}), dir, "tf32"), 0.0, "--tf32 on the CPU");
  EXPECT_NE(fp32, bf16) << "--dtype bf16 computed in float32";
  // Every layout rounds its bfloat16 sums in its own places: within 1 % of the single process.
  const std::vector<std::pair<int, std::vector<std::string>>> runs = {
      {2, {"--dp", "2"}},
      {2, {"--tp", "2"}},
      {2, {"--pp", "2"}},
      {2, {"--dp", "2", "--reduce-dtype", "bf16"}},
      {4, {"--dp", "2", "--tp", "2", "--zero", "3", "--recompute"}},
      {4, {"--dp", "2", "--pp", "2", "--zero", "1", "--schedule", "zb-h1"}},
  };
  for (const auto& [n, run] : runs) {
    std::string name = "bf16 ";
    for (const auto& s : run) name += s + " ";
    expect_same(bf16, train(n, with(args, with({"--dtype", "bf16"}, run)), dir, "bf" + std::to_string(&run - &runs[0].second)),
                1e-2, name);
  }
  // --dtype fp16: float16 compute with dynamic loss scaling, on one rank and data parallel.
  const auto fp16 = train(1, with(args, {"--dtype", "fp16"}), dir, "fp16");
  expect_same(fp32, fp16, 2e-2, "fp16 against float32");
  expect_same(fp16, train(2, with(args, {"--dtype", "fp16", "--dp", "2"}), dir, "fp16dp2"), 1e-2, "fp16 --dp 2");
  const GptRun h = gpt(1, with(kSmall, {"--steps", "2", "--dtype", "fp16"}));
  EXPECT_EQ(field(h.r.out, "loss_scale"), 65536.0) << h.all();
  EXPECT_EQ(field(h.r.out, "steps_skipped"), 0.0) << h.all();
  // The log says what ran.
  const GptRun r = gpt(2, with(kSmall, {"--steps", "1", "--dp", "2", "--dtype", "bf16", "--reduce-dtype", "bf16"}));
  EXPECT_NE(r.r.out.find("mixed precision: bfloat16 compute, float32 master weights, gradients reduced in bfloat16; "
                         "bfloat16 matmul: "),
            std::string::npos)
      << r.all();
}

TEST(Gpt, MixedPrecision600StepsReachFloat32sValidationLoss) {
  const auto args = with(kSmall, {"--steps", "600", "--val-batches", "8"});
  const GptRun fp32 = gpt(1, args), bf16 = gpt(2, with(args, {"--tp", "2", "--dtype", "bf16"}));
  ASSERT_EQ(fp32.r.exit_code, 0) << fp32.all();
  ASSERT_EQ(bf16.r.exit_code, 0) << bf16.all();
  const double want = field(fp32.r.out, "val_loss"), got = field(bf16.r.out, "val_loss");
  ASSERT_LT(want, 3.0) << "600 steps should train the model:\n" << fp32.r.out;
  EXPECT_NEAR(got, want, 0.02 * want) << "bf16 validation loss after 600 steps:\n" << bf16.r.out;
}

TEST(Gpt, ExportedWeightsLoadBackOnAnotherLayout) {
  TempDir dir;
  const std::string file = dir.path() + "/model.safetensors";
  const GptRun a = gpt(2, with(kSmall, {"--steps", "3", "--tp", "2", "--export", file}));
  ASSERT_EQ(a.r.exit_code, 0) << a.all();
  const GptRun b = gpt(2, with(kSmall, {"--steps", "0", "--pp", "2", "--load-init", file}));
  ASSERT_EQ(b.r.exit_code, 0) << b.all();
  const double va = field(a.r.out, "val_loss"), vb = field(b.r.out, "val_loss");
  ASSERT_FALSE(std::isnan(va)) << a.r.out;
  EXPECT_NEAR(vb, va, 1e-5 * va) << "validation loss of the exported weights, loaded back:\n" << b.r.out;
}

std::string generated(const std::string& out) {
  const size_t a = out.find("--- generated ---\n"), b = out.find("\n--- end ---");
  return a == std::string::npos || b == std::string::npos ? "" : out.substr(a + 18, b - a - 18);
}

TEST(Gpt, GeneratesTheSameTextOnAnyLayout) {
  TempDir dir;
  const std::string ckpt = dir.path() + "/ckpt";
  ASSERT_EQ(train(1, with(kSmall, {"--steps", "5", "--ckpt", ckpt}), dir, "t").size(), 5u);
  const std::vector<std::string> gen = {"--steps", "0", "--resume", ckpt, "--generate", "The ", "--tokens", "12",
                                        "--temperature", "0.8", "--top-k", "20"};
  const GptRun one = gpt(1, with(kSmall, gen));
  const GptRun four = gpt(4, with(kSmall, with(gen, {"--tp", "2", "--pp", "2"})));
  ASSERT_EQ(one.r.exit_code, 0) << one.all();
  ASSERT_EQ(four.r.exit_code, 0) << four.all();
  const std::string text = generated(one.r.out);
  EXPECT_EQ(text.size(), 4u + 12u) << one.r.out;  // the prompt, then 12 bytes
  EXPECT_EQ(text.rfind("The ", 0), 0u);
  EXPECT_EQ(generated(four.r.out), text);
}

TEST(Gpt, HelpListsEveryFlagWithItsDefaultAndMeaning) {
  const GptRun run = gpt(1, {"--help"});
  ASSERT_EQ(run.r.exit_code, 0) << run.all();
  for (const char* line : {"usage: globe-launch --nproc_per_node N gpt [flags]",
                           "--zero VALUE", "ZeRO stage: 0 replicated", "(default 0)",
                           "--prefetch VALUE", "(default 1)", "--recompute ", "--dtype VALUE", "(default float32)"})
    EXPECT_NE(run.r.out.find(line), std::string::npos) << "no '" << line << "' in:\n" << run.r.out;
  EXPECT_EQ(run.r.out.find("RESULT"), std::string::npos) << "--help trains nothing";
}

struct BadInput {
  const char* name;
  int nproc;
  std::vector<std::string> args;
  std::string says;
};

class GptBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(GptBadInput, FailsWithAClearErrorOnEveryRank) {
  const BadInput& c = GetParam();
  TempDir dir;
  std::vector<std::string> args = c.args;
  for (auto& a : args)
    if (a.rfind("DIR/", 0) == 0) a = dir.path() + a.substr(3);
  std::ofstream(dir.path() + "/empty.txt").close();
  // A checkpoint of another model size, for the cases that load one.
  if (std::string(c.name).find("size") != std::string::npos) {
    const GptRun r = gpt(1, with(kSmall, {"--steps", "1", "--ckpt", dir.path() + "/ckpt", "--export", dir.path() + "/small.safetensors"}));
    ASSERT_EQ(r.r.exit_code, 0) << r.all();
  }
  const GptRun run = gpt(c.nproc, args);
  EXPECT_NE(run.r.exit_code, 0) << run.all();
  EXPECT_FALSE(run.r.hung);
  EXPECT_TRUE(launch_test::every_rank_reported(run.r.err, "gpt", "", c.nproc)) << run.all();
  EXPECT_NE(run.r.err.find(c.says), std::string::npos) << "expected '" << c.says << "' in:\n" << run.all();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GptBadInput,
    ::testing::Values(
        BadInput{"layout_not_world", 2, with(kSmall, {"--dp", "2", "--tp", "2"}), "= 4 ranks, but the job has 2"},
        BadInput{"embd_not_divisible_by_heads", 2, {"--layers", "2", "--heads", "3", "--embd", "32", "--dp", "2"},
                 "--embd 32 is not divisible by --heads 3"},
        BadInput{"heads_over_tp", 2, {"--layers", "2", "--heads", "3", "--embd", "48", "--tp", "2"},
                 "--heads 3 cannot be split over --tp 2"},
        BadInput{"zero_stage_4", 2, with(kSmall, {"--dp", "2", "--zero", "4"}), "[gpt] --zero 4: 0 (replicated)"},
        BadInput{"unknown_flag", 2, with(kSmall, {"--bogus"}), "[gpt] unknown flag --bogus (--help lists them)"},
        BadInput{"switch_with_a_value", 2, with(kSmall, {"--recompute=1"}), "[gpt] --recompute is a switch"},
        BadInput{"negative_prefetch", 2, with(kSmall, {"--dp", "2", "--zero", "3", "--prefetch", "-1"}),
                 "[gpt] --prefetch -1: how many blocks ahead"},
        BadInput{"dtype_int8", 2, with(kSmall, {"--dtype", "int8"}), "[gpt] --dtype int8: float32, bf16 (bfloat16) or fp16"},
        BadInput{"bf16_reduce_with_zero2", 2, with(kSmall, {"--dp", "2", "--zero", "2", "--dtype", "bf16", "--reduce-dtype", "bf16"}),
                 "[gpt] --reduce-dtype bf16 applies to the data-parallel all-reduce; --zero 2 reduce-scatters"},
        BadInput{"more_stages_than_layers", 2, {"--layers", "1", "--pp", "2"}, "--pp 2 stages need at least as many layers"},
        BadInput{"missing_corpus", 2, with(kSmall, {"--data", "DIR/nothing-here"}), "does not exist"},
        BadInput{"empty_corpus", 2, with(kSmall, {"--data", "DIR/empty.txt"}), "is empty"},
        BadInput{"prompt_too_long", 2,
                 with(kSmall, {"--steps", "1", "--generate", "a prompt longer than sixteen bytes"}),
                 "the context holds 16"},
        BadInput{"init_of_another_size", 2, {"--layers", "2", "--heads", "4", "--embd", "64", "--steps", "1", "--load-init",
                                             "DIR/small.safetensors"},
                 "transformer.wte.weight"},
        BadInput{"resume_without_checkpoint", 2, with(kSmall, {"--steps", "1", "--resume", "DIR/no_ckpt"}),
                 "[gpt] no complete checkpoint in '"},
        BadInput{"checkpoint_of_another_size_every_key", 2, with(kSmall, {"--layers", "3", "--steps", "2", "--resume", "DIR/ckpt"}),
                 "has no tensor 'transformer.h.2.ln_1.weight', 'transformer.h.2.ln_1.bias', 'transformer.h.2.attn.c_attn.weight'"},
        BadInput{"checkpoint_of_another_size", 2, {"--layers", "2", "--heads", "4", "--embd", "64", "--steps", "2",
                                                   "--resume", "DIR/ckpt"},
                 "transformer.wte.weight"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
