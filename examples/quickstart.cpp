// Quick start (tutorial: docs/01-quickstart.md): one model that mixes data and model parallelism.
//   - the batch is split across ranks (data parallel);
//   - layer 1 is replicated (its gradients are all-reduced, as in data parallel);
//   - layer 2 is column-parallel: each rank holds a slice of its output features (model parallel).
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
  nn::Linear fc1{32, 64};                // replicated: data parallel
  nn::ColumnParallelLinear fc2;          // split over output features: model parallel
  HybridModel(const globe::Placement& p) : fc2(64, 8, p) {
    register_modules({{"fc1", fc1}, {"fc2", fc2}});
    fc1.to_global(p, sbp::broadcast);
  }
  Tensor forward(const Tensor& x) { return fc2(globe::relu(fc1(x))); }
};

int main(int argc, char** argv) {
  const int max_iter = example::int_flag(argc, argv, "--iters", 20);
  globe::manual_seed(0);
  auto placement = globe::Placement::all(example::device(argc, argv));
  HybridModel model(placement);
  optim::SGD optimizer(model.parameters(), {.lr = 0.1, .momentum = 0.9});

  // A fixed regression task: targets from a hidden random linear map of the inputs.
  auto x = globe::randn({64, 32}, placement, sbp::split(0));        // batch split: data parallel
  auto teacher = globe::randn({32, 8}, placement, sbp::broadcast);
  auto y = globe::matmul(x, teacher) * 0.2;                          // y keeps x's split

  for (int i = 0; i < max_iter; ++i) {
    Tensor pred = model.forward(x);     // [64, 8], rows split: fc2 gathers its small weight for it
    Tensor loss = globe::mse_loss(pred, y);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    const float value = loss.item<float>();
    if (example::is_rank0()) std::cout << "iter " << i << " loss " << value << std::endl;
    if (i == 0) {
      // Layouts: which rank holds which block (metadata only, no communication).
      const std::string w1 = globe::visualize(model.fc1.weight), w2 = globe::visualize(model.fc2.weight),
                        xs = globe::visualize(x), ps = globe::visualize(pred);
      if (example::is_rank0()) std::cout << "fc1.weight: " << w1 << "fc2.weight: " << w2 << "x: " << xs << "pred: " << ps;
    }
  }
  return 0;
}
