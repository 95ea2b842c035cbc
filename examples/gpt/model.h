// The GPT of tutorial 07 (docs/07-gpt-3d.md): GPT-2's architecture at nanoGPT's names, built from
// Globe modules so that the same code runs on one process or on a data x tensor x pipeline mesh.
//
//   gpt::GPT model({.layers = 4, .heads = 4, .embd = 128, .block = 64, .vocab = 256});
//   // Embed -> Block x layers -> Head; the pipeline (gpt/trainer.h) cuts the blocks into stages
//
// State-dict keys are nanoGPT's (transformer.wte.weight, transformer.h.0.attn.c_attn.weight, ...)
// with one difference: c_attn's weight is [3, E, E] and its bias [3, E] (nanoGPT: [3E, E], [3E]),
// the same numbers in the same order with q, k, v as a leading axis, so tensor parallelism can
// split every one of them by heads. interop.h converts to and from nanoGPT's files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <globe/globe.h>

namespace gpt {

struct Config {
  int64_t layers = 4, heads = 4, embd = 128, block = 64, vocab = 256;
};

// idx [B, T] int64 -> x [B, T, E]: token embedding plus learned position.
class Embed : public globe::nn::UnaryModule {
 public:
  explicit Embed(const Config& c);
  globe::Tensor forward(const globe::Tensor& idx) override;
  globe::nn::Embedding wte, wpe;
};

// q, k, v projections: weight [3, E, E] (each [out, in], as a Linear's), bias [3, E].
class QKV : public globe::nn::Module {
 public:
  explicit QKV(int64_t embd);
  globe::Tensor weight, bias;
};

class Attention : public globe::nn::Module {
 public:
  explicit Attention(const Config& c);
  QKV c_attn;
  globe::nn::Linear c_proj;
};

class MLP : public globe::nn::Module {
 public:
  explicit MLP(const Config& c);
  globe::nn::Linear c_fc, c_proj;
};

// x [B, T, E] -> x [B, T, E]: pre-norm attention and MLP, each added to the residual.
class Block : public globe::nn::UnaryModule {
 public:
  explicit Block(const Config& c);
  globe::Tensor forward(const globe::Tensor& x) override;
  globe::nn::LayerNorm ln_1, ln_2;
  Attention attn;
  MLP mlp;

 private:
  int64_t heads_;
};

// x [B, T, E] -> logits [B, T, V] = ln_f(x) @ wte^T. `wte` is a buffer, not a parameter: it holds
// the token embedding's weight, tied — the tensor itself when both are on one stage, else a copy
// the pipeline refreshes each step and whose gradient it adds back (Pipeline::tie).
class Head : public globe::nn::UnaryModule {
 public:
  explicit Head(const Config& c);
  globe::Tensor forward(const globe::Tensor& x) override;
  globe::nn::LayerNorm ln_f;
  globe::Tensor wte;
};

class GPT : public globe::nn::Module {
 public:
  // Initialised as nanoGPT from the global seed: weights N(0, 0.02), the residual projections
  // (c_proj) N(0, 0.02 / sqrt(2 * layers)), biases 0, layer norms 1 and 0.
  explicit GPT(const Config& c);
  std::vector<globe::nn::UnaryModule*> block_list();

  Config config;
  Embed embed;
  std::vector<std::unique_ptr<Block>> blocks;
  Head head;

 private:
  globe::nn::Module transformer_, h_;  // nanoGPT's key prefixes: transformer., transformer.h.
};

// The tensor-parallel plan (Megatron's) of each module kind, on its placement's last mesh axis:
// vocabulary-parallel embedding, column-parallel c_attn (by heads) and c_fc, row-parallel c_proj;
// every other tensor (positions, layer norms, row-parallel biases) replicated. Other mesh axes
// (data parallel) hold copies. Names are relative to the module.
using Plan = std::vector<std::pair<std::string, globe::NdSbp>>;
Plan embed_plan(const globe::Placement& p);
Plan block_plan(const globe::Placement& p);

// Lays out every module of `model` by its plan on the placement its parameters already sit on
// (the pipeline put each stage's modules there). Collective.
void distribute_tensor_parallel(GPT& model);

}  // namespace gpt
