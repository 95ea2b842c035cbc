// Page 02: with broadcast, the first rank's initial parameters win. Each rank seeds its generator
// differently, builds a Linear(4, 2) and prints weight[0][0] before and after to_global(B).
// --two-ranks names the placement {0, 1} instead of every rank, as the original tutorial does.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/broadcast_init [--two-ranks]
#include <cstring>
#include <iostream>

#include <globe/globe.h>

int main(int argc, char** argv) {
  const bool two_ranks = argc > 1 && std::strcmp(argv[1], "--two-ranks") == 0;
  const int rank = globe::dist::world_rank();
  try {
    const auto placement =
        two_ranks ? globe::placement("cpu", {0, 1}) : globe::Placement::all("cpu");
    globe::manual_seed(100 + rank);  // a different initialisation on every rank
    globe::nn::Linear linear(4, 2);
    const float before = linear.weight.to_vector<float>()[0];
    linear.to_global(placement, globe::sbp::broadcast);
    const float after = linear.weight.to_local().to_vector<float>()[0];  // this rank's copy
    std::cout << "rank " << rank << ": weight[0][0] local init " << before
              << ", after to_global(B) " << after << std::endl;
  } catch (const globe::Error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  return 0;
}
