#include "model.h"

#include <cmath>
#include <fstream>

namespace llama {

using globe::Tensor;
namespace sbp = globe::sbp;

Config config_from_json(const nlohmann::json& j, const std::string& where) {
  auto need = [&](const char* key) -> const nlohmann::json& {
    GLOBE_CHECK(j.contains(key) && j[key].is_number(), "[llama] '", where, "' has no number \"", key, "\"");
    return j[key];
  };
  auto opt = [&](const char* key, auto fallback) {
    return j.contains(key) && !j[key].is_null() ? j[key].get<decltype(fallback)>() : fallback;
  };
  Config c;
  c.vocab = need("vocab_size").get<int64_t>();
  c.hidden = need("hidden_size").get<int64_t>();
  c.intermediate = need("intermediate_size").get<int64_t>();
  c.layers = need("num_hidden_layers").get<int64_t>();
  c.heads = need("num_attention_heads").get<int64_t>();
  c.kv_heads = opt("num_key_value_heads", c.heads);
  GLOBE_CHECK(c.heads > 0 && c.hidden > 0, "[llama] '", where, "': num_attention_heads and hidden_size must be positive");
  c.head_dim = opt("head_dim", c.hidden / c.heads);
  c.max_positions = opt("max_position_embeddings", int64_t(2048));
  c.rms_eps = opt("rms_norm_eps", 1e-6);
  c.rope_theta = opt("rope_theta", 10000.0);
  c.init_std = opt("initializer_range", 0.02);
  c.tied = opt("tie_word_embeddings", false);
  GLOBE_CHECK(!opt("attention_bias", false) && !opt("mlp_bias", false), "[llama] '", where,
              "': attention_bias / mlp_bias are set; this model has no biases");
  GLOBE_CHECK(opt("hidden_act", std::string("silu")) == "silu", "[llama] '", where, "': hidden_act \"",
              opt("hidden_act", std::string()), "\" is not silu (SwiGLU), the only activation this model has");
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const nlohmann::json& r = j["rope_scaling"];
    const std::string type = r.value("rope_type", r.value("type", std::string()));
    GLOBE_CHECK(type == "llama3", "[llama] '", where, "': rope_scaling type \"", type,
                "\" is not supported (only \"llama3\")");
    c.rope_scaling = RopeScaling{r.value("factor", 8.0), r.value("low_freq_factor", 1.0), r.value("high_freq_factor", 4.0),
                                 r.value("original_max_position_embeddings", int64_t(8192))};
  }
  GLOBE_CHECK(c.vocab > 0 && c.intermediate > 0 && c.layers > 0 && c.kv_heads > 0 && c.head_dim > 0 && c.head_dim % 2 == 0,
              "[llama] '", where, "': sizes must be positive and head_dim even");
  GLOBE_CHECK(c.heads % c.kv_heads == 0, "[llama] '", where, "': num_attention_heads ", c.heads,
              " is not a multiple of num_key_value_heads ", c.kv_heads);
  return c;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  GLOBE_CHECK(in.good(), "[llama] cannot read '", path, "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    GLOBE_FAIL("[llama] '", path, "' is not valid JSON: ", e.what());
  }
}

std::pair<Tensor, Tensor> rope_tables(const Config& c, int64_t T) {
  // Each step in float32 as transformers does it (the same roundings).
  const int64_t D = c.head_dim, half = D / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[size_t(i)] = 1.0f / std::pow(float(c.rope_theta), float(2 * i) / float(D));
  if (c.rope_scaling) {  // Llama 3: long wavelengths slowed by `factor`, the middle band blended
    const RopeScaling& r = *c.rope_scaling;
    const float factor = float(r.factor), lo = float(r.low_freq_factor), hi = float(r.high_freq_factor),
                old = float(r.original_max_positions);
    const float low_wavelen = float(double(r.original_max_positions) / r.low_freq_factor),
                high_wavelen = float(double(r.original_max_positions) / r.high_freq_factor);
    for (float& f : inv) {
      const float wavelen = float(2 * M_PI) / f;
      const float scaled = wavelen > low_wavelen ? f / factor : f;
      const float smooth = (old / wavelen - lo) / (hi - lo);
      const float blended = (1 - smooth) * scaled / factor + smooth * scaled;
      f = !(wavelen < high_wavelen) && !(wavelen > low_wavelen) ? blended : scaled;
    }
  }
  std::vector<float> cos(size_t(T * half)), sin(size_t(T * half));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = float(t) * inv[size_t(i)];
      cos[size_t(t * half + i)] = std::cos(angle);
      sin[size_t(t * half + i)] = std::sin(angle);
    }
  return {globe::from_vector(cos, {T, half}), globe::from_vector(sin, {T, half})};
}

namespace {

// Hugging Face's x * cos + rotate_half(x) * sin, one fused op.
Tensor rotate(const Tensor& x, const std::pair<Tensor, Tensor>& cs) {
  return globe::rotary_embedding(x, cs.first, cs.second);
}

// [B, KV, T, D] -> [B, KV * G, T, D], each KV head repeated for its G query heads (a copy).
Tensor repeat_kv(const Tensor& x, int64_t G) {
  if (G == 1) return x;
  const globe::Shape& s = x.shape();
  return globe::reshape(globe::expand(globe::unsqueeze(x, 2), {s[0], s[1], G, s[2], s[3]}), {s[0], s[1] * G, s[2], s[3]});
}

}  // namespace

Embed::Embed(const Config& c) : embed_tokens(c.vocab, c.hidden) { register_module("embed_tokens", embed_tokens); }

Tensor Embed::forward(const Tensor& idx) {  // idx [B, T]
  GLOBE_CHECK(idx.dim() == 2, "[llama] input ", globe::describe(idx), " is not a [batch, tokens] tensor");
  return globe::nn::reduce_over_tp(globe::embedding(embed_tokens.weight, idx));
}

Attention::Attention(const Config& c)
    : q_proj(c.hidden, c.heads * c.head_dim, false),
      k_proj(c.hidden, c.kv_heads * c.head_dim, false),
      v_proj(c.hidden, c.kv_heads * c.head_dim, false),
      o_proj(c.heads * c.head_dim, c.hidden, false) {
  register_modules({{"q_proj", q_proj}, {"k_proj", k_proj}, {"v_proj", v_proj}, {"o_proj", o_proj}});
}

MLP::MLP(const Config& c)
    : gate_proj(c.hidden, c.intermediate, false),
      up_proj(c.hidden, c.intermediate, false),
      down_proj(c.intermediate, c.hidden, false) {
  register_modules({{"gate_proj", gate_proj}, {"up_proj", up_proj}, {"down_proj", down_proj}});
}

Block::Block(const Config& c, std::shared_ptr<RopeCache> rope)
    : input_layernorm(c.hidden, c.rms_eps),
      self_attn(c),
      post_attention_layernorm(c.hidden, c.rms_eps),
      mlp(c),
      config_(c),
      rope_(std::move(rope)) {
  register_modules({{"input_layernorm", input_layernorm},
                    {"self_attn", self_attn},
                    {"post_attention_layernorm", post_attention_layernorm},
                    {"mlp", mlp}});
}

std::pair<Tensor, Tensor> Block::rope_for(const Tensor& like, int64_t start, int64_t T) {
  GLOBE_CHECK(start + T <= config_.max_positions, "[llama] position ", start + T - 1, " is past the model's ",
              config_.max_positions, " positions (max_position_embeddings)");
  const std::string key = (like.is_global() ? like.placement().to_string() : like.device().str()) + globe::dtype_name(like.dtype());
  auto it = rope_->find(key);
  if (it == rope_->end()) {
    auto [cos, sin] = rope_tables(config_, config_.max_positions);
    auto place = [&](const Tensor& t) {
      const Tensor v = globe::to_dtype(t, like.dtype());
      if (!like.is_global()) return globe::to(v, like.device());
      return globe::from_full(v, like.placement(), globe::replicated(like.placement().mesh_ndim()));
    };
    it = rope_->emplace(key, std::make_pair(place(cos), place(sin))).first;
  }
  return {globe::narrow(it->second.first, 0, start, T), globe::narrow(it->second.second, 0, start, T)};
}

void Block::set_cache(bool on) {
  cache_on_ = on;
  cache_k_ = cache_v_ = Tensor();
}

Tensor Block::forward(const Tensor& x) {  // x [B, T, E]
  using namespace globe;
  const int64_t B = x.shape()[0], T = x.shape()[1];
  const int64_t H = config_.heads, KV = config_.kv_heads, D = config_.head_dim, G = H / KV;
  const int64_t past = cache_k_.defined() ? cache_k_.shape()[2] : 0;  // positions already cached
  GLOBE_CHECK(past == 0 || T == 1, "[llama] with the KV cache, each pass after the first takes one token, not ", T);
  const Tensor h = nn::enter_tp_region(input_layernorm(x));
  // [B, T, n * D] -> [B, n, T, D] (views), rotated by position
  auto heads = [&](nn::Linear& proj, int64_t n) { return transpose(reshape(proj(h), {B, T, n, D}), 1, 2); };
  const std::pair<Tensor, Tensor> cs = rope_for(h, past, T);
  const Tensor q = rotate(heads(self_attn.q_proj, H), cs);
  Tensor k = rotate(heads(self_attn.k_proj, KV), cs), v = heads(self_attn.v_proj, KV);
  if (cache_on_) {
    if (past > 0) {
      k = cat({cache_k_, k}, 2);
      v = cat({cache_v_, v}, 2);
    }
    cache_k_ = k;
    cache_v_ = v;
  }
  // softmax(q k^T / sqrt(D)) over the keys up to each query, times v; each KV head serves G query
  // heads -> [B, H, T, D]
  const double scale = 1.0 / std::sqrt(double(D));
  Tensor att;
  if (past == 0) {  // every position at once: one fused op, laid out as [B, T, H, D]
    att = causal_attention(cat({unsqueeze(q, 0), unsqueeze(repeat_kv(k, G), 0), unsqueeze(repeat_kv(v, G), 0)}, 0), scale);
  } else {  // one new position: it sees every cached key
    att = matmul(softmax(matmul(q, transpose(repeat_kv(k, G), 2, 3)) * scale, -1), repeat_kv(v, G));
  }
  const Tensor a = x + nn::reduce_over_tp(self_attn.o_proj(reshape(transpose(att, 1, 2), {B, T, H * D})));
  // SwiGLU: down(silu(gate(h)) * up(h))
  const Tensor h2 = nn::enter_tp_region(post_attention_layernorm(a));
  return a + nn::reduce_over_tp(mlp.down_proj(swiglu(mlp.gate_proj(h2), mlp.up_proj(h2))));
}

Head::Head(const Config& c) : norm(c.hidden, c.rms_eps), lm_head(c.hidden, c.tied ? 0 : c.vocab, false), tied(c.tied) {
  register_module("norm", norm);
  if (tied) {
    tied_weight = globe::zeros({c.vocab, c.hidden});
    register_buffer("tied_weight", tied_weight);
  } else {
    register_module("lm_head", lm_head);
  }
}

Tensor Head::forward(const Tensor& x) {  // [B, T, E] @ weight [V, E]^T -> [B, T, V]
  const Tensor h = globe::nn::enter_tp_region(norm(x));
  // The tied weight is a buffer here (the embedding owns it): in the activations' dtype under
  // mixed precision, a cast in the graph whose gradient comes back in float32.
  return tied ? globe::matmul_nt(h, globe::to_dtype(tied_weight, h.dtype())) : lm_head(h);
}

Llama::Llama(const Config& c, bool init) : config(c), embed(c), head(c) {
  const auto rope = std::make_shared<RopeCache>();
  for (int64_t i = 0; i < c.layers; ++i) blocks.push_back(std::make_unique<Block>(c, rope));
  for (int64_t i = 0; i < c.layers; ++i) layers_.register_module(std::to_string(i), *blocks[size_t(i)]);
  model_.register_modules({{"embed_tokens", embed.embed_tokens}, {"layers", layers_}, {"norm", head.norm}});
  register_module("model", model_);
  if (!c.tied) register_module("lm_head", head.lm_head);
  if (!init) return;
  globe::NoGradGuard no_grad;
  for (auto& [name, p] : named_parameters())
    if (name.find("norm.weight") == std::string::npos) globe::copy_(p, globe::randn(p.shape()) * c.init_std);
}

std::vector<globe::nn::UnaryModule*> Llama::block_list() {
  std::vector<globe::nn::UnaryModule*> out;
  for (auto& b : blocks) out.push_back(b.get());
  return out;
}

void Llama::set_cache(bool on) {
  for (auto& b : blocks) b->set_cache(on);
}

void distribute_tensor_parallel(Llama& model) {
  using globe::nn::on_axis;
  const Config& c = model.config;
  const globe::Placement& first = model.embed.embed_tokens.weight.placement();
  const int64_t tp = first.mesh_shape().back();
  GLOBE_CHECK(c.heads % tp == 0 && c.kv_heads % tp == 0, "[llama] ", c.heads, " attention heads on ", c.kv_heads,
              " KV heads cannot be split over --tp ", tp, ": tensor parallelism gives each rank whole heads and whole KV ",
              "heads (num_key_value_heads must be a multiple of tp)");
  auto lay_out = [](globe::nn::Module& m, const std::vector<std::pair<std::string, globe::NdSbp>>& plan) {
    const globe::Placement p = m.parameters().front().placement();
    m.distribute(p, plan, globe::replicated(p.mesh_ndim()));
  };
  auto split = [](const globe::Placement& p, int64_t d) { return on_axis(p, -1, sbp::split(d)); };
  lay_out(model.embed, {{"embed_tokens.weight", split(first, 0)}});
  for (auto& b : model.blocks) {
    const globe::Placement p = b->input_layernorm.weight.placement();
    lay_out(*b, {{"self_attn.q_proj.weight", split(p, 0)},  // [H * D / tp, E]: by heads
                 {"self_attn.k_proj.weight", split(p, 0)},  // [KV * D / tp, E]: by KV heads
                 {"self_attn.v_proj.weight", split(p, 0)},
                 {"self_attn.o_proj.weight", split(p, 1)},  // [E, H * D / tp]: row parallel
                 {"mlp.gate_proj.weight", split(p, 0)},     // [I / tp, E]: column parallel
                 {"mlp.up_proj.weight", split(p, 0)},
                 {"mlp.down_proj.weight", split(p, 1)}});   // [E, I / tp]: row parallel
  }
  const globe::Placement last = model.head.norm.weight.placement();
  lay_out(model.head, {{model.head.tied ? "tied_weight" : "lm_head.weight", split(last, 0)}});
}

}  // namespace llama
