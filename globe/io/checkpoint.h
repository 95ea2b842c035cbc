// Single-file checkpoints in the safetensors format (docs/design.md §8), as in the seed:
//
//   globe::save(model.state_dict(), "model.safetensors", {.global_dst_rank = 0});  // every rank
//   model2.load_state_dict(globe::load("model.safetensors", {.global_src_rank = 0}));
//
// Both are collective: every rank calls them, never inside `if (rank == 0)`. A rank that calls
// something else, or nothing, is reported (after GLOBE_TIMEOUT seconds at most), not waited for
// forever. Every rank returns, or every rank throws the same globe::Error.
#pragma once

#include <map>
#include <string>

#include "globe/nn/state_dict.h"

namespace globe {

struct SaveOptions {
  int global_dst_rank = 0;                           // the rank that writes the file
  std::map<std::string, std::string> metadata = {};  // stored as the header's "__metadata__"
};

struct LoadOptions {
  int global_src_rank = 0;  // the rank that reads the file
  // When set, receives the file's "__metadata__" (SaveOptions::metadata), on every rank.
  std::map<std::string, std::string>* metadata = nullptr;
};

// Writes `state` to `path` (one safetensors file, keys in state order). Global tensors are gathered
// to the destination rank (boxed to B on placement {dst}; a partial_sum value is summed), one at a
// time; local tensors are written as the destination rank holds them. The write is atomic: a
// temporary file beside `path`, fsync, rename, fsync of the directory — on any error (full disk,
// unwritable directory) an existing file at `path` is left as it was.
void save(const StateDict& state, const std::string& path, const SaveOptions& options = {});

// Reads `path` on the source rank and returns global tensors on placement {src} with SBP
// broadcast; every rank gets the same keys, shapes and dtypes (the source rank broadcasts them),
// other ranks hold empty shards. Module::load_state_dict and Optimizer::load_state_dict box each
// value into the parameter's own layout. Keys come in file data order. Any problem with the file is
// a globe::Error naming the file (and the tensor) on every rank.
StateDict load(const std::string& path, const LoadOptions& options = {});

}  // namespace globe
