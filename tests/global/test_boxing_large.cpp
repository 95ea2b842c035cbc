// Boxing of tensors large enough (>= 256 KiB) to take the bandwidth paths: the point-to-point
// ring reduce-scatter / all-reduce inside MpiCommunicator and the reduce-scatter + all-gather
// route of P -> B. Uneven shapes, every 1-D pair, summands on every rank (integer-valued, so sums
// are exact in any order), compared bit for bit with the single-process value.
#include "global_test_util.h"

namespace globe {
namespace {

using testing::all_sbps;
using testing::expect_same_values;
using testing::expected_shard;

int me() { return dist::world_rank(); }
int world() { return dist::world_size(); }

// Integer-valued [rows, cols] tensor: element (i, j) = ((i * 31 + j * 7 + salt) % 201) - 100.
Tensor pattern(const Shape& shape, int64_t salt, DType dtype) {
  std::vector<double> v;
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j) v.push_back(double((i * 31 + j * 7 + salt) % 201) - 100.0);
  return to_dtype(from_vector(v, shape), dtype);
}

// The global tensor with layout `s` whose value is `full`; for P, rank r's summand is
// pattern(salt = r) and the last rank's summand makes up the rest, so every rank holds data.
Tensor make(const Tensor& full, const Placement& p, const Sbp& s) {
  if (!s.is_partial()) return from_full(full, p, s);
  const int n = p.size();
  Tensor summand = pattern(full.shape(), 1000 + me(), full.dtype());
  if (me() == p.ranks().back()) {
    Tensor others = zeros(full.shape(), full.dtype());
    for (int r = 0; r + 1 < n; ++r) others = add(others, pattern(full.shape(), 1000 + p.ranks()[r], full.dtype()));
    summand = sub(full, others);
  }
  return summand.to_global(p, sbp::partial_sum);
}

TEST(BoxingLarge, EveryPairUneven) {
  const Placement p = Placement::all();
  // 257 x 301 float32 = 309 KB (just over the threshold), 1031 x 517 float64 = 4.3 MB.
  for (const auto& [shape, dtype] : {std::pair<Shape, DType>{{257, 301}, kFloat32}, {{1031, 517}, kFloat64}}) {
    const Tensor full = pattern(shape, 0, dtype);
    for (const Sbp& from : all_sbps(2))
      for (const Sbp& to : all_sbps(2)) {
        const std::string what = shape_str(shape) + " " + from.to_string() + " -> " + to.to_string();
        Tensor x = make(full, p, from);
        Tensor y = x.to_global(p, to);
        if (!to.is_partial()) expect_same_values(y.to_local(), expected_shard(full, p, to, me()), what + " shard");
        expect_same_values(from_vector(y.to_vector<double>(), shape), to_dtype(full, kFloat64), what + " value");
      }
  }
}

TEST(BoxingLarge, PartialToBroadcastInt64) {
  const Placement p = Placement::all();
  const Shape shape = {513, 129};  // 529 KB of int64, odd element count
  const Tensor full = pattern(shape, 3, kInt64);
  Tensor y = make(full, p, sbp::partial_sum).to_global(sbp::broadcast);
  EXPECT_EQ(y.to_local().to_vector<int64_t>(), full.to_vector<int64_t>());
  if (world() >= 2) {
    // A sub-group written in reverse: the ring runs in group order.
    const Placement q = placement("cpu", {1, 0});
    Tensor z = make(full, q, sbp::partial_sum).to_global(sbp::split(1));
    if (q.contains(me())) {
      EXPECT_EQ(z.to_local().to_vector<int64_t>(), expected_shard(full, q, sbp::split(1), me()).to_vector<int64_t>());
    }
  }
}

}  // namespace
}  // namespace globe
