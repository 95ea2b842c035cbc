// build/bin/llama: a Llama-family model from a Hugging Face checkpoint (or a config.json, randomly
// initialised) on data x tensor x pipeline parallel ranks: its logits for a batch, generated tokens,
// fine-tuning on a token file, and the weights written back as a Hugging Face checkpoint.
//
//   build/bin/llama --load-hf ckpt/ --generate 1,2,3 --tokens 20
//   build/bin/globe-launch --nproc_per_node 4 build/bin/llama --load-hf ckpt/ --tp 2 --pp 2 --data tokens.bin
//       --steps 100 --save-hf out/
//
// Ranks: stage s of the pipeline holds ranks [s * dp * tp, (s + 1) * dp * tp) as a dp x tp mesh.
// The last line (rank 0) is "RESULT {json}".
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "../example_util.h"
#include "../gpt/generate.h"
#include "globe/io/safetensors.h"
#include "globe/nn/init.h"
#include "model.h"
#include "tokenizer.h"
#include "tokens.h"

extern "C" void openblas_set_num_threads(int);

namespace {

using globe::Tensor;
namespace pp = globe::pipeline;

std::vector<int64_t> parse_ids(const std::string& s) {
  std::vector<int64_t> ids;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GLOBE_CHECK(used == item.size() && v >= 0, "[llama] --generate takes token ids separated by commas, not '", s, "'");
    ids.push_back(v);
  }
  return ids;
}

// The head's weight is the embedding's when tied: shared on one stage, tied across stages.
void tie_head(pp::Pipeline& pipe, llama::Llama& model) {
  if (!model.config.tied) return;
  if (pipe.stages() == 1) model.head.tied_weight = model.embed.embed_tokens.weight;
  else pipe.tie(model.embed.embed_tokens.weight, model.head.tied_weight);
}

int run(int argc, char** argv) {
  example::Args a(argc, argv,
                  "llama: a Llama-family model from a Hugging Face checkpoint, data x tensor x pipeline parallel\n"
                  "usage: globe-launch --nproc_per_node N llama --load-hf DIR [flags]");
  const std::string hf = a.text("--load-hf", "", "a Hugging Face checkpoint directory (config.json, safetensors)");
  const std::string config_path = a.text("--config", "", "without --load-hf: a config.json, weights from --seed");
  const int seed = a.integer("--seed", 0, "initialisation seed (without --load-hf)");
  const int tp = a.integer("--tp", 1, "tensor-parallel ranks");
  const int pipe_stages = a.integer("--pp", 1, "pipeline stages");
  const int dp_flag = a.integer("--dp", 0, "data-parallel ranks (0: what --tp x --pp leave)");
  const int microbatches = a.integer("--microbatches", 1, "micro-batches per step");
  const std::string schedule = a.text("--schedule", "1f1b", "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1 or zbv");
  const int zero = a.integer("--zero", 0, "ZeRO stage 0-3 over the data-parallel ranks");
  const bool recompute = a.flag("--recompute", "recompute each block's forward in the backward");
  const std::string dtype = a.text("--dtype", "float32", "compute dtype: float32 or bf16 (float32 master weights)");
  const std::string tokens_in = a.text("--logits-of", "", "a safetensors file whose int64 'tokens' [B, T] to run");
  const std::string logits_out = a.text("--logits-out", "", "with --logits-of: write the logits [B, T, V] here");
  const std::string data = a.text("--data", "", "a token file to train on (uint32 ids; --token-bytes 2: uint16)");
  const int token_bytes = a.integer("--token-bytes", 4, "bytes per token in --data: 2 or 4");
  const int block = a.integer("--block", 16, "tokens per training sequence");
  const int batch = a.integer("--batch", 4, "sequences per step, over all data-parallel ranks");
  const int steps = a.integer("--steps", 0, "training steps on --data");
  const double lr = a.number("--lr", 1e-3, "AdamW learning rate");
  const double wd = a.number("--weight-decay", 0.1, "AdamW weight decay (every parameter)");
  const std::string losses_out = a.text("--losses-out", "", "write each step's loss (JSON) here");
  const int log_every = a.integer("--log-every", 1, "print the loss every N steps (0: never)");
  const std::string save_dir = a.text("--save-hf", "", "at the end, write the weights as a Hugging Face checkpoint here");
  const double shard_mb = a.number("--save-shard-mb", 5000, "with --save-hf: a new file past this many MB (transformers' max_shard_size)");
  const std::string save_dtype = a.text("--save-dtype", "", "with --save-hf: bf16 or float32 (default: the parameters' dtype, float32)");
  const std::string prompt = a.text("--generate", "", "token ids, comma-separated: continue them");
  const std::string tokenizer_path = a.text("--tokenizer", "", "a tokenizer.json or SentencePiece .model (default: the checkpoint's)");
  const std::string text_prompt = a.text("--prompt", "", "with a tokenizer: continue this text");
  const std::string encode_in = a.text("--encode", "", "with a tokenizer: write this text file's ids to --encode-out, and stop");
  const std::string encode_out = a.text("--encode-out", "tokens.bin", "the token file --encode writes (uint32)");
  const int new_tokens = a.integer("--tokens", 16, "tokens to generate");
  const double temperature = a.number("--temperature", 0, "sampling temperature (0: greedy)");
  const int top_k = a.integer("--top-k", 0, "sample from the k likeliest tokens (0: all)");
  const double top_p = a.number("--top-p", 1.0, "sample from the likeliest tokens whose probability reaches p (1: all)");
  const bool no_cache = a.flag("--no-kv-cache", "generate without the KV cache: each token runs the whole context again");
  const int threads = a.integer("--threads", 1, "BLAS threads per process");
  a.done();
  GLOBE_CHECK(threads >= 1, "[llama] --threads must be at least 1");
  openblas_set_num_threads(threads);

  GLOBE_CHECK(hf.empty() != config_path.empty(), "[llama] give --load-hf DIR (a checkpoint) or --config FILE (random weights)");
  const std::string config_file = hf.empty() ? config_path : hf + "/config.json";
  const nlohmann::json config_json = llama::read_json(config_file);
  const llama::Config c = llama::config_from_json(config_json, config_file);
  const int world = globe::dist::world_size(), me = globe::dist::world_rank();
  std::unique_ptr<llama::Tokenizer> tokenizer;
  std::string tok_file = tokenizer_path;
  for (const char* name : {"tokenizer.json", "tokenizer.model"})  // the checkpoint's own, when it has one
    if (tok_file.empty() && !hf.empty() && std::filesystem::exists(hf + "/" + name)) tok_file = hf + "/" + name;
  if (!tok_file.empty()) tokenizer = llama::open_tokenizer(tok_file);
  GLOBE_CHECK(tokenizer || (text_prompt.empty() && encode_in.empty()), "[llama] --prompt and --encode need a tokenizer: ",
              "--tokenizer FILE, or a checkpoint with tokenizer.json");
  GLOBE_CHECK(!tokenizer || tokenizer->vocab_size() <= c.vocab, "[llama] the tokenizer '", tok_file, "' has ",
              tokenizer ? tokenizer->vocab_size() : 0, " tokens, more than the model's vocabulary of ", c.vocab);
  if (!encode_in.empty()) {  // a token file from text, on rank 0; nothing else runs
    if (me == 0) {
      std::ifstream in(encode_in, std::ios::binary);
      GLOBE_CHECK(in.good(), "[llama] cannot read '", encode_in, "'");
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const std::vector<int64_t> ids = tokenizer->encode(text);
      std::ofstream out(encode_out, std::ios::binary);
      for (const int64_t id : ids) {
        const uint32_t u = uint32_t(id);
        out.write(reinterpret_cast<const char*>(&u), 4);
      }
      GLOBE_CHECK(out.good(), "[llama] cannot write '", encode_out, "'");
      std::printf("encoded %zu bytes of '%s' as %zu tokens into '%s'\n", text.size(), encode_in.c_str(), ids.size(),
                  encode_out.c_str());
    }
    return 0;
  }
  const int dp = dp_flag == 0 && tp >= 1 && pipe_stages >= 1 ? std::max(1, world / (tp * pipe_stages)) : dp_flag;
  GLOBE_CHECK(dp >= 1 && tp >= 1 && pipe_stages >= 1 && int64_t(dp) * tp * pipe_stages == world, "[llama] --dp ", dp,
              " x --tp ", tp, " x --pp ", pipe_stages, " = ", int64_t(dp) * tp * pipe_stages, " ranks, but the job has ", world);
  GLOBE_CHECK(c.layers >= pipe_stages, "[llama] --pp ", pipe_stages, " stages need at least as many layers; the model has ",
              c.layers);
  GLOBE_CHECK(zero >= 0 && zero <= 3, "[llama] --zero ", zero, ": 0, 1, 2 or 3");
  GLOBE_CHECK(c.heads % tp == 0 && c.kv_heads % tp == 0, "[llama] ", c.heads, " attention heads on ", c.kv_heads,
              " KV heads cannot be split over --tp ", tp, ": each rank takes whole heads and whole KV heads");

  globe::manual_seed(uint64_t(seed));
  // With a checkpoint to load, the layers only allocate their weights (no numbers drawn to be
  // overwritten; torch's skip_init).
  std::optional<globe::nn::init::SkipInitGuard> skip_init;
  if (!hf.empty()) skip_init.emplace();
  llama::Llama model(c, /*init=*/hf.empty());
  skip_init.reset();
  std::vector<globe::Placement> meshes;
  for (int s = 0; s < pipe_stages; ++s) {
    std::vector<int> ranks;
    for (int r = 0; r < dp * tp; ++r) ranks.push_back(s * dp * tp + r);
    meshes.emplace_back(a.device(), ranks, std::vector<int64_t>{dp, tp});
  }
  const int chunks = pp::Schedule::default_chunks(schedule);
  pp::Pipeline pipe(meshes, model.block_list(), {.schedule = schedule, .microbatches = microbatches, .chunks = chunks},
                    {&model.embed}, {&model.head});
  llama::distribute_tensor_parallel(model);
  tie_head(pipe, model);
  if (zero == 3)
    for (auto& b : model.blocks) globe::nn::fully_shard(*b);
  GLOBE_CHECK(dtype == "float32" || dtype == "bf16", "[llama] --dtype ", dtype, ": float32 or bf16");
  GLOBE_CHECK(save_dtype.empty() || save_dtype == "float32" || save_dtype == "bf16", "[llama] --save-dtype ", save_dtype,
              ": float32 or bf16");
  if (dtype == "bf16")  // bfloat16 compute, float32 master weights and AdamW state (the loss in float32)
    for (globe::nn::Module* m : std::initializer_list<globe::nn::Module*>{&model, &model.embed, &model.head})
      globe::nn::mixed_precision(*m, {.param_dtype = globe::kBFloat16});
  if (recompute)
    for (size_t i = 0; i < model.blocks.size(); ++i) model.blocks[i]->set_recompute(true, "model.layers." + std::to_string(i));
  // Straight into each rank's blocks: every rank reads only the byte ranges of its own. Measured:
  // the time, and the most any rank held above its parameters while loading.
  nlohmann::json load;
  if (!hf.empty()) {
    const int64_t held = globe::memory_stats().current_bytes;
    globe::reset_peak_memory();
    example::max_over_ranks(0.0);  // every rank starts the clock together (a rank still building waits here)
    const auto t0 = std::chrono::steady_clock::now();
    globe::load_sharded_into(hf, model.state_dict());
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t largest = 0, mine = 0;
    for (const Tensor& p : model.parameters()) {
      largest = std::max(largest, p.numel() * int64_t(globe::itemsize(p.dtype())));
      if (p.is_global() && p.placement().contains(me)) mine += p.to_local().numel() * int64_t(globe::itemsize(p.dtype()));
    }
    load = {{"seconds", example::max_over_ranks(sec * 1e6) / 1e6},
            {"peak_above_held_bytes", example::max_over_ranks(double(globe::memory_stats().peak_bytes - held))},
            {"rank_share_bytes", example::max_over_ranks(double(mine))},
            {"largest_tensor_bytes", largest}};
  }
  if (me == 0)
    std::cout << "llama: " << c.layers << " layers, " << c.heads << " heads on " << c.kv_heads << " KV heads, dp" << dp << " x tp"
              << tp << " x pp" << pipe_stages << " on " << world << " ranks\n"
              << std::flush;

  const globe::Placement &first = meshes.front(), &last = meshes.back();
  nlohmann::json res = {{"layout", "dp" + std::to_string(dp) + "xtp" + std::to_string(tp) + "xpp" + std::to_string(pipe_stages)},
                        {"world", world}};
  int64_t params = 0;
  for (const Tensor& p : model.parameters()) params += p.numel();
  res["params"] = params;
  if (!load.empty()) res["load"] = load;

  if (!tokens_in.empty()) {  // logits of a batch, written by the lowest rank of the last stage
    const Tensor tokens = globe::io::SafetensorsReader(tokens_in, "llama").read("tokens");
    auto on = [&](const globe::Placement& p) { return globe::from_full(tokens, p, globe::replicated(p.mesh_ndim())); };
    auto keep = [&](const Tensor& logits, const Tensor&) {
      const Tensor whole = globe::to_dtype(logits, globe::kFloat32).to_global(last, globe::replicated(last.mesh_ndim()));
      if (me == last.first() && !logits_out.empty()) {
        globe::io::SafetensorsWriter w(logits_out, {{"logits", globe::kFloat32, whole.shape()}}, {}, "llama");
        w.append(whole.to_local());
        w.commit();
      }
      return globe::zeros({}, last, globe::replicated(last.mesh_ndim()));
    };
    pipe.evaluate(on(first), on(last), keep);
  }

  if (steps > 0) {
    GLOBE_CHECK(!data.empty(), "[llama] --steps ", steps, " needs --data (a token file)");
    const llama::TokenFile file(data, token_bytes, block + 1);
    globe::optim::AdamW adamw(model.parameters(), {.lr = lr, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = wd});
    adamw.set_zero_stage(std::min(zero, 2));
    auto loss_fn = [](const Tensor& logits, const Tensor& target) {
      return globe::cross_entropy(globe::to_dtype(logits, globe::kFloat32), target);
    };
    std::vector<double> losses, times;
    for (int s = 0; s < steps; ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      const pp::StepResult r = pipe.step(llama::batch_on(file, first, s, batch, 0, c.vocab),
                                         llama::batch_on(file, last, s, batch, 1, c.vocab), loss_fn);
      adamw.step();
      adamw.zero_grad();
      losses.push_back(r.loss.item<float>());
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 0) times.push_back(sec);  // the first step warms up
      if (me == 0 && log_every > 0 && ((s + 1) % log_every == 0 || s + 1 == steps))
        std::printf("step %d/%d  loss %.6f  %.1f ms\n", s + 1, steps, losses.back(), sec * 1e3);
    }
    res["loss_first"] = losses.front();
    res["loss_last"] = losses.back();
    if (!times.empty()) {
      std::sort(times.begin(), times.end());
      res["step_ms_median"] = times[times.size() / 2] * 1e3;
      res["tokens_per_s_median"] = double(batch) * block / times[times.size() / 2];
    }
    if (me == 0 && !losses_out.empty()) std::ofstream(losses_out) << nlohmann::json(losses).dump() << "\n";
  }

  GLOBE_CHECK(prompt.empty() || text_prompt.empty(), "[llama] give --generate IDS or --prompt TEXT, not both");
  if (!prompt.empty() || !text_prompt.empty()) {
    const std::vector<int64_t> ids = text_prompt.empty() ? parse_ids(prompt) : tokenizer->encode(text_prompt);
    GLOBE_CHECK(!ids.empty(), "[llama] --prompt '", text_prompt, "' has no tokens");
    for (const int64_t id : ids) GLOBE_CHECK(id < c.vocab, "[llama] --generate: id ", id, " is outside the vocabulary of ", c.vocab);
    pp::Pipeline one(meshes, model.block_list(), {.schedule = schedule, .microbatches = 1, .chunks = chunks}, {&model.embed},
                     {&model.head});
    tie_head(one, model);
    model.set_cache(!no_cache);
    const std::vector<int64_t> out =
        gpt::generate_ids(one, ids, c.max_positions,
                          {.tokens = new_tokens, .temperature = temperature, .top_k = top_k, .top_p = top_p,
                           .seed = uint64_t(seed), .incremental = !no_cache});
    // The first block's cache (on rank 0's stage): its layout, and the share rank 0 holds.
    const Tensor& keys = model.blocks.front()->cached_keys();
    if (keys.defined())
      res["kv_cache"] = {{"shape", keys.shape()}, {"sbp", keys.is_global() ? keys.sbp().to_string() : "local"},
                         {"rank0_shape", keys.is_global() ? keys.to_local().shape() : keys.shape()}};
    model.set_cache(false);
    res["generated"] = out;
    if (me == 0) std::cout << "generated: " << nlohmann::json(out).dump() << "\n";
    if (tokenizer) {
      res["text"] = tokenizer->decode(out);
      if (me == 0) std::cout << "text: " << tokenizer->decode(ids) << "|" << tokenizer->decode(out) << "\n";
    }
  }

  if (!save_dir.empty()) {
    globe::HfSaveOptions options{.max_shard_bytes = int64_t(shard_mb * 1e6)};
    if (!save_dtype.empty()) options.dtype = save_dtype == "bf16" ? globe::kBFloat16 : globe::kFloat32;
    globe::save_hf(model.state_dict(), save_dir, options);
    // The model's shape is unchanged: the configuration it was made from, every field kept but
    // torch_dtype, which names the dtype written.
    nlohmann::json written = config_json;
    if (!save_dtype.empty()) written["torch_dtype"] = save_dtype == "bf16" ? "bfloat16" : "float32";
    if (me == 0) std::ofstream(save_dir + "/config.json") << written.dump(2) << "\n";
  }
  if (me == 0) {
    for (const auto& [k, v] : globe::dist::machine_info()) res["machine"][k] = v;
    // Generated text need not be valid UTF-8 (a token may end inside a character): replaced there.
    std::printf("RESULT %s\n", res.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return example::main(run, argc, argv); }
