// Page 03: building each rank's shard of a Linear directly, as the original tutorial does, and
// making the shards one global layer with to_global(split(0)). With one seed on every rank the
// shards are copies of each other; --seed-per-rank seeds each rank differently while it builds.
// Rank 0 prints the global weight's first two columns.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/shard_init [--seed-per-rank]
#include <cstring>
#include <iostream>

#include <globe/globe.h>

int main(int argc, char** argv) {
  const bool seed_per_rank = argc > 1 && std::strcmp(argv[1], "--seed-per-rank") == 0;
  namespace sbp = globe::sbp;
  const auto p = globe::Placement::all("cpu");

  globe::manual_seed(0);
  if (seed_per_rank) globe::manual_seed(1234 + globe::dist::world_rank());  // a shard per rank
  globe::nn::Linear linear(4, 6 / p.size());  // local: weight [6 / ranks, 4] on each rank
  if (seed_per_rank) globe::manual_seed(0);   // one seed again for global random ops
  linear.to_global(p, sbp::split(0));         // global: weight [6, 4], bias [6], both S(0)

  const std::vector<float> w = linear.weight.to_vector<float>();  // collective: the whole value
  if (globe::dist::world_rank() == 0)
    for (int row = 0; row < 6; ++row)
      std::cout << "row " << row << ": " << w[row * 4] << " " << w[row * 4 + 1] << "\n";
  return 0;
}
