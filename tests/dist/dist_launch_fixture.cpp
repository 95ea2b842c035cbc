// A Globe program that test_launch_globe starts under globe-launch: data-parallel training of a
// small model on global tensors, in which one rank throws a globe::Error in the middle of training
// and does not catch it.
//
//   dist_launch_fixture PID_DIR FAILING_RANK FAIL_AT_STEP [after_backward]
//
// Each rank writes its pid to PID_DIR/pid.RANK first (the name contains "launch_fixture", which is
// what launcher_process.h's fixture_alive looks for). Every rank prints "step S loss L" after
// each step. At step FAIL_AT_STEP, FAILING_RANK throws; the others go on into the next step's
// collectives, where they wait for the failed rank until the launcher stops them. With
// `after_backward` it throws right after that step's backward, while the gradient buckets'
// reductions it started are in flight (tiny buckets: one per gradient); the others wait for them
// in the optimizer's step.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "globe/globe.h"

namespace nn = globe::nn;
using globe::Tensor;

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: dist_launch_fixture PID_DIR FAILING_RANK FAIL_AT_STEP [after_backward]\n";
    return 2;
  }
  const std::string pid_dir = argv[1];
  const int failing = std::atoi(argv[2]), fail_at = std::atoi(argv[3]);
  const bool after_backward = argc == 5 && std::string(argv[4]) == "after_backward";
  if (after_backward) globe::set_grad_bucket_bytes(1);
  const int rank = globe::dist::world_rank();
  std::ofstream(pid_dir + "/pid." + std::to_string(rank)) << ::getpid() << "\n";

  globe::manual_seed(0);
  const auto p = globe::Placement::all();
  nn::Linear fc1(8, 16), fc2(16, 4);
  fc1.to_global(p, globe::sbp::broadcast);
  fc2.to_global(p, globe::sbp::broadcast);
  globe::optim::SGD opt(
      [&] {
        auto ps = fc1.parameters();
        for (auto& t : fc2.parameters()) ps.push_back(t);
        return ps;
      }(),
      {.lr = 0.01});
  for (int step = 0; step < 1000; ++step) {  // bounded, in case FAILING_RANK is not a rank
    if (rank == failing && step == fail_at && !after_backward)
      GLOBE_FAIL("[fixture] rank ", rank, " gives up at step ", step);  // uncaught on purpose
    Tensor x = globe::randn({16, 8}, p, globe::sbp::split(0));
    Tensor y = globe::randn({16, 4}, p, globe::sbp::split(0));
    Tensor loss = globe::mse_loss(fc2(globe::relu(fc1(x))), y);
    loss.backward();
    if (rank == failing && step == fail_at && after_backward)
      GLOBE_FAIL("[fixture] rank ", rank, " gives up at step ", step, " with ", globe::detail::reductions_in_flight(),
                 " gradient reductions in flight");
    opt.step();
    opt.zero_grad();
    const float value = loss.item<float>();
    std::cout << "step " << step << " loss " << value << std::endl;
  }
  return 0;
}
