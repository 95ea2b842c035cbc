// Divergence fingerprints (globe/dist/fingerprint.h, docs/design.md §13.1), always on, consistency
// mode off. The history comparison on exact values in one process; then, under globe-launch, ranks
// whose global ops differ before a collective of each kind and size (the data travelling in the
// stamps, or the stamps beside it), and ranks that issue collectives of different kinds at once:
// every rank must throw the divergence error, none may return a value or wait for GLOBE_TIMEOUT.
// Each such case leaves its placement's histories apart, so CTest runs each in a process of its
// own (--gtest_filter); the cases where nothing diverges run together.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <iostream>

#include "globe/dist/fingerprint.h"
#include "globe/globe.h"
#include "globe/global/op_history.h"

namespace globe {
namespace {

int me() { return dist::world_rank(); }
int world() { return dist::world_size(); }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- one process --------------------------------------------------------------------------

TEST(OpHistory, FirstDifferenceNamesTheOpsLikeConsistencyMode) {
  dist::OpHistory a("placement(cpu, [0, 1])"), b("placement(cpu, [0, 1])");
  for (auto* h : {&a, &b}) {
    h->record("randn", 1);
    h->record("matmul", 2);
  }
  EXPECT_EQ(a.hash(), b.hash());
  a.record("mul_scalar", 3);
  a.record("sum", 4);
  b.record("sum", 4);
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_EQ(dist::OpHistory::first_difference(a.serialize(), 0, b.serialize(), 1),
            "global op #3 on placement(cpu, [0, 1]): this rank (0) runs #3 (mul_scalar) but rank 1 runs #3 (sum)");
  // The same name with other shapes or layouts (another detail hash).
  dist::OpHistory c("placement(cpu, [0, 1])"), d("placement(cpu, [0, 1])");
  c.record("matmul", 7);
  d.record("matmul", 8);
  EXPECT_EQ(dist::OpHistory::first_difference(c.serialize(), 1, d.serialize(), 0),
            "global op #1 on placement(cpu, [0, 1]): this rank (1) runs #1 (matmul) but rank 0 runs #1 (matmul) with "
            "other shapes or layouts");
  // One rank ran an op more; and the ops are older than the log.
  dist::OpHistory e("p"), f("p");
  for (int i = 0; i < 100; ++i) {
    e.record("add", 1);
    f.record("add", 1);
  }
  f.record("exp", 2);
  EXPECT_EQ(dist::OpHistory::first_difference(e.serialize(), 0, f.serialize(), 1),
            "global op #101 on p: this rank (0) runs no op #101 (its last is #100) but rank 1 runs #101 (exp)");
  // Histories of different placements.
  EXPECT_EQ(dist::OpHistory::first_difference(a.serialize(), 0, e.serialize(), 1),
            "this rank (0) runs #4 (sum) on placement(cpu, [0, 1]) but rank 1 runs #100 (add) on p");
}

// ---- under globe-launch -------------------------------------------------------------------

class Fingerprints : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world() < 2) GTEST_SKIP() << "runs with 2 or more ranks";
    dist::set_consistency_checks(false);
    ASSERT_TRUE(dist::fingerprints()) << "fingerprints are on by default";
  }
};

// Rank `odd` runs one op more on p (an op with no communication), then every rank runs `collective`;
// every rank must throw the divergence error naming the extra op and rank `odd`.
void expect_every_rank_fails(const Placement& p, const std::function<Tensor()>& collective, int odd = 0) {
  manual_seed(5);
  Tensor scratch = randn({4, 4}, p, sbp::split(0));
  if (me() == odd) scratch = mul(scratch, 2.0);  // the bug: one rank doubles, the others do not
  bool returned = false;
  std::string msg;
  try {
    Tensor out = collective();
    returned = true;
  } catch (const Error& e) {
    msg = e.what();
  }
  std::cout << "rank " << me() << ": " << msg << std::endl;  // for the log
  EXPECT_FALSE(returned) << "rank " << me() << " returned a value from a collective of diverged ranks";
  EXPECT_EQ(msg.rfind("[consistency] ranks diverged at ", 0), 0u) << msg;
  EXPECT_TRUE(contains(msg, "(mul_scalar)")) << msg;
  EXPECT_TRUE(contains(msg, me() == odd ? "but rank " : "but rank " + std::to_string(odd) + " runs")) << msg;
  EXPECT_TRUE(contains(msg, "seen by the fingerprint of ")) << msg;
}

const Placement kAll = Placement::all();
// Sizes for each path: the data inside the stamps (<= 64 KiB), stamps beside an MPI collective
// (64-256 KiB), and beside a ring (>= 256 KiB).
const Shape kSmall{8, 6}, kMid{256, 128}, kLarge{512, 512};

Tensor partial(const Shape& s, DType dt = kFloat32) { return ones(s, kAll, sbp::broadcast, dt).to_global(sbp::partial_sum); }

TEST_F(Fingerprints, AllReduceSmall) { expect_every_rank_fails(kAll, [] { return partial(kSmall).to_global(sbp::broadcast); }); }
TEST_F(Fingerprints, AllReduceSmallFloat64) {
  expect_every_rank_fails(kAll, [] { return partial(kSmall, kFloat64).to_global(sbp::broadcast); });
}
TEST_F(Fingerprints, AllReduceSmallInt64) {
  expect_every_rank_fails(kAll, [] { return partial(kSmall, kInt64).to_global(sbp::broadcast); });
}
TEST_F(Fingerprints, AllReduceMid) { expect_every_rank_fails(kAll, [] { return partial(kMid).to_global(sbp::broadcast); }); }
TEST_F(Fingerprints, AllReduceRing) { expect_every_rank_fails(kAll, [] { return partial(kLarge).to_global(sbp::broadcast); }); }
TEST_F(Fingerprints, AllGatherSmall) {
  expect_every_rank_fails(kAll, [] { return randn(kSmall, kAll, sbp::split(0)).to_global(sbp::broadcast); });
}
TEST_F(Fingerprints, AllGatherLarge) {
  expect_every_rank_fails(kAll, [] { return randn(kLarge, kAll, sbp::split(0)).to_global(sbp::broadcast); });
}
TEST_F(Fingerprints, ReduceScatterSmall) { expect_every_rank_fails(kAll, [] { return partial(kSmall).to_global(sbp::split(0)); }); }
TEST_F(Fingerprints, ReduceScatterMid) { expect_every_rank_fails(kAll, [] { return partial(kMid).to_global(sbp::split(0)); }); }
TEST_F(Fingerprints, ReduceScatterRing) { expect_every_rank_fails(kAll, [] { return partial(kLarge).to_global(sbp::split(0)); }); }
TEST_F(Fingerprints, AllToAllSmall) {
  expect_every_rank_fails(kAll, [] { return randn(kSmall, kAll, sbp::split(0)).to_global(sbp::split(1)); });
}
TEST_F(Fingerprints, AllToAllLarge) {
  expect_every_rank_fails(kAll, [] { return randn(kLarge, kAll, sbp::split(0)).to_global(sbp::split(1)); });
}
TEST_F(Fingerprints, BroadcastFromLocal) {
  expect_every_rank_fails(kAll, [] { return ones(kLarge).to_global(kAll, sbp::broadcast); });
}
// Rank 0 all-reduces while the others all-gather: the stamps of the two kinds meet (their sizes or
// their op names differ), so every rank throws at once instead of waiting for GLOBE_TIMEOUT.
TEST_F(Fingerprints, DifferentKindsSmall) {
  expect_every_rank_fails(kAll, [] {
    return me() == 0 ? partial(kSmall).to_global(sbp::broadcast) : randn(kSmall, kAll, sbp::split(0)).to_global(sbp::broadcast);
  });
}
// The same with the all-gather large: its stamps travel beside Open MPI's collective.
TEST_F(Fingerprints, DifferentKindsLarge) {
  expect_every_rank_fails(kAll, [] {
    return me() == 0 ? partial(kSmall).to_global(sbp::broadcast) : randn(kLarge, kAll, sbp::split(0)).to_global(sbp::broadcast);
  });
}
TEST_F(Fingerprints, OneRankOfFourDiffers) {
  if (world() != 4) GTEST_SKIP() << "4 ranks";
  expect_every_rank_fails(kAll, [] { return partial(kSmall).to_global(sbp::broadcast); }, /*odd=*/2);
}

// Nothing diverges: ranks that run different ops on placements the others are not in, uneven
// shards, and every collective kind at every size give the right values.
TEST_F(Fingerprints, AgreeingRanksGetTheirValues) {
  const int n = world();
  // Each rank alone on its own placement, with a different number of ops.
  const Placement mine = placement("cpu", {me()});
  Tensor solo = ones({3}, mine, sbp::broadcast);
  for (int i = 0; i <= me(); ++i) solo = mul(solo, 2.0);
  EXPECT_EQ(solo.to_vector<float>()[0], float(1 << (me() + 1)));
  // {128, 64} (32 KiB): stamped on 2 ranks, by doubling beside the stamps on 4 (its copies to every
  // member would pass 64 KiB).
  for (const Shape& s : {kSmall, kMid, kLarge, Shape{7, 5}, Shape{128, 64}}) {
    const int64_t numel = s[0] * s[1];
    // Rank r holds r + 1 everywhere: the value is 1 + 2 + ... + n.
    const double each = double(n * (n + 1) / 2);
    Tensor terms = full(s, double(me() + 1)).to_global(kAll, sbp::partial_sum);
    EXPECT_EQ(sum(terms.to_global(sbp::broadcast)).item<double>(), each * double(numel)) << shape_str(s);
    EXPECT_EQ(sum(terms.to_global(sbp::split(0))).item<double>(), each * double(numel)) << shape_str(s);
    Tensor x = arange(numel, kAll, sbp::split(0), kFloat64);
    Tensor y = reshape(x, s).to_global(sbp::split(1)).to_global(sbp::broadcast);
    EXPECT_EQ(sum(y).item<double>(), double(numel) * double(numel - 1) / 2) << shape_str(s);
  }
  // Each rank's own random term, summed: every rank's broadcast copy has the same bits (the
  // members add the terms in one order).
  for (const Shape& s : {kSmall, Shape{128, 64}}) {
    manual_seed(uint64_t(100 + me()));
    const Tensor copy = randn(s).to_global(kAll, sbp::partial_sum).to_global(sbp::broadcast).to_local();
    const int64_t numel = s[0] * s[1];
    const std::vector<float> rows =
        reshape(copy, {1, numel}).to_global(kAll, sbp::split(0)).to_global(sbp::broadcast).to_local().to_vector<float>();
    for (int r = 1; r < n; ++r)
      EXPECT_EQ(std::memcmp(rows.data(), rows.data() + r * numel, size_t(numel) * 4), 0) << "rank " << r << " " << shape_str(s);
  }
  Tensor b = full({5}, double(me() + 1)).to_global(kAll, sbp::broadcast);  // rank 0's value
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(5, 1.0f));
  dist::group(kAll.ranks()).barrier();
}

}  // namespace
}  // namespace globe
