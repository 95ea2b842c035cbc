// A data-parallel training run for test_restart: checkpoints with globe::CheckpointManager every
// --ckpt-every steps and resumes from the newest complete one, so that globe-launch
// --max-restarts can carry it through a killed rank.
//
//   restart_fixture --ckpt DIR [--steps N] [--ckpt-every K] [--die-at S]
//     --die-at S   on the first start (GLOBE_RESTART_COUNT 0), rank 1 kills itself (SIGKILL) at
//                  step S, as a node fault or an out-of-memory kill would
// Rank 0 prints "start <restart> at <step>" and then "step <i> loss <hex float>" per step: the
// exact bits, so runs can be compared bit for bit.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "globe/globe.h"

using globe::Tensor;
namespace sbp = globe::sbp;

namespace {
std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string dir = flag(argc, argv, "--ckpt", "");
  const int steps = std::stoi(flag(argc, argv, "--steps", "12"));
  const int every = std::stoi(flag(argc, argv, "--ckpt-every", "3"));
  const int die_at = std::stoi(flag(argc, argv, "--die-at", "-1"));
  const char* restart_env = std::getenv("GLOBE_RESTART_COUNT");
  const int restart = restart_env != nullptr ? std::atoi(restart_env) : 0;
  const int rank = globe::dist::world_rank();
  const auto p = globe::Placement::all();

  globe::manual_seed(0);
  globe::nn::Sequential model(std::make_shared<globe::nn::Linear>(8, 16), std::make_shared<globe::nn::ReLU>(),
                              std::make_shared<globe::nn::Linear>(16, 4));
  model.to_global(p, sbp::broadcast);
  globe::optim::Adam adam(model.parameters(), {.lr = 0.01});
  globe::CheckpointManager ckpt(dir, {.keep = 2});
  int step = int(ckpt.resume(model, adam));
  if (rank == 0) std::printf("start %d at %d\n", restart, step);

  for (; step < steps; ++step) {
    if (step == die_at && restart == 0 && rank == 1) std::raise(SIGKILL);
    globe::manual_seed(1000 + step);  // the batch depends on the step only: a resumed run sees the same data
    const Tensor x = globe::randn({16, 8}, p, sbp::split(0)), y = globe::randn({16, 4}, p, sbp::split(0));
    adam.zero_grad();
    Tensor loss = globe::mse_loss(model.forward(x), y);
    loss.backward();
    adam.step();
    const float value = loss.item<float>();
    if (rank == 0) std::printf("step %d loss %a\n", step, double(value));
    std::fflush(stdout);
    if ((step + 1) % every == 0) ckpt.save(step + 1, model, adam);
  }
  return 0;
}
