#include "model.h"

#include <cmath>

namespace gpt {

using globe::Tensor;
namespace sbp = globe::sbp;

Embed::Embed(const Config& c) : wte(c.vocab, c.embd), wpe(c.block, c.embd) {
  register_modules({{"wte", wte}, {"wpe", wpe}});
}

Tensor Embed::forward(const Tensor& idx) {  // idx [B, T]
  const int64_t T = idx.shape().back(), block = wpe.weight.shape()[0];
  GLOBE_CHECK(idx.dim() == 2 && T <= block, "[gpt] input ", globe::describe(idx), " is longer than the context (",
              block, " positions; --block)");
  // wte[idx] [B, T, E] + wpe[0:T] [T, E] (the positions 0..T-1 are the first T rows)
  return globe::nn::reduce_over_tp(globe::embedding(wte.weight, idx)) + globe::narrow(wpe.weight, 0, 0, T);
}

QKV::QKV(int64_t E) : weight(globe::zeros({3, E, E})), bias(globe::zeros({3, E})) {
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Attention::Attention(const Config& c) : c_attn(c.embd), c_proj(c.embd, c.embd) {
  register_modules({{"c_attn", c_attn}, {"c_proj", c_proj}});
}

MLP::MLP(const Config& c) : c_fc(c.embd, 4 * c.embd), c_proj(4 * c.embd, c.embd) {
  register_modules({{"c_fc", c_fc}, {"c_proj", c_proj}});
}

Block::Block(const Config& c) : ln_1({c.embd}), ln_2({c.embd}), attn(c), mlp(c), heads_(c.heads) {
  register_modules({{"ln_1", ln_1}, {"attn", attn}, {"ln_2", ln_2}, {"mlp", mlp}});
}

Tensor Block::forward(const Tensor& x) {  // x [B, T, E]
  using namespace globe;
  const int64_t B = x.shape()[0], T = x.shape()[1], E = x.shape()[2], H = heads_, D = E / H;
  // q, k, v in one batched product: [1, B*T, E] @ [3, E, E]^T + bias [3, 1, E] -> [3, B*T, E]
  const Tensor h = unsqueeze(reshape(nn::enter_tp_region(ln_1(x)), {B * T, E}), 0);
  const Tensor qkv = matmul_nt(h, attn.c_attn.weight, unsqueeze(attn.c_attn.bias, 1));
  // as heads (views): [3, B*T, E] -> [3, B, T, H, D] -> [3, B, H, T, D]
  const Tensor heads = permute(reshape(qkv, {3, B, T, H, D}), {0, 1, 3, 2, 4});
  // softmax(q k^T / sqrt(D)) over the keys up to each query, times v: one fused op -> [B, H, T, D]
  const Tensor att = causal_attention(heads, 1.0 / std::sqrt(double(D)));
  // [B, H, T, D] -> [B, T, H, D] -> [B, T, E] (att is laid out as [B, T, H, D]: no copy)
  const Tensor y = reshape(transpose(att, 1, 2), {B, T, E});
  const Tensor a = x + nn::reduce_over_tp(attn.c_proj(y));
  // MLP: [B, T, E] -> [B, T, 4E] -> GELU -> [B, T, E]
  return a + nn::reduce_over_tp(mlp.c_proj(gelu_tanh(mlp.c_fc(nn::enter_tp_region(ln_2(a))))));
}

Head::Head(const Config& c) : ln_f({c.embd}), wte(globe::zeros({c.vocab, c.embd})) {
  register_module("ln_f", ln_f);
  register_buffer("wte", wte);
}

Tensor Head::forward(const Tensor& x) {  // [B, T, E] @ wte [V, E]^T -> [B, T, V]
  const Tensor h = globe::nn::enter_tp_region(ln_f(x));
  // The tied weight is a buffer here (the embedding owns it): in the activations' dtype under
  // mixed precision, a cast in the graph whose gradient comes back in float32.
  return globe::matmul_nt(h, globe::to_dtype(wte, h.dtype()));
}

GPT::GPT(const Config& c) : config(c), embed(c), head(c) {
  GLOBE_CHECK(c.layers >= 1 && c.heads >= 1 && c.embd >= 1 && c.block >= 1 && c.vocab >= 1,
              "[gpt] --layers, --heads, --embd, --block and --vocab must be positive");
  GLOBE_CHECK(c.embd % c.heads == 0, "[gpt] --embd ", c.embd, " is not divisible by --heads ", c.heads);
  for (int64_t i = 0; i < c.layers; ++i) blocks.push_back(std::make_unique<Block>(c));
  for (int64_t i = 0; i < c.layers; ++i) h_.register_module(std::to_string(i), *blocks[size_t(i)]);
  transformer_.register_modules({{"wte", embed.wte}, {"wpe", embed.wpe}, {"h", h_}, {"ln_f", head.ln_f}});
  register_module("transformer", transformer_);

  const double residual_std = 0.02 / std::sqrt(2.0 * double(c.layers));
  globe::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters()) {
    const bool is_bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    const bool is_norm = name.find(".ln_") != std::string::npos;
    if (is_norm) continue;  // 1 and 0 already
    if (is_bias) {
      globe::copy_(p, globe::zeros(p.shape()));
    } else {
      const bool residual = name.find("c_proj.weight") != std::string::npos;
      globe::copy_(p, globe::randn(p.shape()) * (residual ? residual_std : 0.02));
    }
  }
}

std::vector<globe::nn::UnaryModule*> GPT::block_list() {
  std::vector<globe::nn::UnaryModule*> out;
  for (auto& b : blocks) out.push_back(b.get());
  return out;
}

Plan embed_plan(const globe::Placement& p) { return {{"wte.weight", globe::nn::on_axis(p, -1, sbp::split(0))}}; }

Plan block_plan(const globe::Placement& p) {
  using globe::nn::on_axis;
  return {{"attn.c_attn.weight", on_axis(p, -1, sbp::split(1))},  // [3, E(out) / tp, E]: by heads
          {"attn.c_attn.bias", on_axis(p, -1, sbp::split(1))},
          {"attn.c_proj.weight", on_axis(p, -1, sbp::split(1))},  // [E, E(in) / tp]: row parallel
          {"mlp.c_fc.weight", on_axis(p, -1, sbp::split(0))},     // [4E / tp, E]: column parallel
          {"mlp.c_fc.bias", on_axis(p, -1, sbp::split(0))},
          {"mlp.c_proj.weight", on_axis(p, -1, sbp::split(1))}};  // [E, 4E / tp]: row parallel
}

void distribute_tensor_parallel(GPT& model) {
  auto lay_out = [](globe::nn::Module& m, const Plan& plan) {
    const globe::Placement p = m.parameters().front().placement();
    m.distribute(p, plan, globe::replicated(p.mesh_ndim()));
  };
  lay_out(model.embed, embed_plan(model.embed.wte.weight.placement()));
  for (auto& b : model.blocks) lay_out(*b, block_plan(b->ln_1.weight.placement()));
  lay_out(model.head, {{"wte", globe::nn::on_axis(model.head.wte.placement(), -1, sbp::split(0))}});
}

}  // namespace gpt
