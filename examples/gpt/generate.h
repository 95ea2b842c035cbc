// Text from a trained GPT: each new byte from the logits of the last position, greedy (temperature
// 0) or sampled at a temperature from the top k. Runs on any layout through a one-micro-batch
// pipeline over the model's stages; every rank gets the same text.
#pragma once

#include <string>
#include <vector>

#include "model.h"

namespace gpt {

struct Sampling {
  int64_t tokens = 200;
  double temperature = 0.0;  // 0: greedy
  int64_t top_k = 0;         // 0: the whole vocabulary
  double top_p = 1.0;        // nucleus: the likeliest tokens whose probabilities reach top_p (1: all)
  uint64_t seed = 0;
  // After the first pass, feed the model only the token just chosen: for a model that keeps a KV
  // cache (the Llama's set_cache). Otherwise every pass runs the whole window again.
  bool incremental = false;
};

// Collective. `n` more token ids after `ids` (the model's context: the last `block` ids), on every
// rank. The ids are the vocabulary's; `pipe` runs the model as below.
std::vector<int64_t> generate_ids(globe::pipeline::Pipeline& pipe, std::vector<int64_t> ids, int64_t block, const Sampling& s);

// Collective. `pipe` runs the model (its modules already laid out); `first` / `last` are the first
// and last stages' placements. A prompt longer than the context is an error; so is an empty one.
std::string generate(globe::pipeline::Pipeline& pipe, const std::string& prompt, int64_t block, const Sampling& s);

}  // namespace gpt
