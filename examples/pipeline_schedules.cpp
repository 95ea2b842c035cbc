// Pipeline parallelism with the pipeline object (tutorial: docs/06-pipeline.md): an MLP cut into
// one stage per rank, micro-batches run by a schedule chosen on the command line. The same program
// on 1, 2 or 4 ranks prints the same losses; only the speed and the memory per rank change.
//
//   build/bin/globe-launch --nproc_per_node 4 build/bin/pipeline_schedules
//       [--schedule gpipe|1f1b|interleaved|zb-h1|zbv] [--microbatches 8] [--chunks 2] [--batch 64] [--iters N]
#include "example_util.h"

namespace nn = globe::nn;
namespace pp = globe::pipeline;
using globe::Tensor;

int run(int argc, char** argv) {
  example::Args args(argc, argv, "pipeline_schedules: an MLP, one stage per rank, run by a schedule (docs/06-pipeline.md)");
  const int iters = args.integer("--iters", 20, "training iterations");
  const std::string schedule = args.text("--schedule", "1f1b", "gpipe, 1f1b, interleaved, zb-h1 or zbv");
  const int microbatches = args.integer("--microbatches", 8, "micro-batches per step");
  const int batch = args.integer("--batch", 64, "rows per step");
  const int chunks = args.integer("--chunks", pp::Schedule::default_chunks(schedule),
                                  "model chunks per rank (interleaved; zbv takes 2)");
  args.done();  // --help lists these flags

  // One stage per rank (rank group r = placement {r}).
  std::vector<globe::Placement> groups;
  for (int r = 0; r < globe::dist::world_size(); ++r) groups.push_back(globe::placement(args.device(), {r}));

  // The model: Flatten + Linear(784, 256) first, 8 blocks of Linear(256, 256) + ReLU, a head last.
  globe::manual_seed(0);
  nn::Flatten flatten;
  nn::Linear embed(28 * 28, 256), head(256, 10);
  std::vector<std::shared_ptr<nn::UnaryModule>> layers;
  std::vector<nn::UnaryModule*> blocks;
  for (int b = 0; b < 8; ++b) {
    auto block = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(256, 256), std::make_shared<nn::ReLU>());
    layers.push_back(block);
    blocks.push_back(block.get());
  }
  pp::Pipeline pipe(groups, blocks, {.schedule = schedule, .microbatches = microbatches, .chunks = chunks},
                    {&flatten, &embed}, {&head});
  if (example::is_rank0()) std::cout << pipe.describe() << pipe.schedule().to_string();

  std::vector<Tensor> params = embed.parameters();
  for (auto& l : layers)
    for (const Tensor& p : l->parameters()) params.push_back(p);
  for (const Tensor& p : head.parameters()) params.push_back(p);
  globe::optim::SGD sgd(params, {.lr = 0.05});

  Tensor x = globe::randn({batch, 1, 28, 28});
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < batch; ++i) classes.push_back((i * 7) % 10);
  Tensor y = globe::from_vector(classes, {int64_t(batch)});
  for (int i = 0; i < iters; ++i) {
    pp::StepResult r = pipe.step(x, y, globe::cross_entropy);
    sgd.step();
    sgd.zero_grad();
    const float value = r.loss.item<float>();
    example::print_loss(i, value);
  }
  return 0;
}

int main(int argc, char** argv) { return example::main(run, argc, argv); }  // an error: its message, exit 1
