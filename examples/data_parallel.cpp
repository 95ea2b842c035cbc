// Data parallelism (tutorial: docs/02-data-parallel.md). The original tutorial's ToyModel: every
// rank holds the whole model (parameters broadcast) and a slice of each batch (split along dim 0).
// The backward pass leaves each weight gradient as a partial sum; accumulating it into the
// broadcast parameter all-reduces it — data parallelism falls out of the layouts, no wrapper
// needed.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/data_parallel [--iters N] [--ckpt DIR]
//
// With --ckpt DIR it saves every 5 iterations and starts from the newest complete checkpoint
// there, so `globe-launch --max-restarts 1` carries it through a failed rank.
#include "example_util.h"
#include "toy_model.h"

#include <optional>

namespace optim = globe::optim;
namespace sbp = globe::sbp;
using globe::Tensor;

using example::ToyModel;  // the original tutorial's model: examples/toy_model.h

int run(int argc, char** argv) {
  example::Args args(argc, argv, "data_parallel: the tutorial's ToyModel, data parallel (docs/02-data-parallel.md)");
  const int max_iter = args.integer("--iters", 10, "training iterations");
  const std::string ckpt_dir = args.text("--ckpt", "", "checkpoint folder: save every 5 iterations, resume from the newest");
  args.done();  // --help lists these flags
  globe::manual_seed(0);
  auto placement = globe::Placement::all(args.device());  // every launched rank ({0, 1} on 2)

  ToyModel model;
  model.to_global(placement, sbp::broadcast);  // rank 0's initial parameters win

  optim::SGD optimizer(model.parameters(), {.lr = 0.05});
  std::optional<globe::CheckpointManager> ckpt;
  if (!ckpt_dir.empty()) ckpt.emplace(ckpt_dir);
  const int start = ckpt ? int(ckpt->resume(model, optimizer)) : 0;  // 0 when there is none
  for (int i = start; i < max_iter; ++i) {
    globe::manual_seed(1 + i);  // each batch from its iteration alone: a resumed run sees the same data
    auto data = globe::randn({20, 10}, placement, sbp::split(0));    // each rank: 10 of the 20 rows
    auto labels = globe::randn({20, 16}, placement, sbp::split(0));
    auto loss = model.forward(data, labels);
    loss.backward();  // dW arrives as partial_sum; the broadcast parameter all-reduces it
    optimizer.step();
    optimizer.zero_grad();
    const float value = loss.item<float>();  // collective: every rank asks, rank 0 prints
    example::print_loss(i, value);
    if (ckpt && (i + 1) % 5 == 0) ckpt->save(i + 1, model, optimizer);
  }
  return 0;
}

int main(int argc, char** argv) { return example::main(run, argc, argv); }  // an error: its message, exit 1
