// Reverse-mode differentiation over the recorded graph.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

class Node;

// Accumulates d(root)/d(leaf) into every leaf that requires grad. `grad_seed` defaults to ones
// (root must then be a scalar). Runs under no-grad: no graph of the graph.
//
// A backward that reaches a node whose gradient must first arrive from ranks of another placement
// (the backward of a cross-placement to_global, on a rank that only receives) pauses there: the
// rest runs later, in the order the backward calls were made, when a gradient is read (grad(), an
// optimizer step) or at exit. This is what lets a plain loop of per-micro-batch backward() calls
// overlap pipeline stages: stage 0 goes on with the next forward while the later stages
// work. finish_backward() runs every paused backward now.
void run_backward(const Tensor& root, const Tensor& grad_seed = Tensor());
void finish_backward();

// Backward split in two, as zero-bubble pipeline schedules need it. run_input_backward() computes
// the gradients that flow to `inputs` (leaves: a pipeline stage's input) and leaves out every
// contribution to other leaves (the stage's weights); the returned work computes those later, with
// the same values and accumulation order as one run_backward(). The pass frees the graph as it
// goes: the work keeps only what the weight gradients need (each such node's inputs' values and
// its output gradient), so the graph cannot be run backward again.
class WeightGradWork {
 public:
  void run();
  bool empty() const { return items_.empty(); }

  struct Item {
    std::shared_ptr<Node> node;
    Tensor grad;              // of the node's output
    std::vector<bool> needs;  // the weight inputs
  };

 private:
  friend WeightGradWork run_input_backward(const Tensor&, const Tensor&, const std::vector<Tensor>&);
  std::vector<Item> items_;
};
WeightGradWork run_input_backward(const Tensor& root, const Tensor& grad_seed, const std::vector<Tensor>& inputs);

// The gradients of `root` (seeded with `grad_seed`, ones for a scalar when undefined) with respect
// to `targets`, in their order, undefined where none flows, as torch.autograd.grad: nothing is
// accumulated into leaves and the graph is walked no further than the targets. Every tensor the
// gradient reaches that requires grad must be a target or lead to one (an error names it
// otherwise). Activation recomputation (checkpoint.h) runs its region's backward with it.
std::vector<Tensor> gradients(const Tensor& root, const Tensor& grad_seed, const std::vector<Tensor>& targets);

namespace detail {
// The nodes reachable from `root` without passing through a tensor for which `stop` is true (none
// when empty), in the order the engine runs them: each node before the nodes that feed it.
std::vector<std::shared_ptr<Node>> backward_order(const std::shared_ptr<Node>& root,
                                                  const std::function<bool(const Tensor&)>& stop = {});

// grad() of a leaf whose backward may be paused: finishes the paused passes and reads it through
// the gradients' route (leaf_gradients.h; core's read_grad hook, installed with the global layer).
Tensor read_grad(const Tensor& leaf);
// Whether a backward pass is paused (finish_backward would run it).
bool backward_paused();
}  // namespace detail

}  // namespace globe
