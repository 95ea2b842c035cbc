// Parameter initialisation, matching PyTorch's (torch.nn.init). Values come from the default
// generator (core/random.h): after manual_seed every rank draws the same ones; a global tensor's
// are the same in any layout (the global generator), so a tensor initialised after to_global holds
// the values it would hold whole.
#pragma once

#include <string>

#include "globe/core/tensor.h"

namespace globe::nn::init {

// While one is alive on this thread, the layers' default initialisations (linear_uniform,
// default_normal: the constructors of Linear, Embedding and their parallel forms) only allocate
// their tensors, as torch.nn.utils.skip_init: for a model whose weights a checkpoint is about to
// overwrite, no time drawing numbers and no memory touched (measured: a third of a 4-rank Llama
// load's CPU time was spent drawing the weights it then overwrote). Each skipped draw still takes
// its generator call, so every random draw after it (dropout, sampling) is an initialised model's.
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;

 private:
  bool previous_;
};
bool skipping_init();

// U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch's kaiming_uniform_(a=sqrt(5)) for Linear weights
// reduces to exactly this bound, and so does its bias init.
Tensor linear_uniform(const Shape& shape, int64_t fan_in);
// N(0, 1): torch's Embedding init.
Tensor default_normal(const Shape& shape);

// In place (no gradient recorded), local or global tensors alike; each returns its tensor.
// A partial_sum layout is refused: its pieces are terms, not values.
Tensor& uniform_(Tensor& t, double low = 0.0, double high = 1.0);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
// Fans as torch computes them: fan_in = size(1) * receptive field, fan_out = size(0) * receptive
// field (the product of the dims after the first two); at least 2 dims.
struct Fans {
  int64_t in, out;
};
Fans fans_of(const Tensor& t, const char* op);
// torch.nn.init.calculate_gain: "linear", "conv*", "sigmoid" 1; "tanh" 5/3; "relu" sqrt(2);
// "leaky_relu" sqrt(2 / (1 + param^2)); "selu" 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0);
Tensor& xavier_normal_(Tensor& t, double gain = 1.0);
// mode "fan_in" or "fan_out"; `a` the negative slope for leaky_relu.
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");

}  // namespace globe::nn::init
