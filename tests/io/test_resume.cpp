// Resuming from a checkpoint is exact: train N steps, save model + optimizer, restore them into a
// fresh model and optimizer, train M more — the losses equal an uninterrupted N + M run bit for
// bit, with both checkpoint formats. A small MLP, data parallel (parameters B, data S(0)); each
// step's data comes from manual_seed(base + step), so a resumed run draws the same numbers.
//   Resume.InProcess       both halves in one process (a fresh model stands for the new launch)
//   Resume.Phase1/Phase2   two launches (CTest fixture, GLOBE_IO_RESUME_DIR): the first trains,
//                          saves and records the reference losses, the second resumes and compares
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "io_test_util.h"

namespace globe {
namespace {

using testing::SharedTempDir;

constexpr int kFirst = 4, kMore = 3;
constexpr uint64_t kDataSeed = 5000;

// Seeds the generator before the layers below are built (bases initialise before members).
struct Seeded {
  explicit Seeded(uint64_t seed) { manual_seed(seed); }
};

struct Mlp : Seeded, nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 4};
  explicit Mlp(uint64_t seed) : Seeded(seed) {
    register_modules({{"fc1", fc1}, {"fc2", fc2}});
    to_global(Placement::all(), sbp::broadcast);
  }
  Tensor forward(const Tensor& x) { return fc2(relu(fc1(x))); }
};

struct Trainer {
  explicit Trainer(uint64_t init_seed) : model(init_seed), opt(model.parameters(), {.lr = 0.01}) {}
  float step(int i) {
    manual_seed(kDataSeed + uint64_t(i));
    const Tensor x = randn({16, 8}, Placement::all(), sbp::split(0));
    const Tensor y = randn({16, 4}, Placement::all(), sbp::split(0));
    Tensor loss = mse_loss(model.forward(x), y);
    loss.backward();
    opt.step();
    opt.zero_grad();
    return loss.item<float>();
  }
  Mlp model;
  optim::Adam opt;
};

std::vector<float> uninterrupted() {
  Trainer t(1);
  std::vector<float> losses;
  for (int i = 0; i < kFirst + kMore; ++i) losses.push_back(t.step(i));
  return losses;
}

void save_both(const Trainer& t, const std::string& dir) {
  save(t.model.state_dict(), dir + "/model.safetensors");
  save(t.opt.state_dict(), dir + "/optim.safetensors");
  save_sharded(t.model.state_dict(), dir + "/model_sharded");
  save_sharded(t.opt.state_dict(), dir + "/optim_sharded");
}

// A fresh trainer (other initial values) restored from `dir` in one format, then kMore steps.
std::vector<float> resume(const std::string& dir, bool sharded) {
  Trainer t(999);
  if (sharded) {
    t.model.load_state_dict(load_sharded(dir + "/model_sharded", t.model.state_dict()));
    t.opt.load_state_dict(
        load_sharded(dir + "/optim_sharded"));  // no state yet to take layouts from
  } else {
    t.model.load_state_dict(load(dir + "/model.safetensors"));
    t.opt.load_state_dict(load(dir + "/optim.safetensors"));
  }
  std::vector<float> losses;
  for (int i = kFirst; i < kFirst + kMore; ++i) losses.push_back(t.step(i));
  return losses;
}

void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    EXPECT_EQ(a, b) << what << " step " << kFirst + i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(Resume, InProcess) {
  SharedTempDir dir;
  const std::vector<float> reference = uninterrupted();
  Trainer first(1);
  std::vector<float> head;
  for (int i = 0; i < kFirst; ++i) head.push_back(first.step(i));
  expect_bits_equal(head, {reference.begin(), reference.begin() + kFirst}, "first half");
  save_both(first, dir.path());
  const std::vector<float> tail(reference.begin() + kFirst, reference.end());
  expect_bits_equal(resume(dir.path(), false), tail, "resumed from one file");
  expect_bits_equal(resume(dir.path(), true), tail, "resumed from a sharded checkpoint");
  // And the losses do change from step to step: the comparison has something to catch.
  EXPECT_NE(reference.front(), reference.back());
}

const char* resume_dir() {
  return std::getenv("GLOBE_IO_RESUME_DIR");
}

TEST(Resume, Phase1TrainAndSave) {
  if (!resume_dir()) GTEST_SKIP() << "GLOBE_IO_RESUME_DIR not set (run by the CTest fixture)";
  const std::string dir = resume_dir();
  if (dist::world_rank() == 0) {
    testing::fs::remove_all(dir);
    testing::fs::create_directories(dir);
  }
  io::agree_on_errors("");
  const std::vector<float> reference = uninterrupted();
  Trainer first(1);
  for (int i = 0; i < kFirst; ++i) first.step(i);
  save_both(first, dir);
  if (dist::world_rank() == 0) {
    nlohmann::json j = nlohmann::json::array();
    for (float f : reference) {
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      j.push_back(bits);
    }
    testing::write_bytes(dir + "/reference_losses.json", j.dump());
  }
}

TEST(Resume, Phase2ResumeInANewLaunch) {
  if (!resume_dir()) GTEST_SKIP() << "GLOBE_IO_RESUME_DIR not set (run by the CTest fixture)";
  const std::string dir = resume_dir();
  std::vector<float> tail;
  const nlohmann::json j =
      nlohmann::json::parse(testing::read_bytes(dir + "/reference_losses.json"));
  for (size_t i = kFirst; i < j.size(); ++i) {
    const uint32_t bits = j[i].get<uint32_t>();
    float f;
    std::memcpy(&f, &bits, 4);
    tail.push_back(f);
  }
  expect_bits_equal(resume(dir, false), tail, "new launch, one file");
  expect_bits_equal(resume(dir, true), tail, "new launch, sharded");
}

}  // namespace
}  // namespace globe
