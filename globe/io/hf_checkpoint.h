// Hugging Face checkpoint directories, as transformers' `save_pretrained` writes them:
//
//   DIR/model.safetensors                       every tensor in one file, or
//   DIR/model.safetensors.index.json            {"metadata": {"total_size": 123},
//                                                "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors", ...}}
//   DIR/model-00001-of-00002.safetensors, ...   each tensor whole in one file, under its own name
//
// Reading: `load_sharded` takes such a directory as it takes its own (globe/io/sharded.h): each
// tensor is one chunk, so every rank reads only the bytes of its block, in any layout and world size.
//
//   globe::save_hf(model.state_dict(), "out/");                              // every rank, any layout
//   globe::load_sharded_into("out/", model.state_dict());                    // any layout
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "globe/io/sharded_index.h"
#include "globe/nn/state_dict.h"

namespace globe {

namespace io {

inline constexpr const char* kHfIndexFile = "model.safetensors.index.json";
inline constexpr const char* kHfSingleFile = "model.safetensors";

// Whether `dir` holds a Hugging Face checkpoint (either file above) and no Globe index.json.
bool is_hf_checkpoint(const std::string& dir);
// A Hugging Face directory as a sharded index: one chunk per tensor. Checks that the index's files
// exist, that each names its tensors and that every file is whole; every problem found is listed in
// one error. `op` prefixes errors.
ShardedIndex read_hf_index(const std::string& dir, const std::string& op);
// DIR/index.json when there is one, else the Hugging Face index (what load_sharded reads).
ShardedIndex read_checkpoint_index(const std::string& dir, const std::string& op);

}  // namespace io

struct HfSaveOptions {
  // A new file starts when the current one would pass this size (transformers' max_shard_size,
  // "5GB" by default). A tensor larger than it gets a file of its own.
  int64_t max_shard_bytes = 5'000'000'000;
  // Each file's "__metadata__"; transformers' loader needs {"format": "pt"}.
  std::map<std::string, std::string> metadata = {{"format", "pt"}};
  // Floating tensors written in this dtype (bfloat16, as Llama checkpoints ship; rounded to
  // nearest even), converted one file's tensors at a time; unset: as they are.
  std::optional<DType> dtype;
};

// Collective. Writes `state` (global tensors in any layout, or local ones) as a Hugging Face
// checkpoint in `dir` (created if missing): one file "model.safetensors" when everything fits
// max_shard_bytes, else "model-0000K-of-0000N.safetensors" files and their index. Each tensor is
// gathered whole to the rank writing its file, one at a time (file k: rank k mod world), so no rank
// holds more than one tensor beyond its own share. Files are written under temporary names and
// renamed only when every one is complete; the index comes last. Leftover files of an earlier save
// (other shard counts) are deleted. The directory must be visible to every rank.
void save_hf(const StateDict& state, const std::string& dir, const HfSaveOptions& options = {});

}  // namespace globe
