// Model (tensor) parallelism (tutorial: docs/03-model-parallel.md). The original tutorial's
// ModelParallelLinear: each linear layer's weight is split along out_features (split(0)), the data
// is broadcast, and every rank computes its slice of each layer's output.
//
// The original tutorial builds each rank's shard separately (Linear(in, out / ranks)). Globe
// initialises the whole layer and distributes it instead, so the numbers are the same on any
// number of ranks — run it with --nproc_per_node 1 and 2 and compare.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/model_parallel [--iters N]
#include "example_util.h"

namespace nn = globe::nn;
namespace optim = globe::optim;
namespace sbp = globe::sbp;
using globe::Tensor;

struct ModelParallelLinear : nn::Module {
  nn::Linear linear;
  ModelParallelLinear(int64_t in, int64_t out, const globe::Placement& p) : linear(in, out) {
    register_modules({{"linear", linear}});
    // weight [out, in] and bias [out] split along out_features: rank r holds rows of its slice.
    linear.distribute(p, {{"weight", sbp::split(0)}, {"bias", sbp::split(0)}}, sbp::broadcast);
  }
  Tensor forward(const Tensor& x) { return linear(x); }
};

struct ToyModel : nn::Module {
  ModelParallelLinear net1, net2;
  nn::ReLU relu;
  nn::MSELoss loss_fn;

  explicit ToyModel(const globe::Placement& p) : net1(10, 20, p), net2(20, 16, p) {
    register_modules({{"net1", net1}, {"net2", net2}});
  }
  Tensor forward(const Tensor& x, const Tensor& labels) {
    return loss_fn(net2.forward(relu(net1.forward(x))), labels);
  }
};

int run(int argc, char** argv) {
  example::Args args(argc, argv, "model_parallel: each layer's weight split over the ranks (docs/03-model-parallel.md)");
  const int max_iter = args.integer("--iters", 10, "training iterations");
  args.done();  // --help lists these flags
  globe::manual_seed(0);
  auto placement = globe::Placement::all(args.device());

  ToyModel model(placement);
  optim::SGD optimizer(model.parameters(), {.lr = 0.05});
  for (int i = 0; i < max_iter; ++i) {
    globe::manual_seed(1 + i);  // each batch from its iteration, as in data_parallel
    auto data = globe::randn({20, 10}, placement, sbp::broadcast);  // every rank sees all data
    auto labels = globe::randn({20, 16}, placement, sbp::broadcast);
    auto loss = model.forward(data, labels);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    const float value = loss.item<float>();
    example::print_loss(i, value);
  }
  if (example::is_rank0()) std::cout << globe::visualize(model.net1.linear.weight);
  return 0;
}

int main(int argc, char** argv) { return example::main(run, argc, argv); }  // an error: its message, exit 1
