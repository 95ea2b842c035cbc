// Standard layers. Each is a Module with named parameters; call them like functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "globe/nn/module.h"
#include "globe/ops/ops.h"

namespace globe::nn {

// A module with one tensor in and one out (what Sequential and Pipeline chain).
class UnaryModule : public Module {
 public:
  virtual Tensor forward(const Tensor& x) = 0;
  // forward(x), or, when marked for recomputation, forward(x) whose intermediates are not kept:
  // they are recomputed in the backward (globe::checkpoint, autograd/checkpoint.h).
  Tensor operator()(const Tensor& x);
  // Activation recomputation for this module (Megatron's full recompute of a layer, torch's
  // checkpoint_wrapper): `label` names it in errors ("transformer.h.3"). The module must outlive
  // the backward of every call made with the mark on.
  void set_recompute(bool on = true, std::string label = "");
  bool recompute() const { return recompute_; }

 private:
  Tensor call_forward(const Tensor& x);
  bool recompute_ = false;
  std::string recompute_label_;
};

// y = x @ weight^T + bias; weight [out, in], bias [out].
class Linear : public UnaryModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

class ReLU : public UnaryModule {
 public:
  Tensor forward(const Tensor& x) override;
};

class GELU : public UnaryModule {
 public:
  // `tanh_approximation`: torch's GELU(approximate='tanh'), GPT-2's.
  explicit GELU(bool tanh_approximation = false) : tanh_(tanh_approximation) {}
  Tensor forward(const Tensor& x) override;

 private:
  bool tanh_;
};

class Tanh : public UnaryModule {
 public:
  Tensor forward(const Tensor& x) override;
};

class Dropout : public UnaryModule {
 public:
  explicit Dropout(double p = 0.5) : p_(p) {}
  Tensor forward(const Tensor& x) override;

 private:
  double p_;
};

// Lookup table: weight [num_embeddings, dim] ~ N(0, 1); int64 indices [...] -> [..., dim].
class Embedding : public UnaryModule {
 public:
  Embedding(int64_t num_embeddings, int64_t dim);
  Tensor forward(const Tensor& indices) override;
  Tensor weight;
};

// Normalises the trailing `normalized_shape` dims; weight ones, bias zeros.
class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  Shape normalized_shape_;
  double eps_;
};

// Llama's RMSNorm over the last dim (ops.h rms_norm); weight ones.
class RMSNorm : public UnaryModule {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6);
  Tensor forward(const Tensor& x) override;
  Tensor weight;

 private:
  double eps_;
};

class Flatten : public UnaryModule {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override;

 private:
  int64_t start_, end_;
};

// Owns its children, named "0", "1", ... in order.
class Sequential : public UnaryModule {
 public:
  Sequential() = default;
  template <class... M>
  explicit Sequential(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }
  void push_back(std::shared_ptr<UnaryModule> module);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return layers_.size(); }
  UnaryModule& operator[](size_t i) { return *layers_.at(i); }

 private:
  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

// Losses reduce as torch's reduction= says: Reduction::mean (the default), sum or none.
class MSELoss : public Module {
 public:
  explicit MSELoss(Reduction reduction = Reduction::mean) : reduction_(reduction) {}
  Tensor operator()(const Tensor& input, const Tensor& target) const;

 private:
  Reduction reduction_;
};

// logits [..., C], int64 targets [...] -> the negative log-likelihood of each target, reduced.
class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(Reduction reduction = Reduction::mean) : reduction_(reduction) {}
  Tensor operator()(const Tensor& logits, const Tensor& target) const;

 private:
  Reduction reduction_;
};

}  // namespace globe::nn
