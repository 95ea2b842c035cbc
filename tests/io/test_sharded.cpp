// Sharded checkpoints with 1, 2 and 4 ranks: saved with the run's world, loaded into every layout
// (split on each axis, broadcast, partial_sum, sub-placements, reversed rank order, 2-D meshes) bit
// for bit; each rank reads only its part; re-saves replace atomically; bad input fails everywhere.
// CrossWorld.* run as a CTest fixture: saved by 2 ranks, loaded by 1, 2 and 4
// (GLOBE_IO_XWORLD_DIR).
#include <cstdlib>

#include "globe/io/atomic_file.h"
#include "globe/io/sharded_index.h"
#include "io_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::expect_bit_equal;
using testing::expect_error;
using testing::SharedTempDir;

using testing::me;
using testing::world;

Placement reversed_all() {
  std::vector<int> r;
  for (int i = world() - 1; i >= 0; --i) r.push_back(i);
  return placement("cpu", r);
}

// Layouts to load a tensor of `ndim` dims into, for the current world.
std::vector<TensorLayout> target_layouts(int64_t ndim) {
  const Placement all = Placement::all();
  std::vector<TensorLayout> v;
  for (int64_t d = 0; d < ndim; ++d) v.push_back({all, sbp::split(d)});
  v.push_back({all, sbp::broadcast});
  v.push_back({all, sbp::partial_sum});
  v.push_back({placement("cpu", {0}), sbp::broadcast});
  if (ndim > 0) {
    v.push_back({placement("cpu", {world() - 1}), sbp::split(0)});
    v.push_back({reversed_all(), sbp::split(ndim - 1)});
  }
  if (world() == 4) {
    const Placement mesh = placement("cpu", {{0, 1}, {2, 3}}),
                    odd = placement("cpu", {{3, 1}, {0, 2}});
    v.push_back({mesh, {sbp::broadcast, sbp::broadcast}});
    v.push_back({mesh, {sbp::partial_sum, sbp::broadcast}});
    if (ndim > 0) {
      v.push_back({mesh, {sbp::split(0), sbp::split(ndim - 1)}});
      v.push_back({mesh, {sbp::broadcast, sbp::split(0)}});
      v.push_back({mesh, {sbp::split(ndim - 1), sbp::partial_sum}});
      v.push_back({odd, {sbp::split(0), sbp::split(0)}});
    }
  }
  return v;
}

struct Saved {
  StateDict state;
  std::map<std::string, Tensor> full;
};

// Tensors in the layouts of a run with `world()` ranks, and their whole values (randn is
// sharding-invariant; the partial_sum summands are integers, so their sum is exact).
Saved make_state(double scale = 1.0) {
  Saved s;
  const Placement all = Placement::all();
  auto add = [&](const std::string& key, const Shape& shape, const Placement& p, const NdSbp& sbp,
                 DType dt, uint64_t seed) {
    manual_seed(seed);
    s.full[key] = randn(shape, dt) * scale;
    manual_seed(seed);
    s.state.set(key, randn(shape, p, sbp, dt) * scale);
  };
  add("w", {7, 5}, all, sbp::split(0), kFloat32, 1);
  add("t", {4, 6}, reversed_all(), sbp::split(1), kFloat32, 2);
  add("b", {3, 4}, all, sbp::broadcast, kFloat32, 3);
  add("d", {9}, placement("cpu", {world() - 1}), sbp::split(0), kFloat64, 4);
  add("s", {}, all, sbp::broadcast, kFloat32, 5);
  add("e", {0, 3}, all, sbp::split(0), kFloat32, 6);
  if (world() == 4)
    add("mesh", {5, 6}, placement("cpu", {{0, 1}, {2, 3}}), {sbp::split(0), sbp::split(1)},
        kFloat32, 7);
  else
    add("mesh", {5, 6}, all, sbp::split(1), kFloat32, 7);
  const Tensor x = (reshape(arange(0, 6, 1, kFloat32), {3, 2}) - 2.0) * scale;
  double factor = 0;
  for (int r = 0; r < world(); ++r) factor += r + 1;
  s.full["p"] = x * factor;
  s.state.set("p", make_global(x * double(me() + 1), {3, 2}, all, sbp::partial_sum));
  s.full["i"] = arange(10, kInt64);
  s.state.set("i", arange(10, all, sbp::split(0)));
  s.full["step"] = from_vector(std::vector<int64_t>{42}, {});
  s.state.set("step", s.full["step"]);  // a local tensor
  return s;
}

class Sharded : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<SharedTempDir>();
    saved_ = make_state();
    save_sharded(saved_.state, path(), {.metadata = {{"note", "test"}}});
  }
  void TearDown() override { dir_.reset(); }
  const std::string& path() const { return dir_->path(); }

  std::unique_ptr<SharedTempDir> dir_;
  Saved saved_;
};

TEST_F(Sharded, LoadsIntoEveryLayoutBitExact) {
  for (const auto& [key, full] : saved_.full) {
    if (key == "step") continue;
    for (const TensorLayout& layout : target_layouts(full.dim())) {
      const std::string what =
          key + " -> " + layout.placement.to_string() + " " + layout.sbp.to_string();
      const StateDict got = load_sharded(path(), {{key, layout}});
      ASSERT_EQ(got.keys(), std::vector<std::string>{key}) << what;
      const Tensor& t = got.at(key);
      ASSERT_TRUE(t.is_global()) << what;
      EXPECT_EQ(t.placement(), layout.placement) << what;
      EXPECT_EQ(t.sbp(),
                normalize_sbp(layout.sbp, full.dim(), layout.placement.mesh_ndim(), "test"))
          << what;
      expect_bit_equal(t, full, what);
    }
  }
}

TEST_F(Sharded, LoadsLikeATargetStateDict) {
  StateDict like;
  for (const auto& [key, t] : saved_.state) {
    if (!t.is_global())
      like.set(key, t);
    else
      like.set(key, zeros(t.shape(), Placement::all(),
                          t.dim() > 0 ? NdSbp(sbp::split(-1)) : NdSbp(sbp::broadcast), t.dtype()));
  }
  const StateDict got = load_sharded(path(), like);
  ASSERT_EQ(got.keys(), like.keys());
  for (const auto& [key, t] : got) {
    EXPECT_EQ(t.is_global(), like.at(key).is_global()) << key;
    if (t.is_global()) {
      EXPECT_EQ(t.sbp(), like.at(key).sbp()) << key;
    }
    expect_bit_equal(t, saved_.full.at(key), key);
  }
  // Everything as whole values: broadcast on all ranks; the local tensor stays local.
  const StateDict all = load_sharded(path());
  ASSERT_EQ(all.keys(), saved_.state.keys());
  for (const auto& [key, t] : all) {
    if (key == "step") {
      EXPECT_FALSE(t.is_global());
    } else {
      EXPECT_EQ(t.placement(), Placement::all()) << key;
    }
    expect_bit_equal(t, saved_.full.at(key), key);
  }
}

TEST_F(Sharded, ReplicatedBlocksAreWrittenOnceByTheLowestHolder) {
  const io::ShardedIndex index = io::read_index(path(), "test");
  EXPECT_EQ(index.world_size, world());
  EXPECT_EQ(index.metadata.at("note"), "test");
  auto chunks_of = [&](const std::string& key) { return index.find(key)->chunks; };
  ASSERT_EQ(chunks_of("b").size(), 1u);
  EXPECT_EQ(chunks_of("b")[0].file.rfind("rank-00000-", 0), 0u);
  ASSERT_EQ(chunks_of("p").size(), 1u);  // summed, then written once
  ASSERT_EQ(chunks_of("step").size(), 1u);
  EXPECT_TRUE(index.find("step")->local);
  EXPECT_EQ(chunks_of("d")[0].file.rfind("rank-0000" + std::to_string(world() - 1) + "-", 0), 0u);
  EXPECT_EQ(chunks_of("w").size(), size_t(world()));
  EXPECT_EQ(chunks_of("e").size(), 0u);  // nothing to write
  if (me() == 0) {
    // One file per writing rank, plus the index; nothing else.
    std::vector<std::string> want = index.files();
    want.push_back("index.json");
    std::sort(want.begin(), want.end());
    EXPECT_EQ(testing::list_dir(path()), want);
  }
}

TEST_F(Sharded, EachRankReadsOnlyItsPart) {
  StateDict big;
  big.set("big", randn({4000, 16}, Placement::all(), sbp::split(0)));
  save_sharded(big, path() + "/big");
  const uint64_t before = io::bytes_read_total();
  load_sharded(path() + "/big", {{"big", {Placement::all(), sbp::split(0)}}});
  const uint64_t read = io::bytes_read_total() - before, data = 4000 * 16 * 4;
  EXPECT_LE(read, data / uint64_t(world()) + 8192)
      << "rank " << me() << " read " << read << " of " << data;
  EXPECT_GE(read, data / uint64_t(world()));
}

TEST_F(Sharded, ResaveReplacesAtomically) {
  const std::vector<std::string> old_files =
      me() == 0 ? testing::list_dir(path()) : std::vector<std::string>{};
  // A failed save (full disk on the last rank) leaves the old checkpoint as it was.
  const Saved doubled = make_state(2.0);
  if (me() == world() - 1) io::set_write_fault_after(200);
  expect_error([&] { save_sharded(doubled.state, path()); }, {"No space left on device", path()},
               "full disk");
  io::set_write_fault_after(-1);
  if (me() == 0) {
    EXPECT_EQ(testing::list_dir(path()), old_files);
  }
  expect_bit_equal(load_sharded(path()).at("w"), saved_.full.at("w"),
                   "old checkpoint after failed save");
  // A successful one replaces it, and the old files go (with leftovers of a crashed save).
  if (me() == 0)
    testing::write_bytes(path() + "/rank-00001-deadbeef.safetensors.tmp.99.0", "partial");
  save_sharded(doubled.state, path());
  expect_bit_equal(load_sharded(path()).at("w"), doubled.full.at("w"), "new checkpoint");
  if (me() == 0) {
    EXPECT_FALSE(testing::fs::exists(path() + "/rank-00001-deadbeef.safetensors.tmp.99.0"));
    for (const std::string& f : old_files)
      if (f != "index.json") {
        EXPECT_FALSE(testing::fs::exists(path() + "/" + f)) << f << " not cleaned up";
      }
  }
}

TEST_F(Sharded, BadInputIsAClearErrorEverywhere) {
  const TensorLayout b{Placement::all(), sbp::broadcast};
  expect_error([&] { load_sharded(path() + "/nope"); },
               {path() + "/nope/index.json", "No such file"}, "no dir");
  expect_error(
      [&] {
        load_sharded(path(), {{"nokey", b}});
      },
      {"has no tensor 'nokey'", path()}, "missing key");
  expect_error(
      [&] {
        load_sharded(path(), {{"s", {Placement::all(), sbp::split(0)}}});
      },
      {"tensor 's'", "cannot take the layout"}, "bad layout");
  StateDict like;
  like.set("w", zeros({5, 7}, Placement::all(), sbp::broadcast));
  expect_error([&] { load_sharded(path(), like); }, {"tensor 'w'", "[7, 5]", "[5, 7]"},
               "shape mismatch");
  // Every difference is named at once: each tensor of another shape, each one missing, and the
  // checkpoint's tensors the target lacks.
  like.set("extra", zeros({2}, Placement::all(), sbp::broadcast));
  expect_error([&] { load_sharded(path(), like); },
               {"tensor 'w' is F32[7, 5] in the checkpoint but F32[5, 7] in the target;", "has no tensor 'extra';",
                "only in the checkpoint: '"},
               "every mismatch");
  // A missing chunk file: every rank fails, naming it.
  const io::ShardedIndex index = io::read_index(path(), "test");
  const std::string victim = index.find("d")->chunks[0].file;
  if (me() == 0) testing::fs::rename(path() + "/" + victim, path() + "/moved");
  expect_error([&] { load_sharded(path()); }, {victim, "No such file"}, "missing chunk file");
  if (me() == 0) testing::fs::rename(path() + "/moved", path() + "/" + victim);
  // A corrupt index.
  const std::string good = testing::read_bytes(path() + "/index.json");
  if (me() == 0) testing::write_bytes(path() + "/index.json", good.substr(0, good.size() / 2));
  expect_error([&] { load_sharded(path()); }, {"index.json", "not valid JSON"}, "corrupt index");
  if (me() == 0) testing::write_bytes(path() + "/index.json", good);
  expect_bit_equal(load_sharded(path()).at("d"), saved_.full.at("d"), "restored");
}

// ---- across world sizes (CTest fixture: saved with 2 ranks, loaded with 1, 2, 4) ----------------

const char* xworld_dir() {
  return std::getenv("GLOBE_IO_XWORLD_DIR");
}

// A state as a 2-rank run lays it out, and its values.
Saved two_rank_state() {
  Saved s;
  manual_seed(1);
  s.full["w"] = randn({7, 5});
  manual_seed(2);
  s.full["t"] = randn({4, 6}, kFloat64);
  manual_seed(3);
  s.full["b"] = randn({3, 4});
  s.full["p"] = (reshape(arange(0, 6, 1, kFloat32), {3, 2}) - 2.0) * 3.0;  // rank 0: x, rank 1: 2x
  s.full["step"] = from_vector(std::vector<int64_t>{7}, {});
  if (world() != 2) return s;
  const Placement p = placement("cpu", {0, 1}), rev = placement("cpu", {1, 0});
  manual_seed(1);
  s.state.set("w", randn({7, 5}, p, sbp::split(0)));
  manual_seed(2);
  s.state.set("t", randn({4, 6}, rev, sbp::split(1), kFloat64));
  manual_seed(3);
  s.state.set("b", randn({3, 4}, p, sbp::broadcast));
  const Tensor x = reshape(arange(0, 6, 1, kFloat32), {3, 2}) - 2.0;
  s.state.set("p", make_global(x * double(me() + 1), {3, 2}, p, sbp::partial_sum));
  s.state.set("step", s.full["step"]);
  return s;
}

TEST(CrossWorld, Save) {
  if (!xworld_dir()) GTEST_SKIP() << "GLOBE_IO_XWORLD_DIR not set (run by the CTest fixture)";
  ASSERT_EQ(world(), 2) << "the fixture saves with 2 ranks";
  if (me() == 0) testing::fs::remove_all(xworld_dir());
  io::agree_on_errors("");
  save_sharded(two_rank_state().state, xworld_dir());
}

TEST(CrossWorld, Load) {
  if (!xworld_dir()) GTEST_SKIP() << "GLOBE_IO_XWORLD_DIR not set (run by the CTest fixture)";
  const Saved s = two_rank_state();
  for (const auto& [key, full] : s.full) {
    if (key == "step") continue;
    for (const TensorLayout& layout : target_layouts(full.dim()))
      expect_bit_equal(load_sharded(xworld_dir(), {{key, layout}}).at(key), full,
                       key + " -> " + layout.placement.to_string() + " " + layout.sbp.to_string());
  }
  const StateDict all = load_sharded(xworld_dir());
  EXPECT_EQ(all.at("step").item<int64_t>(), 7);
}

}  // namespace
}  // namespace globe
