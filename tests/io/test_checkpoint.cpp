// save/load of single-file checkpoints with 1, 2 and 4 ranks: every layout gathers to the
// destination bit for bit, loads box into any parameter layout, optimizer state round-trips, and
// failures (bad file, full disk, bad directory, divergent ranks) are the same error on every rank
// and never damage an existing checkpoint.
#include <unistd.h>

#include "globe/io/atomic_file.h"
#include "io_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::expect_bit_equal;
using testing::expect_error;
using testing::SharedTempDir;

using testing::me;
using testing::world;

// Global tensors of many layouts with known values (randn is sharding-invariant), plus a local one
// whose value differs per rank (the destination's is saved).
struct Sample {
  StateDict state;
  std::map<std::string, Tensor> full;  // key -> whole value
};

Sample sample() {
  Sample s;
  const Placement all = Placement::all();
  const Placement last = placement("cpu", {world() - 1});
  auto add = [&](const std::string& key, const Shape& shape, const Placement& p, const NdSbp& sbp,
                 DType dt, uint64_t seed) {
    manual_seed(seed);
    s.full[key] = randn(shape, dt);
    manual_seed(seed);
    s.state.set(key, randn(shape, p, sbp, dt));
  };
  add("s0", {5, 3}, all, sbp::split(0), kFloat32, 1);
  add("s1", {5, 3}, all, sbp::split(1), kFloat32, 2);
  add("b", {4}, all, sbp::broadcast, kFloat32, 3);
  add("f64_last", {2, 3, 2}, last, sbp::split(2), kFloat64, 4);
  add("scalar", {}, all, sbp::broadcast, kFloat32, 5);
  add("empty", {0, 4}, all, sbp::split(0), kFloat32, 6);
  if (world() >= 2) add("reversed", {3, 4}, placement("cpu", {1, 0}), sbp::split(1), kFloat32, 7);
  if (world() == 4)
    add("mesh", {5, 6}, placement("cpu", {{0, 1}, {2, 3}}), {sbp::split(0), sbp::split(1)},
        kFloat32, 8);
  // partial_sum: rank r holds (r + 1) * x for an integer-valued x, so the sum is exact in float.
  const Tensor x = reshape(arange(0, 6, 1, kFloat32), {3, 2}) - 2.0;
  double factor = 0;
  for (int r = 0; r < world(); ++r) factor += r + 1;
  s.full["p"] = x * factor;
  s.state.set("p", make_global(x * double(me() + 1), {3, 2}, all, sbp::partial_sum));
  s.full["idx"] = arange(7, kInt64);
  s.state.set("idx", arange(7, all, sbp::split(0)));
  s.state.set("local", full({2}, double(me()), kFloat64));  // differs per rank
  return s;
}

TEST(Checkpoint, EveryLayoutGathersToTheDestination) {
  SharedTempDir dir;
  const Sample s = sample();
  for (int dst : {0, world() - 1})
    for (int src : {0, world() - 1}) {
      const std::string path = dir / ("m" + std::to_string(dst) + ".safetensors");
      save(s.state, path, {.global_dst_rank = dst});
      const StateDict back = load(path, {.global_src_rank = src});
      ASSERT_EQ(back.keys(), s.state.keys());
      for (const auto& [key, t] : back) {
        ASSERT_TRUE(t.is_global()) << key;
        EXPECT_EQ(t.placement(), placement("cpu", {src})) << key;
        EXPECT_EQ(t.sbp(), NdSbp(sbp::broadcast)) << key;
        if (me() != src && t.dim() > 0) {  // (a 0-d shard always has one element)
          EXPECT_EQ(t.to_local().numel(), 0) << key << ": non-source holds data";
        }
        if (key == "local") {
          expect_bit_equal(t, full({2}, double(dst), kFloat64), "local saved from dst");
        } else {
          expect_bit_equal(t, s.full.at(key), key + " dst " + std::to_string(dst));
        }
      }
    }
}

struct Net : nn::Module {
  nn::Linear fc1{6, 5}, fc2{5, 3};
  Net() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
};

TEST(Checkpoint, LoadStateDictBoxesIntoEveryParameterLayout) {
  SharedTempDir dir;
  manual_seed(11);
  Net a;
  a.to_global(Placement::all(), sbp::broadcast);
  save(a.state_dict(), dir / "net.safetensors");
  const std::vector<NdSbp> layouts = {sbp::broadcast, sbp::split(0), sbp::split(-1)};
  for (const NdSbp& layout : layouts) {
    manual_seed(99);  // different initial values
    Net b;
    b.distribute(Placement::all(), {{"fc1.weight", layout}, {"fc2.weight", sbp::split(0)}}, layout);
    b.load_state_dict(load(dir / "net.safetensors"));
    for (const auto& [key, t] : b.state_dict()) {
      EXPECT_EQ(t.placement(), Placement::all()) << key;  // the parameter keeps its layout
      expect_bit_equal(t, a.state_dict().at(key), key + " into " + layout.to_string());
    }
  }
}

// One step of each optimizer, its state saved and loaded into a fresh optimizer: the state arrives
// bit for bit (also into a model of another layout), and the next step gives the same parameters.
TEST(Checkpoint, OptimizerStateRoundTrips) {
  SharedTempDir dir;
  for (int which = 0; which < 2; ++which) {
    const std::string name = which ? " (Adam)" : " (SGD)";
    auto run = [&](Net& m, optim::Optimizer& opt, int step) {
      manual_seed(1000 + step);
      Tensor x = randn({8, 6}, Placement::all(), sbp::split(0));
      Tensor loss = mse_loss(m.forward(x), zeros({8, 3}, Placement::all(), sbp::split(0)));
      loss.backward();
      opt.step();
      opt.zero_grad();
    };
    auto make_opt = [&](Net& m) -> std::unique_ptr<optim::Optimizer> {
      if (which == 0)
        return std::make_unique<optim::SGD>(m.parameters(),
                                            optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
      return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions{.lr = 0.01});
    };
    manual_seed(21);
    Net a;
    a.to_global(Placement::all(), sbp::broadcast);
    auto opt_a = make_opt(a);
    run(a, *opt_a, 0);
    save(a.state_dict(), dir / "model.safetensors");
    save(opt_a->state_dict(), dir / "optim.safetensors");

    manual_seed(77);  // other initial values
    Net b, c;
    b.to_global(Placement::all(), sbp::broadcast);
    c.distribute(Placement::all(), {{"fc1.weight", sbp::split(0)}, {"fc2.weight", sbp::split(1)}},
                 sbp::broadcast);
    auto opt_b = make_opt(b), opt_c = make_opt(c);
    for (auto [m, opt] : {std::pair{&b, opt_b.get()}, std::pair{&c, opt_c.get()}}) {
      m->load_state_dict(load(dir / "model.safetensors"));
      opt->load_state_dict(load(dir / "optim.safetensors"));
      const StateDict want = opt_a->state_dict(), got = opt->state_dict();
      ASSERT_EQ(got.keys(), want.keys()) << name;
      for (const auto& [key, t] : want) expect_bit_equal(got.at(key), t, key + name);
    }
    run(a, *opt_a, 1);
    run(b, *opt_b, 1);
    for (const auto& [key, t] : a.state_dict())
      expect_bit_equal(b.state_dict().at(key), t, key + name);
  }
}

TEST(CheckpointErrors, MismatchedKeysAndShapesThroughLoad) {
  SharedTempDir dir;
  manual_seed(3);
  Net a;
  StateDict sd = a.state_dict();
  StateDict extra = sd, missing, wrong_shape;
  extra.set("fc3.weight", zeros({2}));
  for (const auto& [k, v] : sd)
    if (k != "fc2.bias") missing.set(k, v);
  for (const auto& [k, v] : sd) wrong_shape.set(k, k == "fc1.weight" ? zeros({5, 7}) : v);
  save(extra, dir / "extra.safetensors");
  save(missing, dir / "missing.safetensors");
  save(wrong_shape, dir / "shape.safetensors");
  const StateDict before = a.state_dict();
  expect_error([&] { a.load_state_dict(load(dir / "extra.safetensors")); },
               {"unexpected keys: fc3.weight"}, "extra");
  expect_error([&] { a.load_state_dict(load(dir / "missing.safetensors")); },
               {"missing keys: fc2.bias"}, "missing");
  expect_error([&] { a.load_state_dict(load(dir / "shape.safetensors")); },
               {"fc1.weight", "[5, 7]", "[5, 6]"}, "shape");
  for (const auto& [k, v] : a.state_dict())
    expect_bit_equal(v, before.at(k), k + " unchanged after failed loads");
}

TEST(CheckpointErrors, FailedSavesKeepTheOldFileOnEveryRank) {
  SharedTempDir dir;
  const Sample s = sample();
  const std::string path = dir / "keep.safetensors";
  save(s.state, path);
  const std::string good = me() == 0 ? testing::read_bytes(path) : "";
  StateDict other;
  other.set("x", ones({64, 64}, Placement::all(), sbp::split(0)));
  other.set("y", ones({64, 64}, Placement::all(), sbp::split(1)));
  // A full disk on the destination (injected): every rank gets its error, naming file and tensor.
  const int dst = world() - 1;
  if (me() == dst) io::set_write_fault_after(64 * 64 * 4 + 1000);  // header + x fit, y does not
  expect_error(
      [&] { save(other, path, {.global_dst_rank = dst}); },
      {path, "tensor 'y'", "No space left on device", "(rank " + std::to_string(dst) + ")"},
      "full disk");
  io::set_write_fault_after(-1);
  // A directory that cannot hold the file (its parent is a regular file; root ignores permissions).
  expect_error([&] { save(other, path + "/sub.safetensors"); },
               {path + "/sub.safetensors", "Not a directory"}, "unwritable directory");
  expect_error([&] { save(other, dir / "no/such/dir/x.safetensors"); },
               {"no/such/dir", "No such file"}, "missing directory");
  if (::geteuid() != 0) {  // permissions bind only non-root users
    if (me() == 0)
      testing::fs::permissions(dir.path(),
                               testing::fs::perms::owner_read | testing::fs::perms::owner_exec);
    expect_error([&] { save(other, path); }, {path, "Permission denied"}, "read-only directory");
    if (me() == 0) testing::fs::permissions(dir.path(), testing::fs::perms::owner_all);
  }
  expect_error([&] { save(other, path, {.global_dst_rank = world()}); },
               {"global_dst_rank", "outside the world"}, "bad destination");
  if (me() == 0) {
    EXPECT_EQ(testing::read_bytes(path), good) << "the old checkpoint changed";
    std::vector<std::string> files = testing::list_dir(dir.path());
    EXPECT_EQ(files, std::vector<std::string>{"keep.safetensors"}) << "temporary files left behind";
  }
  const StateDict back = load(path);
  expect_bit_equal(back.at("s0"), s.full.at("s0"), "old checkpoint still loads");
}

TEST(CheckpointErrors, BadFileIsTheSameErrorOnEveryRank) {
  SharedTempDir dir;
  const std::string path = dir / "bad.safetensors";
  if (me() == 0)
    testing::write_bytes(path, std::string("\x10\0\0\0\0\0\0\0{\"a\": oops}     ", 24));
  expect_error([&] { load(path); }, {path, "not valid JSON", "(rank 0)"}, "bad JSON");
  expect_error([&] { load(dir / "missing.safetensors", {.global_src_rank = world() - 1}); },
               {dir / "missing.safetensors", "No such file"}, "missing file");
}

TEST(CheckpointErrors, DivergentRanksAreReported) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  SharedTempDir dir;
  StateDict sd;
  sd.set("x", ones({4}, Placement::all(), sbp::split(0)));
  // Rank 1 loads while the others save: everyone learns, nobody hangs.
  expect_error(
      [&] {
        if (me() == 1)
          load(dir / "x.safetensors");
        else
          save(sd, dir / "x.safetensors");
      },
      {"[consistency]", "diverged"}, "save vs load");
  // Different state dicts (a key only rank 0 has) are caught before anything is written.
  StateDict uneven = sd;
  if (me() == 0) uneven.set("only_on_rank0", zeros({1}));
  expect_error([&] { save(uneven, dir / "x.safetensors"); }, {"[consistency]", "save"},
               "different keys");
  if (me() == 0) {
    EXPECT_FALSE(testing::fs::exists(dir / "x.safetensors"));
  }
}

}  // namespace
}  // namespace globe
