// Hugging Face checkpoint directories (globe/io/hf_checkpoint.h) with 1, 2 and 4 ranks: a
// directory laid out as transformers writes it loads into split layouts with each rank reading only
// its block; save_hf from split layouts writes the files and index transformers reads, and they load
// back bit for bit; a bf16 file loads into float32 weights; broken directories fail on every rank
// with every problem named.
#include <nlohmann/json.hpp>

#include "globe/io/atomic_file.h"
#include "globe/io/hf_checkpoint.h"
#include "globe/io/safetensors.h"
#include "io_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::expect_bit_equal;
using testing::expect_error;
using testing::SharedTempDir;
using testing::me;
using testing::world;

Tensor whole_of(const Tensor& t) { return testing::whole(t); }

// Whole values, the same on every rank (seeded).
std::map<std::string, Tensor> values() {
  manual_seed(7);
  return {{"model.embed_tokens.weight", randn({8, 4})},
          {"model.layers.0.self_attn.q_proj.weight", randn({4, 4})},
          {"model.norm.weight", randn({4})},
          {"lm_head.weight", randn({8, 4})}};
}

// Rank 0 writes `files` (file -> tensor names) and, when there are several, the index mapping them.
void write_hf_dir(const std::string& dir, const std::map<std::string, std::vector<std::string>>& files,
                  const std::map<std::string, Tensor>& v) {
  if (me() == 0) {
    nlohmann::json index;
    index["metadata"]["total_size"] = 0;
    for (const auto& [file, names] : files) {
      std::vector<io::TensorDecl> decls;
      for (const std::string& n : names) decls.push_back({n, v.at(n).dtype(), v.at(n).shape()});
      io::SafetensorsWriter w(dir + "/" + file, decls, {{"format", "pt"}}, "test");
      for (const std::string& n : names) {
        w.append(v.at(n));
        index["weight_map"][n] = file;
      }
      w.commit();
    }
    if (files.size() > 1) testing::write_bytes(dir + "/" + io::kHfIndexFile, index.dump());
  }
  io::agree_on_errors("");
}

const std::map<std::string, std::vector<std::string>> kTwoFiles = {
    {"model-00001-of-00002.safetensors", {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"}},
    {"model-00002-of-00002.safetensors", {"model.norm.weight", "lm_head.weight"}}};

// The model's layouts: rows split (vocabulary-parallel, column-parallel), vectors replicated.
StateDict like(const std::map<std::string, Tensor>& v, DType dtype = kFloat32) {
  StateDict s;
  for (const auto& [k, t] : v)
    s.set(k, zeros(t.shape(), Placement::all(), t.dim() == 2 ? sbp::split(0) : sbp::broadcast, dtype));
  return s;
}

TEST(HfCheckpoint, ShardedDirectoryLoadsIntoSplitLayoutsReadingOnlyEachRanksRows) {
  const SharedTempDir dir;
  const auto v = values();
  write_hf_dir(dir.path(), kTwoFiles, v);
  ASSERT_TRUE(io::is_hf_checkpoint(dir.path()));
  const uint64_t before = io::bytes_read_total();
  const StateDict got = load_sharded(dir.path(), like(v));
  const uint64_t read = io::bytes_read_total() - before;
  for (const auto& [k, t] : v) {
    EXPECT_EQ(got.at(k).sbp(), like(v).at(k).sbp()) << k;
    expect_bit_equal(got.at(k), t, k);
  }
  // Data bytes read by this rank: its rows of the two [8, 4] and one [4, 4] matrix, the whole
  // vector; plus each file's header.
  const uint64_t mine = uint64_t((8 / world()) * 4 * 2 + (4 / world()) * 4 + 4) * 4;
  EXPECT_GE(read, mine);
  EXPECT_LT(read, mine + 2 * 4096) << "more than its rows and the headers";
}

TEST(HfCheckpoint, LoadIntoTheTargetsHoldsOneTensorAtATimeAndAMisfitWritesNothing) {
  const SharedTempDir dir;
  const auto v = values();
  write_hf_dir(dir.path(), kTwoFiles, v);
  const StateDict targets = like(v);
  const int64_t held = memory_stats().current_bytes;
  reset_peak_memory();
  load_sharded_into(dir.path(), targets);
  // At most the largest block a rank reads (its rows of an [8, 4] matrix) and a few bytes of
  // bookkeeping (the collectives' flags), never two blocks.
  const int64_t block = (8 + world() - 1) / world() * 4 * 4;
  EXPECT_LE(memory_stats().peak_bytes - held, block + 8) << "more than one block at once";
  for (const auto& [k, t] : v) expect_bit_equal(targets.at(k), t, k);

  StateDict misfit = like(v);
  misfit.set("model.norm.weight", zeros({5}, Placement::all(), sbp::broadcast));
  expect_error([&] { load_sharded_into(dir.path(), misfit); }, {"'model.norm.weight' is F32[4] in the checkpoint but F32[5]"},
               "misfit");
  for (const auto& [k, t] : misfit) expect_bit_equal(t, zeros_like(whole_of(t)), k + " untouched");
}

TEST(HfCheckpoint, SingleFileDirectoryLoadsToo) {
  const SharedTempDir dir;
  const auto v = values();
  std::vector<std::string> all;
  for (const auto& [k, t] : v) all.push_back(k);
  write_hf_dir(dir.path(), {{io::kHfSingleFile, all}}, v);
  const StateDict got = load_sharded(dir.path(), like(v));
  for (const auto& [k, t] : v) expect_bit_equal(got.at(k), t, k);
}

TEST(HfCheckpoint, Bf16FileLoadsIntoFloat32WeightsAndLoadingWithoutTargetsKeepsBf16) {
  const SharedTempDir dir;
  std::map<std::string, Tensor> v;
  for (const auto& [k, t] : values()) v[k] = to_dtype(t, kBFloat16);
  write_hf_dir(dir.path(), kTwoFiles, v);
  const StateDict got = load_sharded(dir.path(), like(v, kFloat32));
  for (const auto& [k, t] : v) {
    EXPECT_EQ(got.at(k).dtype(), kFloat32) << k;
    expect_bit_equal(got.at(k), to_dtype(t, kFloat32), k);
  }
  const StateDict as_is = load_sharded(dir.path());
  for (const auto& [k, t] : v) expect_bit_equal(as_is.at(k), t, k);
}

TEST(HfCheckpoint, SaveFromSplitLayoutsWritesShardsAndIndexThatLoadBack) {
  const SharedTempDir dir;
  const auto v = values();
  StateDict state;
  for (const auto& [k, t] : v)  // every rank holds t: broadcast, then split
    state.set(k, t.to_global(Placement::all(), sbp::broadcast).to_global(Placement::all(), t.dim() == 2 ? sbp::split(1) : sbp::broadcast));
  // 8x4 floats are 128 bytes: 150-byte files take one matrix each (the [4] vector joins the last).
  save_hf(state, dir.path(), {.max_shard_bytes = 150});
  if (me() == 0) {
    EXPECT_EQ(testing::list_dir(dir.path()),
              (std::vector<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                        "model-00003-of-00003.safetensors", io::kHfIndexFile}));
    const auto index = nlohmann::json::parse(testing::read_bytes(dir / io::kHfIndexFile));
    EXPECT_EQ(index["metadata"]["total_size"], (8 * 4 * 2 + 4 * 4 + 4) * 4);
    std::vector<std::string> keys;
    for (const auto& [k, f] : index["weight_map"].items()) keys.push_back(k);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_EQ(keys.size(), v.size());
    const io::SafetensorsReader r(dir / "model-00001-of-00003.safetensors", "test");
    EXPECT_EQ(r.header().metadata.at("format"), "pt");
  }
  const StateDict got = load_sharded(dir.path(), like(v));
  for (const auto& [k, t] : v) expect_bit_equal(got.at(k), t, k);

  // Saved again into one file: the shards and their index go.
  save_hf(state, dir.path());
  if (me() == 0) {
    EXPECT_EQ(testing::list_dir(dir.path()), std::vector<std::string>{io::kHfSingleFile});
  }
  const StateDict again = load_sharded(dir.path(), like(v));
  for (const auto& [k, t] : v) expect_bit_equal(again.at(k), t, k);
}

TEST(HfCheckpoint, BrokenDirectoriesFailOnEveryRankNamingEveryProblem) {
  const auto v = values();
  {  // the index names a file the directory lacks, and a file lacks a tensor the index maps to it
    const SharedTempDir dir;
    write_hf_dir(dir.path(), kTwoFiles, v);
    if (me() == 0) {
      auto index = nlohmann::json::parse(testing::read_bytes(dir / io::kHfIndexFile));
      index["weight_map"]["model.extra.weight"] = "model-00003-of-00003.safetensors";
      index["weight_map"]["model.ghost.weight"] = "model-00001-of-00002.safetensors";
      testing::write_bytes(dir / io::kHfIndexFile, index.dump());
    }
    io::agree_on_errors("");
    expect_error([&] { load_sharded(dir.path(), like(v)); },
                 {"model-00003-of-00003.safetensors", "'model.extra.weight'", "which is not in the directory",
                  "'model-00001-of-00002.safetensors' lacks 'model.ghost.weight'"},
                 "missing file and missing tensor");
  }
  {  // a truncated shard
    const SharedTempDir dir;
    write_hf_dir(dir.path(), kTwoFiles, v);
    if (me() == 0) {
      const std::string path = dir / "model-00002-of-00002.safetensors";
      const std::string bytes = testing::read_bytes(path);
      testing::write_bytes(path, bytes.substr(0, bytes.size() - 10));
    }
    io::agree_on_errors("");
    expect_error([&] { load_sharded(dir.path(), like(v)); }, {"model-00002-of-00002.safetensors"}, "truncated shard");
  }
  {  // the model and the checkpoint differ: every missing, extra and mis-shaped tensor at once
    const SharedTempDir dir;
    write_hf_dir(dir.path(), kTwoFiles, v);
    StateDict target = like(v);
    target.erase("lm_head.weight");
    target.set("model.layers.1.mlp.up_proj.weight", zeros({4, 4}, Placement::all(), sbp::split(0)));
    target.set("model.norm.weight", zeros({5}, Placement::all(), sbp::broadcast));
    expect_error([&] { load_sharded(dir.path(), target); },
                 {"'model.norm.weight' is F32[4] in the checkpoint but F32[5]", "has no tensor 'model.layers.1.mlp.up_proj.weight'",
                  "only in the checkpoint: 'lm_head.weight'", io::kHfIndexFile},
                 "model and checkpoint differ");
  }
  {  // an empty directory
    const SharedTempDir dir;
    expect_error([&] { load_sharded(dir.path(), like(v)); }, {"no checkpoint there"}, "empty directory");
  }
}

}  // namespace
}  // namespace globe
