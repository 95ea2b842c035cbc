// A Llama-family model (Llama 2 / 3, and the many models of its shape): RMSNorm, rotary positions
// (with Llama 3's frequency scaling), a SwiGLU MLP, grouped-query attention and a tied or untied
// head, built from Globe modules so that the same code runs on one process or on a data x tensor x
// pipeline mesh. Parameter names are Hugging Face's (model.layers.0.self_attn.q_proj.weight, ...),
// so a `save_pretrained` directory loads with load_sharded into any layout.
//
//   llama::Config c = llama::read_config("ckpt/config.json");
//   llama::Llama model(c);               // Embed -> Block x layers -> Head
//   model.load_state_dict(globe::load_sharded("ckpt", model.state_dict()));
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include <globe/globe.h>

namespace llama {

// Llama 3's scaling of the rotary frequencies (rope_scaling {"rope_type": "llama3", ...}).
struct RopeScaling {
  double factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_max_positions = 8192;
};

// The fields of a Hugging Face LlamaConfig that shape the model.
struct Config {
  int64_t vocab = 32000, hidden = 4096, intermediate = 11008, layers = 32, heads = 32, kv_heads = 32, head_dim = 128;
  int64_t max_positions = 2048;
  double rms_eps = 1e-6, rope_theta = 10000.0, init_std = 0.02;
  bool tied = false;
  std::optional<RopeScaling> rope_scaling;
};

// config.json as transformers writes it. What this model does not implement (attention or MLP
// biases, another activation, another rope type) is an error naming the field.
Config config_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json read_json(const std::string& path);
inline Config read_config(const std::string& path) { return config_from_json(read_json(path), path); }

// The cos and sin tables of the rotary embedding for positions [0, T), as Hugging Face computes them
// in float32: [T, head_dim / 2] each (Hugging Face repeats them for both halves;
// globe::rotary_embedding takes each once).
std::pair<globe::Tensor, globe::Tensor> rope_tables(const Config& c, int64_t T);

// idx [B, T] int64 -> x [B, T, E]
class Embed : public globe::nn::UnaryModule {
 public:
  explicit Embed(const Config& c);
  globe::Tensor forward(const globe::Tensor& idx) override;
  globe::nn::Embedding embed_tokens;
};

class Attention : public globe::nn::Module {
 public:
  explicit Attention(const Config& c);
  globe::nn::Linear q_proj, k_proj, v_proj, o_proj;
};

class MLP : public globe::nn::Module {
 public:
  explicit MLP(const Config& c);
  globe::nn::Linear gate_proj, up_proj, down_proj;
};

// The rotary tables of every position, by placement and dtype: made once, shared by the blocks.
using RopeCache = std::map<std::string, std::pair<globe::Tensor, globe::Tensor>>;

// x [B, T, E] -> x [B, T, E]: pre-norm attention and SwiGLU MLP, each added to the residual.
class Block : public globe::nn::UnaryModule {
 public:
  Block(const Config& c, std::shared_ptr<RopeCache> rope);
  globe::Tensor forward(const globe::Tensor& x) override;
  // Generation's key/value cache. While on, each forward appends its rotated keys and values
  // ([B, KV, t, D]: split by KV heads under tensor parallelism, on this block's ranks only) and its
  // tokens take the positions after the cached ones; a forward after the first takes one token.
  // Turning it on or off empties it.
  void set_cache(bool on);
  const globe::Tensor& cached_keys() const { return cache_k_; }
  globe::nn::RMSNorm input_layernorm;
  Attention self_attn;
  globe::nn::RMSNorm post_attention_layernorm;
  MLP mlp;

 private:
  Config config_;
  std::shared_ptr<RopeCache> rope_;
  // cos and sin of positions [start, start + T), [T, D] each, on `like`'s placement and dtype
  std::pair<globe::Tensor, globe::Tensor> rope_for(const globe::Tensor& like, int64_t start, int64_t T);
  bool cache_on_ = false;
  globe::Tensor cache_k_, cache_v_;
};

// x [B, T, E] -> logits [B, T, V] = norm(x) @ weight^T. `weight` is lm_head's parameter, or, when
// the head is tied, a buffer holding the embedding's (the tensor itself on one stage, else a copy
// the pipeline refreshes: Pipeline::tie).
class Head : public globe::nn::UnaryModule {
 public:
  explicit Head(const Config& c);
  globe::Tensor forward(const globe::Tensor& x) override;
  globe::nn::RMSNorm norm;
  globe::nn::Linear lm_head;  // untied; its weight unused (and unregistered) when tied
  globe::Tensor tied_weight;
  bool tied;
};

class Llama : public globe::nn::Module {
 public:
  // Weights N(0, init_std), norms 1, from the global seed; with `init` false, zeros and ones (for a
  // checkpoint to replace: no time spent drawing numbers).
  explicit Llama(const Config& c, bool init = true);
  std::vector<globe::nn::UnaryModule*> block_list();
  // Every block's KV cache on or off (Block::set_cache): on for generation, one token a pass.
  void set_cache(bool on);

  Config config;
  Embed embed;
  std::vector<std::unique_ptr<Block>> blocks;
  Head head;

 private:
  globe::nn::Module model_, layers_;  // Hugging Face's key prefixes: model., model.layers.
};

// Megatron's tensor-parallel plan on each stage's mesh (the last axis): vocabulary-parallel
// embedding and head, q/k/v and gate/up column-parallel (by heads and KV heads), o and down
// row-parallel, norms replicated. Checks that heads, KV heads and the MLP width divide.
void distribute_tensor_parallel(Llama& model);

}  // namespace llama
