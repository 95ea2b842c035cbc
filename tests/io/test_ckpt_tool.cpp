// globe-ckpt as a user runs it (a plain process, no launcher): ls, verify (each kind of damage is
// reported with exit code 1 and names the problem), merge and split (round trips are exact).
#include <sys/wait.h>

#include <cstdio>
#include <functional>

#include "globe/io/sharded_index.h"
#include "io_test_util.h"

namespace globe {
namespace {

using testing::expect_bit_equal;
using testing::SharedTempDir;

struct ToolRun {
  int code;
  std::string out;  // stdout + stderr
};

ToolRun ckpt(const std::string& args) {
  const std::string cmd = std::string(GLOBE_CKPT_BIN) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ToolRun r{-1, ""};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

StateDict sample() {
  manual_seed(4);
  StateDict sd;
  sd.set("w", randn({7, 5}));
  sd.set("d", randn({3}, kFloat64));
  sd.set("i", arange(5, kInt64));
  sd.set("s", from_vector(std::vector<float>{1.5f}, {}));
  sd.set("e", zeros({0, 2}));
  return sd;
}

class CkptTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (dist::world_size() > 1) GTEST_SKIP() << "runs as a plain process";
    file_ = dir_ / "model.safetensors";
    save(sample(), file_, {.global_dst_rank = 0, .metadata = {{"epoch", "2"}}});
  }
  SharedTempDir dir_;
  std::string file_;
};

TEST_F(CkptTool, LsShowsKeysDtypesShapesSizes) {
  const ToolRun r = ckpt("ls " + file_);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* part :
       {"5 tensors", "w", "F32", "[7, 5]", "140 B", "F64", "I64", "[0, 2]", "epoch = 2"})
    EXPECT_TRUE(has(r.out, part)) << part << " not in:\n" << r.out;
  ASSERT_EQ(ckpt("split " + file_ + " " + (dir_ / "sh") + " --ranks 3 --sbp split0").code, 0);
  const ToolRun d = ckpt("ls " + (dir_ / "sh"));
  EXPECT_EQ(d.code, 0) << d.out;
  for (const char* part :
       {"sharded checkpoint saved by 3 rank(s)", "5 tensors", "chunks", "[7, 5]"})
    EXPECT_TRUE(has(d.out, part)) << part << " not in:\n" << d.out;
}

TEST_F(CkptTool, SplitAndMergeRoundTripExactly) {
  for (const char* layout : {"split0", "broadcast"})
    for (int ranks : {1, 2, 4, 9}) {
      const std::string sh = dir_ / ("sh_" + std::string(layout) + std::to_string(ranks));
      const ToolRun s = ckpt("split " + file_ + " " + sh + " --ranks " + std::to_string(ranks) +
                             " --sbp " + layout);
      ASSERT_EQ(s.code, 0) << s.out;
      EXPECT_EQ(ckpt("verify " + sh).code, 0);
      // Loads as a sharded checkpoint...
      const StateDict loaded = load_sharded(sh);
      for (const auto& [key, t] : sample()) expect_bit_equal(loaded.at(key), t, key + " via " + sh);
      // ...and merges back into the very same bytes.
      const ToolRun m = ckpt("merge " + sh + " " + sh + ".safetensors");
      ASSERT_EQ(m.code, 0) << m.out;
      EXPECT_EQ(testing::read_bytes(sh + ".safetensors"), testing::read_bytes(file_)) << sh;
    }
}

TEST_F(CkptTool, VerifyReportsTheFirstProblem) {
  EXPECT_EQ(ckpt("verify " + file_).code, 0);
  // A damaged single file.
  const std::string bytes = testing::read_bytes(file_);
  testing::write_bytes(dir_ / "cut.safetensors", bytes.substr(0, bytes.size() - 3));
  ToolRun r = ckpt("verify " + (dir_ / "cut.safetensors"));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "exceed the data section") && has(r.out, "cut.safetensors")) << r.out;

  // Damaged sharded checkpoints: each starts from a fresh split.
  struct Damage {
    std::string name;
    std::function<void(const std::string& dir, io::ShardedIndex& index)> apply;
    std::vector<std::string> expect;
  };
  const std::vector<Damage> damages = {
      {"missing file",
       [](const std::string& d, io::ShardedIndex& ix) {
         testing::fs::remove(d + "/" + ix.files()[1]);
       },
       {"No such file"}},
      {"hole",
       [](const std::string&, io::ShardedIndex& ix) { ix.tensors[0].chunks.pop_back(); },
       {"tensor 'w'", "some part of the tensor is in no file"}},
      {"overlap",
       [](const std::string&, io::ShardedIndex& ix) { ix.tensors[0].chunks[1].offsets[0] -= 1; },
       {"tensor 'w'", "overlap"}},
      {"outside",
       [](const std::string&, io::ShardedIndex& ix) { ix.tensors[0].chunks[1].shape[1] = 6; },
       {"tensor 'w'", "outside the tensor"}},
      {"wrong chunk shape",
       [](const std::string&, io::ShardedIndex& ix) {
         auto& c = ix.tensors[0]
                       .chunks;  // swap two chunks' extents: the tiling holds, the files disagree
         c[0].shape[0] += 1;
         c[1].offsets[0] += 1;
         c[1].shape[0] -= 1;
       },
       {"tensor 'w'", "but the index says"}},
      {"unnamed tensor",
       [](const std::string&, io::ShardedIndex& ix) { ix.tensors.erase(ix.tensors.begin() + 2); },
       {"which the index does not name"}},
      {"bad file name",
       [](const std::string&, io::ShardedIndex& ix) { ix.tensors[0].chunks[0].file = "../x"; },
       {"not a plain file name"}},
  };
  for (const Damage& d : damages) {
    const std::string sh = dir_ / ("bad_" + std::to_string(&d - damages.data()));
    ASSERT_EQ(ckpt("split " + file_ + " " + sh + " --ranks 3 --sbp split0").code, 0);
    io::ShardedIndex index = io::read_index(sh, "test");
    d.apply(sh, index);
    testing::write_bytes(sh + "/index.json", io::encode_index(index));
    r = ckpt("verify " + sh);
    EXPECT_EQ(r.code, 1) << d.name << ": " << r.out;
    for (const std::string& part : d.expect)
      EXPECT_TRUE(has(r.out, part)) << d.name << ": " << r.out;
  }
}

TEST_F(CkptTool, UsageErrors) {
  EXPECT_EQ(ckpt("").code, 2);
  EXPECT_EQ(ckpt("frobnicate x").code, 2);
  EXPECT_EQ(ckpt("split " + file_ + " " + (dir_ / "x") + " --ranks 0 --sbp split0").code, 2);
  EXPECT_EQ(ckpt("split " + file_ + " " + (dir_ / "x") + " --ranks 2 --sbp split1").code, 2);
  const ToolRun r = ckpt("ls " + (dir_ / "missing"));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "No such file")) << r.out;
  EXPECT_EQ(ckpt("--help").code, 0);
}

}  // namespace
}  // namespace globe
