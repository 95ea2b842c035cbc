// The GPT's files: nanoGPT-compatible weights (one safetensors file, what the PyTorch reference's
// --save-init writes and --load-init reads) and sharded training checkpoints (weights, AdamW state
// and the step) that resume on any layout.
#pragma once

#include <string>
#include <vector>

#include "model.h"

namespace gpt {

// Collective. Reads a nanoGPT-keyed file (c_attn [3E, E] / [3E]) into the model, whatever its
// layout. A file of another model size is an error naming the keys and shapes that differ.
void load_nanogpt(GPT& model, const std::string& path);
// Collective. Writes the model as one nanoGPT-keyed F32 file (rank 0 writes).
void save_nanogpt(GPT& model, const std::string& path);

// AdamW as nanoGPT sets it up: parameters of 2 or more dims decay, the rest do not; the names of
// the optimizer's parameters in its own order (its state is saved under them).
struct NamedAdamW {
  std::vector<std::string> names;
  std::unique_ptr<globe::optim::Adam> optimizer;
};
NamedAdamW make_adamw(GPT& model, double lr, double weight_decay);

// Collective. A sharded checkpoint of the step in `dir` (globe::CheckpointManager: DIR/step-<step>,
// committed by its index.json, the last two kept): every rank writes the blocks it holds.
void save_training(const std::string& dir, GPT& model, const NamedAdamW& adamw, int64_t step);
// Collective. Loads the newest complete checkpoint in `dir` into the model and optimizer in their
// current layouts (any layout, any number of ranks); returns the step to continue from.
int64_t load_training(const std::string& dir, GPT& model, NamedAdamW& adamw);

}  // namespace gpt
