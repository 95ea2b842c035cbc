// Quick start: two ways to make a global tensor from data each rank already has.
//   from_full(value, placement, sbp): every rank passes the WHOLE value; each keeps its block.
//   local.to_global(placement, sbp):  every rank passes ITS PIECE; split concatenates the pieces.
// Rank 0 prints describe() and visualize() of each; then every rank prints the shards it holds.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/local_data
#include <iostream>

#include <globe/globe.h>

namespace sbp = globe::sbp;
using globe::Tensor;

std::string values(const Tensor& t) {
  std::string s;
  for (float v : t.to_local().to_vector<float>())
    s += (s.empty() ? "" : " ") + std::to_string(int(v));
  return s;
}

int main() {
  const auto p = globe::Placement::all("cpu");
  const int rank = globe::dist::world_rank();

  // The whole value, the same on every rank (a constant, or a small file every rank reads).
  Tensor whole = globe::reshape(globe::arange(0.0, 8.0), {4, 2});  // 0 1 2 3 4 5 6 7
  Tensor a = globe::from_full(whole, p, sbp::split(0));            // [4, 2]: rank r keeps its rows

  // A piece per rank (each rank read its own shard of a dataset): rank r has 2 rows of 10 (r + 1).
  Tensor piece = globe::full({2, 2}, 10.0 * (rank + 1));
  Tensor b = piece.to_global(p, sbp::split(0));  // [2 * ranks, 2]: the pieces concatenated

  // The mix-up: the whole value passed as a piece. Every rank's copy becomes one block.
  Tensor c = whole.to_global(p, sbp::split(0));  // [4 * ranks, 2]

  if (rank == 0)
    for (const auto& [name, t] : {std::pair{"a", a}, std::pair{"b", b}, std::pair{"c", c}})
      std::cout << name << " = " << globe::describe(t) << "\n" << globe::visualize(t);
  std::cout << "rank " << rank << " holds  a: " << values(a) << "  b: " << values(b)
            << "  c: " << values(c) << std::endl;
  return 0;
}
