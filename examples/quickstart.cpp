// Quick start (tutorial: docs/01-quickstart.md): one model, data and tensor parallel at once.
//   - the batch is split across ranks, and layer 1 (replicated) runs on each rank's own samples:
//     data parallel, its gradients summed over the ranks;
//   - the activations are then gathered, and the block fc2 -> fc3 is split Megatron-style: each rank
//     computes its share of fc2's 128 hidden features (column-parallel) and multiplies them by its
//     share of fc3's weight (row-parallel), giving partial sums: tensor parallel;
//   - the loss reduces those partial sums back onto each rank's own samples.
// Globe inserts the communication between them from the layouts. The same program runs on any
// number of ranks and prints the same losses.
//
//   scripts/setup.sh && build/bin/globe-launch --nproc_per_node 2 build/bin/quickstart
#include "example_util.h"

namespace nn = globe::nn;
namespace optim = globe::optim;
namespace sbp = globe::sbp;
using globe::Tensor;

struct HybridModel : nn::Module {
  nn::Linear fc1{32, 64};          // replicated, run on each rank's samples: data parallel
  nn::ColumnParallelLinear fc2;    // weight S(0): each rank computes its share of the 128 features
  nn::RowParallelLinear fc3;       // weight S(1): each rank's features in, partial sums out
  HybridModel(const globe::Placement& p) : fc2(64, 128, p), fc3(128, 8, p) {
    register_modules({{"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}});
    fc1.to_global(p, sbp::broadcast);
  }
  Tensor forward(const Tensor& x) {
    Tensor h = globe::relu(fc1(x));                   // S(0): each rank its own samples
    h = h.to_global(h.placement(), sbp::broadcast);   // all-gather: every rank all the samples
    return fc3(globe::relu(fc2(h)));                  // hidden S(1), then partial sums P
  }
};

int run(int argc, char** argv) {
  example::Args args(argc, argv, "quickstart: one model, data and tensor parallel at once (docs/01-quickstart.md)");
  const int max_iter = args.integer("--iters", 20, "training iterations");
  const bool boxing_report = args.flag("--boxing-report", "also print which boxings ran and how often");
  args.done();  // --help lists these flags
  globe::manual_seed(0);
  auto placement = globe::Placement::all(args.device());
  HybridModel model(placement);
  optim::SGD optimizer(model.parameters(), {.lr = 0.1, .momentum = 0.9});

  // A fixed regression task: targets from a hidden random linear map of the inputs.
  auto x = globe::randn({64, 32}, placement, sbp::split(0));        // batch split: data parallel
  auto teacher = globe::randn({32, 8}, placement, sbp::broadcast);
  auto y = globe::matmul(x, teacher) * 0.2;                          // y keeps x's split

  for (int i = 0; i < max_iter; ++i) {
    if (i == max_iter - 1) globe::reset_boxing_paths();  // count the last step's communication only
    Tensor pred = model.forward(x);     // [64, 8], partial sums
    Tensor loss = globe::mse_loss(pred, y);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    const float value = loss.item<float>();
    example::print_loss(i, value);
    if (i == 0) {
      // Layouts: which rank holds which block (metadata only, no communication).
      const std::string w1 = globe::visualize(model.fc1.weight), w2 = globe::visualize(model.fc2.weight),
                        w3 = globe::visualize(model.fc3.weight), xs = globe::visualize(x),
                        ps = globe::visualize(pred);
      if (example::is_rank0())
        std::cout << "fc1.weight: " << w1 << "fc2.weight: " << w2 << "fc3.weight: " << w3 << "x: " << xs << "pred: " << ps;
    }
  }
  if (boxing_report && example::is_rank0()) {
    // What one step communicated on this rank: where a layout change was needed, and how often.
    std::cout << "boxing in one step (calls, what asked, the path):\n";
    for (const auto& [path, n] : globe::boxing_paths()) std::cout << "  " << n << "  " << path << "\n";
  }
  return 0;
}

int main(int argc, char** argv) { return example::main(run, argc, argv); }  // an error: its message, exit 1
