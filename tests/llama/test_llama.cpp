// build/bin/llama end to end against Hugging Face transformers: checkpoints written by
// save_pretrained and what transformers computed from them (tests/llama/data, made by
// scripts/golden/make_llama_golden.py; this test needs neither torch nor transformers). The same
// logits, training losses (AdamW) and greedy tokens on 1 rank and on dp2, tp2, pp2 and tp2 x pp2;
// a checkpoint saved from tp2 x pp2 holds the original bytes; each kind of bad input is a clear
// error on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "globe/io/safetensors.h"
#include "globe/io/sharded.h"
#include "globe/ops/ops.h"
#include "launcher_process.h"

namespace {

namespace fs = std::filesystem;
using launch_test::TempDir;

const std::string kData = GLOBE_LLAMA_DATA;

struct LlamaRun {
  launch_test::RunResult r;
  std::string all() const { return r.out + r.err; }
};

LlamaRun llama(int nproc, std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  std::vector<std::string> a = {"--nproc_per_node", std::to_string(nproc), "--no-prefix", launch_test::bin_dir() + "/llama"};
  a.insert(a.end(), args.begin(), args.end());
  return {launch_test::run_launcher(a, env, 280)};
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

globe::Tensor golden(const std::string& model, const std::string& name) {
  return globe::io::SafetensorsReader(kData + "/" + model + "_golden.safetensors", "test").read(name);
}

// The golden run's rows [steps, 4, 17] as a uint32 token file: step s reads rows 4s .. 4s+3.
void write_train_file(const std::string& model, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  for (const int64_t v : golden(model, "train").to_vector<int64_t>()) {
    const uint32_t u = uint32_t(v);
    f.write(reinterpret_cast<const char*>(&u), 4);
  }
}

// The layouts every comparison runs: ranks and flags.
const std::vector<std::pair<int, std::vector<std::string>>> kLayouts = {
    {1, {}}, {2, {"--dp", "2"}}, {2, {"--tp", "2"}}, {2, {"--pp", "2"}}, {4, {"--tp", "2", "--pp", "2"}}};

std::string name_of(const std::pair<int, std::vector<std::string>>& l) {
  std::string s = std::to_string(l.first) + " ranks";
  for (const auto& a : l.second) s += " " + a;
  return s;
}

// gqa: 4 heads on 2 KV heads, untied, three shards with an index; tied: tied head, Llama 3 rope scaling, one file.
class Llama : public ::testing::TestWithParam<std::string> {};

TEST_P(Llama, LogitsEqualTransformersOnEveryLayout) {
  const std::string m = GetParam();
  const globe::Tensor want = golden(m, "logits");
  const std::vector<float> w = want.to_vector<float>();
  float scale = 0;
  for (float v : w) scale = std::max(scale, std::abs(v));
  for (const auto& layout : kLayouts) {
    TempDir dir;
    const std::string out = dir.path() + "/logits.safetensors";
    const LlamaRun run = llama(layout.first, with({"--load-hf", kData + "/" + m, "--logits-of", kData + "/" + m + "_golden.safetensors",
                                              "--logits-out", out},
                                             layout.second));
    ASSERT_EQ(run.r.exit_code, 0) << name_of(layout) << ":\n" << run.all();
    const globe::Tensor got = globe::io::SafetensorsReader(out, "test").read("logits");
    ASSERT_EQ(got.shape(), want.shape()) << name_of(layout);
    const std::vector<float> g = got.to_vector<float>();
    float worst = 0;
    for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]));
    EXPECT_LE(worst, 1e-5f * scale) << m << " on " << name_of(layout) << ": logits differ by " << worst << " (largest " << scale
                                    << ")";
  }
}

TEST_P(Llama, TrainingLossesEqualTransformersWithTorchAdamW) {
  const std::string m = GetParam();
  TempDir dir;
  write_train_file(m, dir.path() + "/train.bin");
  const std::vector<float> want = golden(m, "losses").to_vector<float>();
  // float32 within 1e-5 relative, on layouts with ZeRO 1-3 and recomputation too; bfloat16 compute
  // (float32 master weights) within 2e-3 of transformers' float32 losses.
  for (const auto& layout : std::vector<std::pair<int, std::vector<std::string>>>{
           {1, {}},
           {2, {"--dp", "2"}},
           {2, {"--pp", "2", "--microbatches", "2"}},
           {4, {"--tp", "2", "--pp", "2"}},
           {2, {"--dp", "2", "--zero", "1"}},
           {2, {"--dp", "2", "--zero", "2", "--recompute"}},
           {2, {"--dp", "2", "--zero", "3"}},
           {1, {"--dtype", "bf16"}},
           {4, {"--tp", "2", "--pp", "2", "--dtype", "bf16"}}}) {
    const bool bf16 = std::find(layout.second.begin(), layout.second.end(), "bf16") != layout.second.end();
    const std::string out = dir.path() + "/losses.json";
    fs::remove(out);
    const LlamaRun run = llama(layout.first, with({"--load-hf", kData + "/" + m, "--data", dir.path() + "/train.bin", "--block", "16",
                                              "--batch", "4", "--steps", std::to_string(want.size()), "--lr", "1e-3",
                                              "--weight-decay", "0.1", "--losses-out", out},
                                             layout.second));
    ASSERT_EQ(run.r.exit_code, 0) << name_of(layout) << ":\n" << run.all();
    std::ifstream in(out);
    const std::vector<double> got = nlohmann::json::parse(in).get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size()) << name_of(layout);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], (bf16 ? 2e-3 : 1e-5) * std::abs(want[i])) << m << " on " << name_of(layout) << ", step " << i;
  }
}

TEST_P(Llama, DeterministicModeGivesTheSameBitsOnEveryLayout) {
  // GLOBE_DETERMINISTIC=1: every sum in one order fixed by the global shapes, so the losses are the
  // same floats on 1 rank, dp2, tp2 and pp2 (64 rows a step: whole 32-row cuts on every layout).
  const std::string m = GetParam();
  TempDir dir;
  write_train_file(m, dir.path() + "/train.bin");
  std::vector<double> first;
  for (const auto& layout : std::vector<std::pair<int, std::vector<std::string>>>{
           {1, {}}, {2, {"--dp", "2"}}, {2, {"--tp", "2"}}, {2, {"--pp", "2", "--microbatches", "2"}}}) {
    const std::string out = dir.path() + "/losses.json";
    fs::remove(out);
    const LlamaRun run = llama(layout.first, with({"--load-hf", kData + "/" + m, "--data", dir.path() + "/train.bin", "--batch", "64",
                                                   "--steps", "3", "--log-every", "0", "--losses-out", out},
                                                  layout.second),
                               {"GLOBE_DETERMINISTIC=1"});
    ASSERT_EQ(run.r.exit_code, 0) << name_of(layout) << ":\n" << run.all();
    std::ifstream in(out);
    const std::vector<double> got = nlohmann::json::parse(in).get<std::vector<double>>();
    ASSERT_EQ(got.size(), 3u);
    if (first.empty()) first = got;
    EXPECT_EQ(got, first) << m << " on " << name_of(layout) << ": not the 1-rank bits";
  }
}

TEST_P(Llama, GreedyTokensEqualGenerateOnEveryLayout) {
  const std::string m = GetParam();
  std::string prompt;
  for (const int64_t id : golden(m, "prompt").to_vector<int64_t>()) prompt += (prompt.empty() ? "" : ",") + std::to_string(id);
  const std::vector<int64_t> want = golden(m, "greedy").to_vector<int64_t>();
  auto layouts = kLayouts;  // with the KV cache (the default), and without it on two layouts
  layouts.push_back({1, {"--no-kv-cache"}});
  layouts.push_back({4, {"--tp", "2", "--pp", "2", "--no-kv-cache"}});
  for (const auto& layout : layouts) {
    const LlamaRun run = llama(layout.first, with({"--load-hf", kData + "/" + m, "--generate", prompt, "--tokens", std::to_string(want.size())},
                                             layout.second));
    ASSERT_EQ(run.r.exit_code, 0) << name_of(layout) << ":\n" << run.all();
    EXPECT_NE(run.r.out.find("generated: " + nlohmann::json(want).dump()), std::string::npos)
        << m << " on " << name_of(layout) << ": expected " << nlohmann::json(want).dump() << " in:\n" << run.r.out;
  }
}

TEST(LlamaKvCache, ShardedByKvHeadsUnderTensorParallelism) {
  // gqa: 2 KV heads of 16; after 5 prompt tokens and 12 generated, 16 positions are cached (the
  // last token chosen is never fed back).
  const LlamaRun run = llama(2, {"--load-hf", kData + "/gqa", "--tp", "2", "--generate", "1,2,3,4,5", "--tokens", "12"});
  ASSERT_EQ(run.r.exit_code, 0) << run.all();
  const size_t at = run.r.out.rfind("RESULT ");
  ASSERT_NE(at, std::string::npos) << run.r.out;
  const nlohmann::json res = nlohmann::json::parse(run.r.out.substr(at + 7));
  EXPECT_EQ(res["kv_cache"]["shape"], nlohmann::json({1, 2, 16, 16})) << res.dump();
  EXPECT_EQ(res["kv_cache"]["sbp"], "(B, S(1))") << res.dump();
  EXPECT_EQ(res["kv_cache"]["rank0_shape"], nlohmann::json({1, 1, 16, 16})) << res.dump();
}

INSTANTIATE_TEST_SUITE_P(Models, Llama, ::testing::Values("gqa", "tied"));

// Every tensor of `dir` (a Hugging Face directory) by name, read through Globe's loader of it.
std::map<std::string, std::vector<char>> tensors_of(const std::string& dir) {
  std::map<std::string, std::vector<char>> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    const globe::io::SafetensorsReader r(e.path().string(), "test");
    for (const auto& rec : r.header().tensors) {
      const globe::Tensor t = r.read(rec);
      const char* p = static_cast<const char*>(t.raw_data());
      out[rec.name].assign(p, p + rec.nbytes());
    }
  }
  return out;
}

TEST(LlamaCheckpoint, SavedFromTp2Pp2HoldsTheOriginalBytesAndLoadsAgain) {
  TempDir dir;
  const std::string saved = dir.path() + "/saved";
  const LlamaRun run = llama(4, {"--load-hf", kData + "/gqa", "--tp", "2", "--pp", "2", "--save-hf", saved});
  ASSERT_EQ(run.r.exit_code, 0) << run.all();
  EXPECT_EQ(tensors_of(saved), tensors_of(kData + "/gqa"));
  std::ifstream a(saved + "/config.json"), b(kData + "/gqa/config.json");
  EXPECT_EQ(nlohmann::json::parse(a), nlohmann::json::parse(b));
  // What Globe wrote is what Globe reads: the same greedy tokens from it on one rank.
  const LlamaRun again = llama(1, {"--load-hf", saved, "--generate", "1,2,3", "--tokens", "4"});
  const LlamaRun orig = llama(1, {"--load-hf", kData + "/gqa", "--generate", "1,2,3", "--tokens", "4"});
  ASSERT_EQ(again.r.exit_code, 0) << again.all();
  const auto line = [](const std::string& out) { return out.substr(out.find("generated: "), out.find('\n', out.find("generated: ")) - out.find("generated: ")); };
  EXPECT_EQ(line(again.r.out), line(orig.r.out));
}

// Saved as bfloat16 (as Llama checkpoints ship) from tp2: every tensor is the original rounded to
// bfloat16 (BF16 in the files), config.json says torch_dtype bfloat16, and it loads again.
TEST(LlamaCheckpoint, SavedAsBfloat16HoldsTheRoundedWeights) {
  TempDir dir;
  const std::string saved = dir.path() + "/bf16";
  const LlamaRun run = llama(2, {"--load-hf", kData + "/gqa", "--tp", "2", "--save-hf", saved, "--save-dtype", "bf16"});
  ASSERT_EQ(run.r.exit_code, 0) << run.all();
  const globe::StateDict original = globe::load_sharded(kData + "/gqa"), got = globe::load_sharded(saved);
  ASSERT_EQ(got.size(), original.size());
  for (const auto& [key, t] : original) {
    ASSERT_TRUE(got.contains(key)) << key;
    EXPECT_EQ(got.at(key).dtype(), globe::kBFloat16) << key;
    EXPECT_TRUE(globe::equal(got.at(key), globe::to_dtype(t, globe::kBFloat16))) << key;
  }
  std::ifstream a(saved + "/config.json");
  EXPECT_EQ(nlohmann::json::parse(a)["torch_dtype"], "bfloat16");
  const LlamaRun again = llama(1, {"--load-hf", saved, "--generate", "1,2,3", "--tokens", "2"});
  EXPECT_EQ(again.r.exit_code, 0) << again.all();
}

TEST(LlamaTokenizer, EncodeWritesTheTokenizersIdsAndPromptsDecode) {
  TempDir dir;
  std::ifstream g(kData + "/tokenizer/golden.json");
  const nlohmann::json golden_ids = nlohmann::json::parse(g);
  const std::string text = golden_ids["texts"].back().get<std::string>();  // the 4000-character passage
  std::ofstream(dir.path() + "/text.txt") << text;
  // A model of the tokenizer's vocabulary (random weights): only its size matters here.
  std::ifstream in(kData + "/gqa/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["vocab_size"] = 1000;
  std::ofstream(dir.path() + "/config.json") << config.dump();
  const std::string tok = kData + "/tokenizer/llama3.json";
  const LlamaRun enc = llama(1, {"--config", dir.path() + "/config.json", "--tokenizer", tok, "--encode", dir.path() + "/text.txt",
                                 "--encode-out", dir.path() + "/tokens.bin"});
  ASSERT_EQ(enc.r.exit_code, 0) << enc.all();
  std::ifstream bin(dir.path() + "/tokens.bin", std::ios::binary);
  std::vector<int64_t> ids;
  uint32_t u = 0;
  while (bin.read(reinterpret_cast<char*>(&u), 4)) ids.push_back(u);
  EXPECT_EQ(ids, golden_ids["llama3"].back().get<std::vector<int64_t>>());
  // A text prompt on tp2: the tokens it generates, decoded after the prompt's own text.
  const LlamaRun gen = llama(2, {"--config", dir.path() + "/config.json", "--tokenizer", tok, "--tp", "2", "--prompt",
                                 "Hello, world!", "--tokens", "3"});
  ASSERT_EQ(gen.r.exit_code, 0) << gen.all();
  EXPECT_NE(gen.r.out.find("text: Hello, world!|"), std::string::npos) << gen.r.out;
}

struct BadInput {
  const char* name;
  int nproc;
  std::vector<std::string> args;
  std::string says;
};

class LlamaBadInput : public ::testing::TestWithParam<BadInput> {};

// DIR/broken: a copy of the gqa checkpoint that each case damages its own way.
void damage(const std::string& name, const std::string& dir) {
  fs::copy(kData + "/gqa", dir, fs::copy_options::recursive);
  const std::string n = name;
  if (n == "index_names_a_missing_file") fs::remove(dir + "/model-00002-of-00003.safetensors");
  if (n == "truncated_shard") fs::resize_file(dir + "/model-00003-of-00003.safetensors", 5000);
  if (n == "config_disagrees_with_tensors") {
    std::ifstream in(dir + "/config.json");
    nlohmann::json j = nlohmann::json::parse(in);
    j["intermediate_size"] = 96;
    std::ofstream(dir + "/config.json") << j.dump();
  }
}

TEST_P(LlamaBadInput, FailsWithAClearErrorOnEveryRank) {
  const BadInput& c = GetParam();
  TempDir dir;
  const std::string broken = dir.path() + "/broken";
  damage(c.name, broken);
  const LlamaRun run = llama(c.nproc, with({"--load-hf", broken}, c.args));
  EXPECT_NE(run.r.exit_code, 0) << run.all();
  EXPECT_FALSE(run.r.hung);
  EXPECT_TRUE(launch_test::every_rank_reported(run.r.err, "llama", "", c.nproc)) << run.all();
  EXPECT_NE(run.r.err.find(c.says), std::string::npos) << "expected '" << c.says << "' in:\n" << run.all();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LlamaBadInput,
    ::testing::Values(
        BadInput{"kv_heads_over_tp", 4, {"--tp", "4"}, "4 attention heads on 2 KV heads cannot be split over --tp 4"},
        BadInput{"index_names_a_missing_file", 2, {"--tp", "2"},
                 "names 'model-00002-of-00003.safetensors' (for 9 tensors: 'model.layers.0.input_layernorm.weight'"},
        BadInput{"truncated_shard", 2, {"--pp", "2"}, "model-00003-of-00003.safetensors"},
        BadInput{"config_disagrees_with_tensors", 2, {"--dp", "2"},
                 "tensor 'model.layers.0.mlp.down_proj.weight' is F32[64, 160] in the checkpoint but F32[64, 96] in the target"},
        BadInput{"layout_not_world", 2, {"--tp", "2", "--pp", "2"}, "= 4 ranks, but the job has 2"},
        BadInput{"more_stages_than_layers", 4, {"--pp", "4"}, "--pp 4 stages need at least as many layers"},
        BadInput{"prompt_outside_vocabulary", 2, {"--generate", "1,999"}, "id 999 is outside the vocabulary of 256"},
        BadInput{"steps_without_data", 2, {"--steps", "2"}, "--steps 2 needs --data"},
        BadInput{"generation_past_the_positions", 2, {"--tp", "2", "--generate", "1,2,3", "--tokens", "70"},
                 "position 64 is past the model's 64 positions (max_position_embeddings)"},
        BadInput{"prompt_without_tokenizer", 2, {"--prompt", "hi"}, "--prompt and --encode need a tokenizer"},
        BadInput{"tokenizer_larger_than_the_vocabulary", 2, {"--tokenizer", kData + "/tokenizer/gpt2.json", "--prompt", "hi"},
                 "has 1000 tokens, more than the model's vocabulary of 256"},
        BadInput{"top_p_out_of_range", 2, {"--generate", "1,2", "--temperature", "1", "--top-p", "1.5"},
                 "top_p 1.5 is not in (0, 1]"},
        BadInput{"save_dtype_unknown", 2, {"--save-hf", "unused", "--save-dtype", "fp8"}, "--save-dtype fp8: float32 or bf16"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

}  // namespace
