// A Globe program in which one rank stays away from a global op, for test_launch_globe: the others
// must get an error naming it within GLOBE_TIMEOUT, never hang (docs/design.md §9), also without
// consistency mode.
//
//   dist_hang_fixture MODE ABSENT_RANK [CAUGHT_EXIT_CODE [ABSENT_SECONDS]]
//     new_group   ABSENT_RANK sleeps instead of the first op on a new placement (communicator creation)
//     collective  ABSENT_RANK sleeps instead of an all-reduce on an existing placement
// A rank that gets the error prints it and exits CAUGHT_EXIT_CODE (3 unless given: 0 is a program that
// handled the timeout; a non-zero exit comes 2 s after the message, so that every waiting rank
// reports); the absent rank sleeps ABSENT_SECONDS (30 unless given), then exits 0.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "globe/globe.h"

using globe::Tensor;

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::cerr << "usage: dist_hang_fixture new_group|collective ABSENT_RANK [CAUGHT_EXIT_CODE [ABSENT_SECONDS]]\n";
    return 2;
  }
  const std::string mode = argv[1];
  const int absent = std::atoi(argv[2]);
  const int caught_exit_code = argc >= 4 ? std::atoi(argv[3]) : 3;
  const int absent_seconds = argc >= 5 ? std::atoi(argv[4]) : 30;
  const int rank = globe::dist::world_rank();
  try {
    const auto all = globe::Placement::all();
    Tensor x = globe::ones({1 << 18}, all, globe::sbp::partial_sum);  // large: the ring path
    if (mode == "collective") x.to_global(globe::sbp::broadcast).to_local();  // warm up the communicator
    std::cout << "ready" << std::endl;
    if (rank == absent) {
      ::sleep(absent_seconds);
      std::cout << "absent rank done" << std::endl;
      return 0;
    }
    if (mode == "new_group") {
      std::vector<int> reversed(all.ranks().rbegin(), all.ranks().rend());
      x.to_global(globe::placement("cpu", reversed), globe::sbp::broadcast);
    } else {
      x.to_global(globe::sbp::broadcast);
    }
    std::cout << "finished without the absent rank?" << std::endl;
  } catch (const globe::Error& e) {
    std::cerr << "caught: " << e.what() << std::endl;
    // The first rank to exit non-zero has the launcher stop the others: give the other waiting
    // ranks, whose timeouts end at about the same moment, time to report too (on a loaded machine
    // one may be a few milliseconds behind).
    if (caught_exit_code != 0) ::sleep(2);
    return caught_exit_code;
  }
  return 0;
}
