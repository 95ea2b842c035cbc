// build/bin/gpt: trains the GPT of tutorial 07 (docs/07-gpt-3d.md) on a byte corpus with data x
// tensor x pipeline parallelism, and writes text with it. The PyTorch reference's flags keep their
// names and meanings (bench/gpt/torch_gpt.py), except --batch, the global batch here.
//
//   build/bin/gpt                                                  # 1 process
//   build/bin/globe-launch --nproc_per_node 8 build/bin/gpt --dp 2 --tp 2 --pp 2 --microbatches 4
//   build/bin/gpt --resume ckpt/ --steps 0 --generate "Q: " --tokens 200 --temperature 0.8 --top-k 20
//
// Ranks: stage s of the pipeline holds ranks [s * dp * tp, (s + 1) * dp * tp) as a dp x tp mesh
// (tensor parallel neighbours adjacent, as Megatron). The last line (rank 0) is "RESULT {json}".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "../example_util.h"
#include "checkpoint.h"
#include "corpus.h"
#include "generate.h"
#include "globe/kernels/cpu/matmul.h"
#include "model.h"

extern "C" void openblas_set_num_threads(int);

namespace {

using globe::Tensor;
namespace pp = globe::pipeline;

// One flag: its name, its default ("" for none; nullptr for a switch, off unless given) and what
// it means, as --help prints it.
struct FlagSpec {
  const char* name;
  const char* fallback;
  const char* meaning;
};

// --name value / --name=value flags over a fixed set with defaults; unknown ones are errors.
// --help (or -h) asks for the list instead of a run.
class Flags {
 public:
  Flags(int argc, char** argv, std::vector<FlagSpec> specs) : specs_(std::move(specs)) {
    std::vector<std::string> switches;
    for (const FlagSpec& f : specs_) {
      if (f.fallback == nullptr) switches.push_back(f.name);
      values_[f.name] = f.fallback == nullptr ? "0" : f.fallback;
    }
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        help_ = true;
        return;
      }
      GLOBE_CHECK(a.rfind("--", 0) == 0, "[gpt] unexpected argument '", a, "' (flags are --name value; --help lists them)");
      std::string name = a.substr(2), value;
      const size_t eq = name.find('=');
      const bool inline_value = eq != std::string::npos;
      if (inline_value) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      GLOBE_CHECK(values_.count(name), "[gpt] unknown flag --", name, " (--help lists them)");
      if (std::find(switches.begin(), switches.end(), name) != switches.end()) {
        GLOBE_CHECK(!inline_value, "[gpt] --", name, " is a switch: it takes no value");
        value = "1";
      } else if (!inline_value) {
        GLOBE_CHECK(i + 1 < argc, "[gpt] flag --", name, " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    }
  }
  bool help() const { return help_; }
  // The flags, their defaults and meanings, one a line.
  std::string usage() const {
    std::string out;
    for (const FlagSpec& f : specs_) {
      std::string left = std::string("  --") + f.name + (f.fallback == nullptr ? "" : " VALUE");
      left.resize(std::max<size_t>(left.size() + 2, 24), ' ');
      out += left + f.meaning;
      if (f.fallback != nullptr && *f.fallback != '\0') out += std::string(" (default ") + f.fallback + ")";
      out += "\n";
    }
    return out;
  }
  std::string str(const std::string& n) const { return values_.at(n); }
  int64_t i64(const std::string& n) const { return number<int64_t>(n); }
  double f64(const std::string& n) const { return number<double>(n); }
  bool on(const std::string& n) const { return values_.at(n) == "1"; }

 private:
  template <class T>
  T number(const std::string& n) const {
    const std::string& v = values_.at(n);
    size_t used = 0;
    T x{};
    try {
      x = std::is_integral_v<T> ? T(std::stoll(v, &used)) : T(std::stod(v, &used));
    } catch (const std::exception&) {
      used = 0;
    }
    GLOBE_CHECK(used == v.size() && !v.empty(), "[gpt] --", n, " takes a number, not '", v, "'");
    return x;
  }
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

struct Layout {
  int dp = 1, tp = 1, pp = 1;
  std::string name() const {
    return "dp" + std::to_string(dp) + "xtp" + std::to_string(tp) + "xpp" + std::to_string(pp);
  }
};

// One dp x tp mesh per pipeline stage.
std::vector<globe::Placement> stage_meshes(const Layout& l, const std::string& device) {
  std::vector<globe::Placement> groups;
  for (int s = 0; s < l.pp; ++s) {
    std::vector<int> ranks;
    for (int r = 0; r < l.dp * l.tp; ++r) ranks.push_back(s * l.dp * l.tp + r);
    groups.emplace_back(device, ranks, std::vector<int64_t>{l.dp, l.tp});
  }
  return groups;
}

// Sequences of step `step` for this rank's data-parallel share, as a global [batch, block] tensor
// split over the dp axis of `p` (ranks outside `p` hold nothing).
Tensor batch_on(const globe::Placement& p, const std::vector<uint8_t>& stream, int64_t step, int64_t batch,
                int64_t block, int64_t shift) {
  return example::batch_on(p, {batch, block}, [&](int64_t first, int64_t n) {
    return gpt::windows(stream, step, batch, first, n, block, shift);
  });
}

// The head's weight is the token embedding's: shared on one stage, tied across stages.
void tie_head(pp::Pipeline& pipe, gpt::GPT& model) {
  if (pipe.stages() == 1) model.head.wte = model.embed.wte.weight;
  else pipe.tie(model.embed.wte.weight, model.head.wte);
}

// Each weight kind's layout on its stage's mesh, as visualize() draws it.
void show_layout(gpt::GPT& model) {
  const gpt::Block& b = *model.blocks.front();
  const std::vector<std::pair<std::string, const Tensor*>> kinds = {
      {"transformer.wte.weight", &model.embed.wte.weight},   {"transformer.wpe.weight", &model.embed.wpe.weight},
      {"h.0.ln_1.weight", &b.ln_1.weight},                   {"h.0.attn.c_attn.weight", &b.attn.c_attn.weight},
      {"h.0.attn.c_attn.bias", &b.attn.c_attn.bias},         {"h.0.attn.c_proj.weight", &b.attn.c_proj.weight},
      {"h.0.attn.c_proj.bias", &b.attn.c_proj.bias},         {"h.0.mlp.c_fc.weight", &b.mlp.c_fc.weight},
      {"h.0.mlp.c_fc.bias", &b.mlp.c_fc.bias},               {"h.0.mlp.c_proj.weight", &b.mlp.c_proj.weight},
      {"transformer.ln_f.weight", &model.head.ln_f.weight}};
  for (const auto& [name, t] : kinds)
    std::cout << name << " " << globe::shape_str(t->shape()) << " " << t->sbp().to_string() << "\n"
              << globe::visualize(*t) << "\n";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int run(int argc, char** argv) {
  const Flags f(argc, argv,
                {{"layers", "4", "transformer blocks"},
                 {"heads", "4", "attention heads per block"},
                 {"embd", "128", "embedding width"},
                 {"block", "64", "context length in tokens"},
                 {"vocab", "256", "vocabulary size (256: a token per byte)"},
                 {"batch", "16", "sequences per step, over all data-parallel ranks"},
                 {"steps", "30", "timed training steps"},
                 {"warmup", "5", "untimed steps before them"},
                 {"lr", "1e-3", "AdamW learning rate"},
                 {"weight-decay", "0.1", "AdamW weight decay (matrices only)"},
                 {"grad-clip", "1.0", "global gradient-norm clip (0: none)"},
                 {"seed", "0", "initialisation and data seed"},
                 {"data", gpt::kFortunes, "the corpus: a text file or a directory of them"},
                 {"threads", "1", "BLAS threads per process"},
                 {"dp", "0", "data-parallel ranks (0: what --tp x --pp leave)"},
                 {"tp", "1", "tensor-parallel ranks"},
                 {"pp", "1", "pipeline stages"},
                 {"microbatches", "1", "micro-batches per step (pipeline, or gradient accumulation)"},
                 {"schedule", "1f1b", "pipeline schedule: gpipe, 1f1b, interleaved, zb-h1 or zbv"},
                 {"chunks", "0", "model chunks per pipeline rank (0: 2 for interleaved and zbv, else 1)"},
                 {"zero", "0", "ZeRO stage: 0 replicated, 1 optimizer state, 2 and gradients, 3 and parameters"},
                 {"prefetch", "1", "with --zero 3: blocks whose gathers start ahead (0: none)"},
                 {"recompute", nullptr, "recompute each block's forward in the backward"},
                 {"dtype", "float32", "compute dtype: float32, bf16 or fp16 (float32 master weights)"},
                 {"reduce-dtype", "float32", "dtype of the data-parallel gradient all-reduce: float32 or bf16"},
                 {"tf32", nullptr, "float32 products in TF32 on CUDA (set_float32_matmul_precision(\"high\")); no effect on the CPU"},
                 {"device", "cpu", "cpu, cuda, or sim (a CPU-side test device)"},
                 {"log-every", "10", "print the loss every N steps (0: never)"},
                 {"val-batches", "8", "validation batches at the end (0: none)"},
                 {"val-every", "0", "also validate every N steps (0: only at the end)"},
                 {"losses-out", "", "write every step's loss to this file"},
                 {"ckpt", "", "save the training state (weights, AdamW, step) here at the end"},
                 {"ckpt-every", "0", "with --ckpt, also save every N steps"},
                 {"resume", "", "resume from the latest complete checkpoint in this directory"},
                 {"save-init", "", "save the initial weights (nanoGPT names, safetensors)"},
                 {"load-init", "", "start from these weights (nanoGPT names, safetensors)"},
                 {"export", "", "save the trained weights (nanoGPT names, safetensors)"},
                 {"generate", "", "after training, continue this prompt"},
                 {"tokens", "200", "tokens to generate"},
                 {"temperature", "0", "sampling temperature (0: greedy)"},
                 {"top-k", "0", "sample from the k likeliest tokens (0: all)"},
                 {"print-keys", nullptr, "print the model's state-dict keys and shapes"},
                 {"show-layout", nullptr, "print each parameter's placement and SBP"},
                 {"boxing-report", nullptr, "print the boxing paths each op ran"}});
  if (f.help()) {
    if (globe::dist::world_rank() == 0)
      std::cout << "gpt: trains a GPT on a byte-level corpus, data x tensor x pipeline parallel "
                   "(docs/07-gpt-3d.md)\nusage: globe-launch --nproc_per_node N gpt [flags]\n\nflags:\n"
                << f.usage();
    return 0;
  }
  const int threads = int(f.i64("threads"));
  GLOBE_CHECK(threads >= 1, "[gpt] --threads must be at least 1");
  openblas_set_num_threads(threads);

  const gpt::Config c{.layers = f.i64("layers"), .heads = f.i64("heads"), .embd = f.i64("embd"),
                      .block = f.i64("block"), .vocab = f.i64("vocab")};
  const int world = globe::dist::world_size(), me = globe::dist::world_rank();
  // --dp 0 (the default): the ranks --tp x --pp leave, as Megatron derives its data-parallel size.
  const int tp = int(f.i64("tp")), pipe_stages = int(f.i64("pp"));
  const int dp = f.i64("dp") == 0 && tp >= 1 && pipe_stages >= 1 ? std::max(1, world / (tp * pipe_stages)) : int(f.i64("dp"));
  const Layout L{dp, tp, pipe_stages};
  const int64_t batch = f.i64("batch"), steps = f.i64("steps"), warmup = f.i64("warmup");
  const int microbatches = int(f.i64("microbatches"));
  // Every check below is made on every rank before any communication: all ranks fail alike.
  GLOBE_CHECK(L.dp >= 1 && L.tp >= 1 && L.pp >= 1 && int64_t(L.dp) * L.tp * L.pp == world, "[gpt] --dp ", L.dp,
              " x --tp ", L.tp, " x --pp ", L.pp, " = ", int64_t(L.dp) * L.tp * L.pp, " ranks, but the job has ", world,
              " (globe-launch --nproc_per_node N)");
  GLOBE_CHECK(c.heads % L.tp == 0, "[gpt] --heads ", c.heads, " cannot be split over --tp ", L.tp,
              ": tensor parallelism gives each rank whole heads");
  GLOBE_CHECK(c.layers >= L.pp, "[gpt] --pp ", L.pp, " stages need at least as many layers; --layers is ", c.layers);
  GLOBE_CHECK(batch >= 1 && steps >= 0 && warmup >= 0 && microbatches >= 1,
              "[gpt] --batch and --microbatches must be positive, --steps and --warmup not negative");
  GLOBE_CHECK(batch >= int64_t(L.dp) * microbatches, "[gpt] --batch ", batch, " cannot feed ", L.dp,
              " data-parallel ranks x ", microbatches, " micro-batches (each needs a sequence at least)");
  const int64_t zero = f.i64("zero"), prefetch = f.i64("prefetch");
  GLOBE_CHECK(prefetch >= 0, "[gpt] --prefetch ", prefetch, ": how many blocks ahead --zero 3 gathers (0: none)");
  GLOBE_CHECK(zero >= 0 && zero <= 3, "[gpt] --zero ", zero, ": 0 (replicated), 1 (optimizer state sharded over the data-",
              "parallel ranks), 2 (and gradients) or 3 (the blocks' parameters too)");
  auto parse_dtype = [&](const char* flag) {
    const std::string v = f.str(flag);
    if (v == "float32" || v == "fp32") return globe::kFloat32;
    if (v == "float16" || v == "fp16") return globe::kFloat16;
    GLOBE_CHECK(v == "bfloat16" || v == "bf16", "[gpt] --", flag, " ", v, ": float32, bf16 (bfloat16) or fp16 (float16)");
    return globe::kBFloat16;
  };
  const globe::nn::MixedPrecision precision{parse_dtype("dtype"), parse_dtype("reduce-dtype")};
  if (f.on("tf32")) globe::set_float32_matmul_precision("high");
  GLOBE_CHECK(precision.reduce_dtype == globe::kFloat32 || zero < 2, "[gpt] --reduce-dtype ", f.str("reduce-dtype"),
              " applies to the data-parallel all-reduce; --zero ", zero, " reduce-scatters the gradients in float32 instead");
  GLOBE_CHECK(int64_t(f.str("generate").size()) <= c.block, "[gpt] --generate: the prompt has ", f.str("generate").size(),
              " bytes but the context holds ", c.block, " (--block); shorten it");
  const gpt::Corpus corpus = gpt::read_corpus(f.str("data"));
  const int max_byte = int(*std::max_element(corpus.train.begin(), corpus.train.end()));
  GLOBE_CHECK(c.vocab > max_byte, "[gpt] --vocab ", c.vocab, " is too small for this byte corpus (byte value ", max_byte,
              " occurs)");

  globe::manual_seed(uint64_t(f.i64("seed")));
  gpt::GPT model(c);
  if (f.on("print-keys") && me == 0)
    for (const auto& [k, v] : model.state_dict()) std::cout << k << " " << globe::shape_str(v.shape()) << "\n";

  // The pipeline puts each stage's modules on its mesh; then tensor parallelism splits them there.
  const std::vector<globe::Placement> meshes = stage_meshes(L, f.str("device"));
  const std::string schedule = f.str("schedule");
  const int chunks = f.i64("chunks") > 0 ? int(f.i64("chunks")) : pp::Schedule::default_chunks(schedule);
  pp::Pipeline pipe(meshes, model.block_list(), {.schedule = schedule, .microbatches = microbatches, .chunks = chunks},
                    {&model.embed}, {&model.head});
  gpt::distribute_tensor_parallel(model);
  tie_head(pipe, model);
  // --zero 3: each block's parameters live split over the data-parallel ranks (inside their
  // tensor-parallel blocks), gathered for its forward and, with --recompute, again for its backward.
  // Each block's call starts the gathers of the next --prefetch blocks of its stage, and the
  // backward likewise in reverse (0: each gathers when it runs).
  if (zero == 3) {
    std::vector<globe::nn::Module*> stage;  // this rank's blocks, in forward order
    for (auto& b : model.blocks) {
      globe::nn::fully_shard(*b);
      if (b->parameters().front().placement().contains(me)) stage.push_back(b.get());
    }
    globe::nn::set_prefetch(stage, int(prefetch));
  }
  // --dtype bf16: mixed precision; float32 master weights and AdamW state, bfloat16 compute.
  if (precision.param_dtype != globe::kFloat32) {
    for (globe::nn::Module* m : std::initializer_list<globe::nn::Module*>{&model, &model.embed, &model.head})
      globe::nn::mixed_precision(*m, precision);
    if (me == 0)
      std::cout << "mixed precision: " << globe::nn::describe(precision) << "; "
                << (precision.param_dtype == globe::kBFloat16 ? std::string("bfloat16 matmul: ") + globe::kernels::bf16_gemm_path()
                                                              : std::string("float16 matmul: cblas_sgemm on widened operands, "
                                                                            "dynamic loss scaling (GradScaler)"))
                << "\n";
  }
  // float16's 5 exponent bits: the loss is scaled so that small gradients survive (torch's GradScaler).
  std::optional<globe::optim::GradScaler> scaler;
  if (precision.param_dtype == globe::kFloat16) scaler.emplace();
  // --recompute: each block keeps only its input; its forward runs again in the backward.
  if (f.on("recompute"))
    for (size_t i = 0; i < model.blocks.size(); ++i) model.blocks[i]->set_recompute(true, "transformer.h." + std::to_string(i));
  if (me == 0) std::cout << "gpt: " << L.name() << " on " << world << " ranks\n" << pipe.describe() << std::flush;
  if (f.on("show-layout") && me == 0) show_layout(model);

  if (!f.str("load-init").empty()) gpt::load_nanogpt(model, f.str("load-init"));
  if (!f.str("save-init").empty()) gpt::save_nanogpt(model, f.str("save-init"));
  gpt::NamedAdamW adamw = gpt::make_adamw(model, f.f64("lr"), f.f64("weight-decay"));
  adamw.optimizer->set_zero_stage(int(std::min<int64_t>(zero, 2)));  // stage 3's blocks are split already
  int64_t start = 0;
  if (!f.str("resume").empty()) {
    start = gpt::load_training(f.str("resume"), model, adamw);
    if (me == 0) std::cout << "resumed from " << f.str("resume") << " at step " << start << "\n";
  }

  const int64_t T = c.block, total = warmup + steps;
  const globe::Placement &first = meshes.front(), &last = meshes.back();
  // The loss in float32 whatever the logits' dtype (as Megatron under bf16).
  auto loss_fn = [](const Tensor& logits, const Tensor& target) {
    return globe::cross_entropy(globe::to_dtype(logits, globe::kFloat32), target);
  };
  // Training's: times the loss scale under float16 (the reported loss is divided back).
  auto train_loss_fn = [&](const Tensor& logits, const Tensor& target) {
    const Tensor l = loss_fn(logits, target);
    return scaler ? scaler->scale(l) : l;
  };
  auto validate = [&]() {
    double sum = 0;
    const int64_t n = f.i64("val-batches");
    for (int64_t v = 0; v < n; ++v)
      sum += pipe.evaluate(batch_on(first, corpus.val, v, batch, T, 0), batch_on(last, corpus.val, v, batch, T, 1), loss_fn)
                 .item<float>();
    return n > 0 ? sum / double(n) : 0.0;
  };

  std::vector<double> losses, times;
  // A step's activations: what the forward and backward hold at their peak above the bytes the
  // step starts with and the gradients it leaves (the largest over steps).
  int64_t activations = 0, run_peak = 0, gradients = 0;
  // Counted where this rank's parameters live: the host, or its GPU with --device cuda.
  const globe::Device mem_device = adamw.optimizer->params().front().to_local().device();
  const int64_t ckpt_every = f.i64("ckpt-every"), val_every = f.i64("val-every"), log_every = f.i64("log-every");
  // Rank 0's progress on stderr: a live line with the time left on a terminal; in a log, a plain
  // line a minute (the step lines below say the rest).
  std::unique_ptr<globe::Progress> progress;
  if (me == 0 && total > start)
    progress = std::make_unique<globe::Progress>("train", total - start, globe::Progress::Unit::items,
                                                 globe::Progress::Options{.log_interval_s = 60});
  for (int64_t s = start; s < total; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    run_peak = std::max(run_peak, globe::memory_stats(mem_device).peak_bytes);
    const int64_t held = globe::memory_stats(mem_device).current_bytes,
                  grads_before = adamw.optimizer->memory().gradients;
    globe::reset_peak_memory(mem_device);
    const double loss_scale = scaler ? scaler->get_scale() : 1.0;
    pp::StepResult r =
        pipe.step(batch_on(first, corpus.train, s, batch, T, 0), batch_on(last, corpus.train, s, batch, T, 1), train_loss_fn);
    const int64_t grads_after = adamw.optimizer->memory().gradients;
    activations =
        std::max(activations, globe::memory_stats(mem_device).peak_bytes - held - (grads_after - grads_before));
    gradients = std::max(gradients, grads_after);
    if (scaler) scaler->unscale(*adamw.optimizer);  // clipping sees the true gradients
    if (f.f64("grad-clip") > 0) globe::optim::clip_grad_norm(adamw.optimizer->params(), f.f64("grad-clip"));
    if (scaler) {
      scaler->step(*adamw.optimizer);  // skipped when a gradient overflowed
      scaler->update();
    } else {
      adamw.optimizer->step();
    }
    adamw.optimizer->zero_grad();
    const double loss = r.loss.item<float>() / loss_scale;
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    losses.push_back(loss);
    if (s >= warmup) times.push_back(sec);
    if (me == 0 && log_every > 0 && ((s + 1) % log_every == 0 || s + 1 == total))
      std::printf("step %lld/%lld  loss %.4f  %.0f tokens/s  %.1f ms\n", (long long)(s + 1), (long long)total, loss,
                  double(batch * T) / sec, sec * 1e3);
    if (val_every > 0 && (s + 1) % val_every == 0 && s + 1 < total) {
      const double vl = validate();
      if (me == 0) std::printf("step %lld  val loss %.4f\n", (long long)(s + 1), vl);
    }
    if (ckpt_every > 0 && (s + 1) % ckpt_every == 0) gpt::save_training(f.str("ckpt"), model, adamw, s + 1);
    std::fflush(stdout);
    if (progress) {
      char note[32];
      std::snprintf(note, sizeof note, "loss %.4f", loss);
      progress->advance(1, note);
    }
  }
  progress.reset();
  if (!f.str("ckpt").empty() && (ckpt_every == 0 || total % ckpt_every != 0) && total > start)
    gpt::save_training(f.str("ckpt"), model, adamw, total);
  if (!f.str("export").empty()) gpt::save_nanogpt(model, f.str("export"));

  nlohmann::json res = {{"layout", L.name()}, {"world", world}, {"threads", threads}, {"layers", c.layers},
                        {"heads", c.heads}, {"embd", c.embd}, {"block", c.block}, {"vocab", c.vocab},
                        {"batch", batch}, {"microbatches", microbatches}, {"schedule", f.str("schedule")},
                        {"steps", steps}, {"warmup", warmup}, {"corpus_bytes", corpus.bytes}};
  int64_t params = 0;
  for (const Tensor& p : model.parameters()) params += p.numel();
  res["params"] = params;
  if (!losses.empty()) {
    res["loss_first"] = losses.front();
    res["loss_last"] = losses.back();
  }
  if (f.i64("val-batches") > 0) res["val_loss"] = validate();
  if (!times.empty()) {
    const double med = median(times);
    res["step_ms_median"] = med * 1e3;
    res["tokens_per_s_median"] = double(batch * T) / med;
  }
  // Per rank, the largest over ranks: the tensor storage held at the peak, and the bytes of the
  // parameters with their two AdamW moments (what tensor and pipeline parallelism divide).
  using example::max_over_ranks;
  const globe::optim::Optimizer::Memory mem = adamw.optimizer->memory();
  res["peak_bytes"] = max_over_ranks(double(std::max(run_peak, globe::memory_stats(mem_device).peak_bytes)));
  res["param_optim_bytes"] = max_over_ranks(double(mem.parameters + mem.state));
  res["memory"] = {{"parameters", max_over_ranks(double(mem.parameters))},
                   {"gradients", max_over_ranks(double(gradients))},
                   {"optimizer_state", max_over_ranks(double(mem.state))},
                   {"activations", max_over_ranks(double(activations))}};
  res["zero"] = zero;
  res["prefetch"] = zero == 3 ? prefetch : 0;
  res["recompute"] = f.on("recompute");
  res["dtype"] = globe::dtype_name(precision.param_dtype);
  res["reduce_dtype"] = globe::dtype_name(precision.reduce_dtype);
  res["matmul_precision"] = globe::float32_matmul_precision();
  if (precision.param_dtype == globe::kBFloat16) res["bf16_gemm"] = globe::kernels::bf16_gemm_path();
  if (scaler) {
    res["loss_scale"] = scaler->get_scale();
    res["steps_skipped"] = scaler->steps_skipped();
  }

  if (!f.str("generate").empty()) {
    // The training pipeline's stage -> group map (same schedule and chunks), so no block moves.
    pp::Pipeline one(meshes, model.block_list(), {.schedule = schedule, .microbatches = 1, .chunks = chunks},
                     {&model.embed}, {&model.head});
    tie_head(one, model);
    const std::string text = gpt::generate(
        one, f.str("generate"), c.block,
        {.tokens = f.i64("tokens"), .temperature = f.f64("temperature"), .top_k = f.i64("top-k"), .seed = uint64_t(f.i64("seed"))});
    if (me == 0) std::cout << "--- generated ---\n" << f.str("generate") << text << "\n--- end ---\n";
  }
  if (f.on("boxing-report")) {
    // Each rank's own boxing (pipeline stages run different ones), one block per rank.
    std::ostringstream os;
    os << "boxing on rank " << me << " (" << L.name() << ", calls per path):\n";
    for (const auto& [path, n] : globe::boxing_paths()) os << "  " << n << "  " << path << "\n";
    std::cout << os.str() << std::flush;
  }
  if (me == 0) {
    if (!f.str("losses-out").empty()) {
      std::ofstream out(f.str("losses-out"));
      out << nlohmann::json(losses).dump() << "\n";
    }
    if (res.contains("loss_first"))
      std::printf("globe GPT %lld params, %s: loss %.4f -> %.4f", (long long)params, L.name().c_str(),
                  double(res["loss_first"]), double(res["loss_last"]));
    if (res.contains("val_loss")) std::printf(", val %.4f", double(res["val_loss"]));
    if (res.contains("tokens_per_s_median")) std::printf(", %.0f tokens/s", double(res["tokens_per_s_median"]));
    const nlohmann::json& m = res["memory"];
    auto mib = [](const nlohmann::json& v) { return double(v) / (1 << 20); };
    std::printf("\nmemory per rank (MiB, the largest over ranks): parameters %.2f, gradients %.2f, optimizer state %.2f, "
                "activations %.2f (--zero %lld%s%s%s)",
                mib(m["parameters"]), mib(m["gradients"]), mib(m["optimizer_state"]), mib(m["activations"]),
                (long long)zero, f.on("recompute") ? ", --recompute" : "",
                precision.param_dtype == globe::kFloat32 ? "" : ", --dtype ",
                precision.param_dtype == globe::kFloat32 ? "" : globe::dtype_name(precision.param_dtype));
    for (const auto& [k, v] : globe::dist::machine_info()) res["machine"][k] = v;
    std::printf("\nRESULT %s\n", res.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return example::main(run, argc, argv); }
