// Saving and loading (tutorial: docs/04-save-load.md). The original tutorial's data-parallel
// ToyModel, trained, saved with `global_dst_rank`, loaded into a fresh model with
// `global_src_rank`, and checked.
//
// save and load are collective: every rank calls them — never inside `if (rank == 0)`. The
// destination rank gathers the global parameters and writes one safetensors file (readable by
// other frameworks); on load the source rank reads it and load_state_dict lays each tensor out
// like the parameter it fills.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/save_load [--iters N] [--path FILE]
#include "example_util.h"
#include "toy_model.h"

namespace optim = globe::optim;
namespace sbp = globe::sbp;
using globe::Tensor;

using example::ToyModel;  // the original tutorial's model: examples/toy_model.h

// Trains `model` for `iters` steps (continuing from its current parameters) and prints the losses.
void train(ToyModel& model, const globe::Placement& placement, int iters, const char* tag) {
  optim::SGD optimizer(model.parameters(), {.lr = 0.05});
  for (int i = 0; i < iters; ++i) {
    globe::manual_seed(1000 + i);  // the same batches in every run
    auto data = globe::randn({20, 10}, placement, sbp::split(0));
    auto labels = globe::randn({20, 16}, placement, sbp::split(0));
    auto loss = model.forward(data, labels);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    const float value = loss.item<float>();
    example::print_loss(i, value, tag);
  }
}

int run(int argc, char** argv) {
  example::Args args(argc, argv, "save_load: train, save, load into a fresh model, check (docs/04-save-load.md)");
  const int iters = args.integer("--iters", 10, "training iterations before saving");
  const std::string path = args.text("--path", "model_weights.safetensors", "the checkpoint file");
  args.done();  // --help lists these flags
  auto placement = globe::Placement::all(args.device());

  globe::manual_seed(0);
  ToyModel model;
  model.to_global(placement, sbp::broadcast);
  train(model, placement, iters, "train");
  globe::save(model.state_dict(), path, {.global_dst_rank = 0});  // every rank calls it

  globe::manual_seed(42);  // a different initialisation, overwritten by the load
  ToyModel model2;
  model2.to_global(placement, sbp::broadcast);
  model2.load_state_dict(globe::load(path, {.global_src_rank = 0}));

  // The loaded parameters are the saved ones, in model2's own layout.
  bool same = true;
  auto a = model.named_parameters(), b = model2.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) same &= a[i].second.to_vector<float>() == b[i].second.to_vector<float>();
  if (example::is_rank0()) std::cout << "loaded parameters equal the saved ones: " << (same ? "yes" : "NO") << std::endl;
  return same ? 0 : 1;
}

int main(int argc, char** argv) { return example::main(run, argc, argv); }  // an error: its message, exit 1
