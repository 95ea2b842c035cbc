// Optimizers update parameters in place from their .grad (on each rank's local shard: a global
// parameter's gradient already has the parameter's own layout, docs/design.md §6).
#pragma once

#include <vector>

#include "globe/core/tensor.h"
#include "globe/nn/state_dict.h"

namespace globe::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  // Drops every gradient (torch's set_to_none=True).
  void zero_grad();
  // Per-parameter state as "state.<i>.<name>" tensors (Adam: step, exp_avg, exp_avg_sq; SGD:
  // momentum_buffer); hyper-parameters are not saved.
  virtual StateDict state_dict() const = 0;
  virtual void load_state_dict(const StateDict& state) = 0;
  const std::vector<Tensor>& params() const { return params_; }

  // ZeRO as layouts (docs/design.md §15). Stage 1: the optimizer state of a parameter that is
  // broadcast over a mesh axis (data parallelism) is split over that axis instead — each rank
  // updates its block of the parameter with its block of the state, and the parameter is
  // all-gathered back. Stage 2: the gradient too is reduced straight into that split layout (a
  // reduce-scatter, not an all-reduce) as the backward completes it, and left there: each rank
  // holds 1/n of each gradient after the backward. 0 turns it off. The same losses as the
  // replicated run, within float rounding; every rank must set the same stage (collective).
  void set_zero_stage(int stage);
  int zero_stage() const { return zero_stage_; }
  // Bytes of optimizer state this rank holds (the local blocks of every state tensor).
  int64_t state_bytes() const;
  // What this rank holds for training, in bytes of its local blocks: the parameters, their
  // gradients as they are now (a pending one in its own layout) and the optimizer state. With
  // the step's activations (what a step holds above these) it is the memory table the GPT prints.
  struct Memory {
    int64_t parameters = 0, gradients = 0, state = 0;
  };
  Memory memory() const;

 protected:
  // The tensors of state kept per parameter (for state_bytes()).
  virtual std::vector<Tensor> state_tensors() const = 0;
  std::vector<Tensor> params_;
  int zero_stage_ = 0;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// torch.optim.SGD semantics (momentum buffer starts as the first gradient).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options = {});
  void step() override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  SGDOptions& options() { return options_; }

 protected:
  std::vector<Tensor> state_tensors() const override { return momentum_; }

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_;  // undefined until first used
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// Parameters that share a weight decay (torch's parameter groups, as far as AdamW needs them:
// nanoGPT decays 2-D weights and not biases or norms).
struct ParamGroup {
  std::vector<Tensor> params;
  double weight_decay = 0.0;
};
// {params of 2 or more dims: weight_decay}, {the rest: 0}, each in the order given.
std::vector<ParamGroup> decay_matrices_only(const std::vector<Tensor>& params, double weight_decay);

// torch.optim.Adam; with `decoupled` (AdamW) weight decay shrinks the parameter directly.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {}, bool decoupled = false);
  // Groups with their own weight decay (options.weight_decay is not used); parameters are indexed
  // group after group (state_dict keys).
  Adam(const std::vector<ParamGroup>& groups, AdamOptions options, bool decoupled = false);
  void step() override;
  StateDict state_dict() const override;
  void load_state_dict(const StateDict& state) override;
  AdamOptions& options() { return options_; }

 protected:
  std::vector<Tensor> state_tensors() const override;

 private:
  AdamOptions options_;
  bool decoupled_;
  std::vector<int64_t> steps_;  // per parameter
  std::vector<double> weight_decay_;  // per parameter

  std::vector<Tensor> exp_avg_, exp_avg_sq_;
};

// torch.optim.AdamW (default weight_decay 0.01).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options = {.weight_decay = 0.01})
      : Adam(std::move(params), options, /*decoupled=*/true) {}
  AdamW(const std::vector<ParamGroup>& groups, AdamOptions options)
      : Adam(groups, options, /*decoupled=*/true) {}
};

}  // namespace globe::optim
