// Pipeline parallelism, the plain form (tutorial: docs/06-pipeline.md). The original tutorial's
// two-stage program: stage 0 (Flatten, Linear(784, 512), ReLU) on rank 0, stage 1 (Linear(512,
// 512), ReLU, Linear(512, 10)) on rank 1; the activation moves between them with to_global; the
// labels live on the last stage; a batch of 16 runs as 2 micro-batches whose gradients accumulate
// before one SGD step.
//
// No pipeline object: each micro-batch's backward() on rank 0 waits (without blocking) for the
// gradient from rank 1, so rank 0 goes on with the next micro-batch's forward meanwhile — the
// stages overlap in GPipe order. With one rank both stages run on it.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/pipeline [--iters N]
#include "example_util.h"

namespace nn = globe::nn;
namespace sbp = globe::sbp;
using globe::Tensor;

struct Stage0 : nn::Module {
  nn::Flatten flatten;
  nn::Linear linear0{28 * 28, 512};
  nn::ReLU relu0;
  Stage0() { register_modules({{"linear0", linear0}}); }
  Tensor forward(const Tensor& x) { return relu0(linear0(flatten(x))); }
};

struct Stage1 : nn::Module {
  nn::Linear linear1{512, 512}, linear2{512, 10};
  nn::ReLU relu1;
  Stage1() { register_modules({{"linear1", linear1}, {"linear2", linear2}}); }
  Tensor forward(const Tensor& x) { return linear2(relu1(linear1(x))); }
};

int run(int argc, char** argv) {
  example::Args args(argc, argv, "pipeline: two stages on ranks 0 and 1, the plain form (docs/06-pipeline.md)");
  const int iters = args.integer("--iters", 20, "training iterations");
  args.done();  // --help lists these flags
  const int last = globe::dist::world_size() > 1 ? 1 : 0;
  const auto P0 = globe::placement(args.device(), {0});
  const auto P1 = globe::placement(args.device(), {last});

  globe::manual_seed(0);
  Stage0 stage0;
  Stage1 stage1;
  stage0.to_global(P0, sbp::broadcast);
  stage1.to_global(P1, sbp::broadcast);
  std::vector<Tensor> params = stage0.parameters();
  for (const Tensor& p : stage1.parameters()) params.push_back(p);
  globe::optim::SGD sgd(params, {.lr = 1e-3});
  nn::CrossEntropyLoss loss_fn;

  // One fixed batch, as in the original: images on stage 0, labels on the last stage.
  const int64_t batch = 16, microbatches = 2, rows = batch / microbatches;
  Tensor x = globe::randn({batch, 1, 28, 28}, P0, sbp::broadcast);
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < batch; ++i) classes.push_back((i * 7) % 10);
  Tensor y = globe::from_full(globe::from_vector(classes, {batch}), P1, sbp::broadcast);

  for (int i = 0; i < iters; ++i) {
    Tensor total;
    for (int64_t k = 0; k < microbatches; ++k) {
      Tensor h = stage0.forward(globe::narrow(x, 0, k * rows, rows));
      Tensor out = stage1.forward(h.to_global(P1));  // rank 0 -> rank 1
      Tensor loss = loss_fn(out, globe::narrow(y, 0, k * rows, rows)) / double(microbatches);
      loss.backward();  // on rank 0 this returns at once: its part runs when the gradient is read
      total = total.defined() ? globe::add(total.detach(), loss.detach()) : loss.detach();
    }
    sgd.step();  // reads the gradients: stage 0's backward passes finish here, in order
    sgd.zero_grad();
    const float value = total.item<float>();
    example::print_loss(i, value);
  }
  return 0;
}

int main(int argc, char** argv) { return example::main(run, argc, argv); }  // an error: its message, exit 1
