// Page 05: a rank that arrives late. Rank 1 sleeps between two collectives (with --at-start:
// before the first one, while the ranks create their communicator); rank 0 waits for it at most
// GLOBE_TIMEOUT seconds, then gets an error naming the op and the missing rank, prints it and
// returns 1.
//
//   GLOBE_TIMEOUT=2 build/bin/globe-launch --nproc_per_node 2 build/bin/late_rank --sleep 5
//   (--sleep S: rank 1's delay, default 10 s; --at-start: late before the first collective)
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include <globe/globe.h>

using namespace globe;

int main(int argc, char** argv) {
  int seconds = 10;
  bool at_start = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sleep") == 0 && i + 1 < argc) seconds = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--at-start") == 0) at_start = true;
  }
  const bool late = dist::world_rank() == 1;
  const auto p = Placement::all("cpu");
  manual_seed(0);
  try {
    auto x = randn({4, 4}, p, sbp::split(0));
    if (late && at_start) std::this_thread::sleep_for(std::chrono::seconds(seconds));
    const float first = sum(x).item<float>();  // the first collective creates the communicator
    std::cout << "warm-up " << first << std::endl;
    if (late && !at_start) std::this_thread::sleep_for(std::chrono::seconds(seconds));  // late rank
    const float second = sum(x).item<float>();
    std::cout << "total " << second << std::endl;
  } catch (const Error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  return 0;
}
