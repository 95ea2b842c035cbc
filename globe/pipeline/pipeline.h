// Pipeline parallelism (docs/06-pipeline.md): a model cut into stages, each stage on its own placement, run
// over micro-batches by a schedule.
//
//   std::vector<globe::Placement> groups = {globe::placement("cpu", {0}), globe::placement("cpu", {1})};
//   globe::pipeline::Pipeline pipe(groups, {&fc1, &relu, &fc2}, {.schedule = "1f1b", .microbatches = 4});
//   auto result = pipe.step(x, y, globe::cross_entropy);   // forward + backward of every micro-batch
//   optimizer.step();                                       // gradients: sums over the micro-batches
//   float loss = result.loss.item<float>();                // the whole batch's mean loss
//
// Every rank constructs the same Pipeline and calls step() (SPMD). A rank runs only the actions of
// its own stages, in the schedule's global order; activations go to the next stage and gradients
// back as point-to-point moves between the two stages' ranks, sent without waiting for the
// receiver. Inside a stage any mesh and layout works: a stage may itself be data or tensor
// parallel (its placement a mesh; its modules distributed before or after the pipeline is built).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "globe/autograd/engine.h"
#include "globe/core/tensor.h"
#include "globe/global/placement.h"
#include "globe/nn/layers.h"
#include "globe/pipeline/schedule.h"

namespace globe::pipeline {

struct Options {
  std::string schedule = "1f1b";  // gpipe, 1f1b, interleaved, zb-h1
  int microbatches = 1;
  int chunks = 1;  // model chunks per rank group (interleaved: 2 or more)
  // Which stage each block goes to (blocks in order, stage ids non-decreasing); empty: balanced by
  // block count, earlier stages taking the extra blocks.
  std::vector<int> stage_of_block = {};
};

using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

struct StepResult {
  // The step's loss: the whole batch's mean (micro-batch losses weighted by their rows), a global
  // scalar on the last stage's placement. Reading it (item) is collective.
  Tensor loss;
  // Per stage: the most micro-batches whose activations this rank held at once (0 for stages on
  // other ranks).
  std::vector<int> peak_alive;
  // This rank's time computing inside its actions (waits for other stages excluded) and the
  // step's wall time (seconds): 1 - busy/step is its share of the bubble.
  double busy_seconds = 0, step_seconds = 0;
};

class Pipeline {
 public:
  // `groups`: one placement per pipeline rank group, disjoint. `blocks`: the model's layers in
  // order, spread over the p * chunks stages by options.stage_of_block; stage s runs on
  // groups[schedule().group_of(s)] (s mod p, or zbv's V). `first` modules run before the blocks on the first stage (an embedding), `last`
  // after them on the last stage (a head). Every module's parameters and buffers are moved to its
  // stage's placement (local ones become broadcast; global ones keep their SBP). Errors (no
  // communication happens first): overlapping groups, a bad stage plan, more stages than blocks,
  // a schedule that cannot run the micro-batch count.
  Pipeline(std::vector<Placement> groups, std::vector<nn::UnaryModule*> blocks, Options options,
           std::vector<nn::UnaryModule*> first = {}, std::vector<nn::UnaryModule*> last = {});

  // A tensor slot of a later stage's module (a tied head's weight) that takes the value of a
  // parameter of an earlier stage (the embedding's): each step copies the value in, and the
  // slot's gradient is added to the parameter's, so it gets the sum of both stages' gradients.
  // The slot should not also be given to the optimizer.
  void tie(Tensor& parameter, Tensor& slot);

  // The expected per-micro-batch input shape of `stage` (-1: any extent). A stage whose output
  // does not match is an error on both ends of the transfer, naming both stages and shapes.
  void expect_input(int stage, Shape shape);

  // Forward and backward of every micro-batch of `input` (rows split along dim 0, the first ones
  // one longer when uneven) with `target` split the same way; gradients accumulate into the
  // parameters (data-parallel reductions once per step, when read). Collective.
  StepResult step(const Tensor& input, const Tensor& target, const LossFn& loss);
  // The forward passes of step() only, without gradients (validation, generation): returns the
  // batch's mean of `loss` over the micro-batches, as StepResult::loss. Collective.
  Tensor evaluate(const Tensor& input, const Tensor& target, const LossFn& loss);

  const Schedule& schedule() const { return schedule_; }
  int stages() const { return schedule_.stages(); }
  const Placement& placement_of(int stage) const { return groups_[size_t(schedule_.group_of(stage))]; }
  // Which blocks each stage holds and where: "stage 0 on placement(cpu, [0]): blocks 0-2 (+ first)".
  std::string describe() const;

 private:
  struct Stage {
    std::vector<nn::UnaryModule*> modules;
    int first_block = 0, blocks = 0;
    std::optional<Shape> expected_input;
  };
  struct Tie {
    Tensor* parameter;
    Tensor* slot;
    int slot_stage;
  };
  // State of one (stage, micro-batch) between its actions.
  struct Live {
    Tensor input;   // the stage's input as a leaf (its gradient goes back)
    Tensor output;  // the stage's output, or the scaled loss on the last stage
    WeightGradWork weights;
  };

  struct StepRun;  // one step's run, in phases (pipeline.cpp)
  StepResult run(const Tensor& input, const Tensor& target, const LossFn& loss, bool train);
  // A tied parameter must not be fully sharded: an error naming it otherwise.
  void check_ties_unsharded() const;
  bool mine(int stage) const;
  Tensor forward(int stage, const Tensor& x);
  Tensor transfer(const Tensor& t, int from, int to, int mb, bool forward_dir, const Tensor& like);

  std::vector<Placement> groups_;
  Schedule schedule_;
  std::vector<Stage> stages_;
  std::vector<Tie> ties_;
  double waited_ = 0;  // this step's seconds spent receiving inside actions
};

}  // namespace globe::pipeline
