// The default generator before and after manual_seed (core/random.h), in a binary of its own
// because it needs a process that has not been seeded yet. Runs with 1 process and under
// globe-launch with 2 and 4 ranks:
//   - unseeded, a local random tensor differs per rank (OneFlow's and PyTorch's behaviour), and
//     rank 0's is what a process started alone draws, so runs repeat;
//   - a global random tensor is the same on every rank and in every layout, seeded or not;
//   - after manual_seed(s) every rank draws the same local stream.
#include <gtest/gtest.h>

#include <vector>

#include "global_test_util.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::world;

// Every rank's local tensor, in rank order (collective): the pieces of a split(0) tensor.
std::vector<std::vector<float>> pieces_of(const Tensor& local) {
  std::vector<float> all = unsqueeze(local, 0).to_global(Placement::all(), sbp::split(0)).to_vector<float>();
  std::vector<std::vector<float>> out;
  const size_t n = size_t(local.numel());
  for (int r = 0; r < world(); ++r) out.emplace_back(all.begin() + r * n, all.begin() + (r + 1) * n);
  return out;
}

std::vector<float> normals(uint64_t seed, uint64_t call, int64_t n) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(normal_at(RandomStream{seed, call}, uint64_t(i)));
  return v;
}

TEST(DefaultGenerator, LocalStreamsDifferPerRankUntilSeededGlobalOnesNever) {
  constexpr uint64_t kDefaultSeed = 0x5eed;
  // Call 0: a local tensor. Rank 0 draws the default stream, as a process alone does.
  const auto local = pieces_of(randn({6}));
  EXPECT_EQ(local[0], normals(kDefaultSeed, 0, 6));
  for (int r = 1; r < world(); ++r)
    for (int q = 0; q < r; ++q) EXPECT_NE(local[r], local[q]) << "ranks " << q << " and " << r;
  // A local dropout mask differs per rank too.
  const auto masks = pieces_of(dropout(ones({64}), 0.5, true));
  for (int r = 1; r < world(); ++r) EXPECT_NE(masks[r], masks[0]) << "rank " << r;
  // Call 2: a global tensor is sharding-invariant, seeded or not: its whole value is the default
  // stream's in any layout.
  for (const Sbp& s : {sbp::split(0), sbp::broadcast}) {
    Tensor g = randn({2 * int64_t(world()) + 1}, Placement::all(), s);
    EXPECT_EQ(g.to_vector<float>(), normals(kDefaultSeed, 2 + (s.is_split() ? 0 : 1), g.numel())) << s.to_string();
  }
  // Seeded: every rank draws the same local stream (the seed's), and global ones keep theirs.
  manual_seed(7);
  const auto seeded = pieces_of(randn({6}));
  for (int r = 0; r < world(); ++r) EXPECT_EQ(seeded[r], normals(7, 0, 6)) << "rank " << r;
  const auto seeded_masks = pieces_of(dropout(ones({64}), 0.5, true));
  for (int r = 1; r < world(); ++r) EXPECT_EQ(seeded_masks[r], seeded_masks[0]) << "rank " << r;
  EXPECT_EQ(randn({5}, Placement::all(), sbp::split(0)).to_vector<float>(), normals(7, 2, 5));
}

}  // namespace
}  // namespace globe
