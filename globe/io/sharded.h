// Sharded checkpoints (docs/design.md §8): for models too large to gather on one rank. Every rank writes only
// the blocks it holds; loading reshards to any world size, placement and SBP, each rank reading
// only the bytes of its own block.
//
//   globe::save_sharded(model.state_dict(), "ckpt/");                       // every rank
//   model.load_state_dict(globe::load_sharded("ckpt/", model.state_dict())); // any world, any
//   layout
//
// Layout of DIR: one safetensors file per writing rank, "rank-00001-<tag>.safetensors", holding
// that rank's blocks under their state-dict keys, and "index.json" (globe/io/sharded_index.h)
// listing every tensor's global shape, dtype and chunks. Choices:
//   - a block held by several ranks (broadcast axes) is written once, by its lowest-ranked holder;
//   - a partial_sum tensor is summed first (its P mesh axes boxed to B), so the files hold values;
//   - a local tensor is written once, by rank 0, with its value there (like save's destination);
//   - the directory must be visible to every rank (a shared file system when multi-node).
// Atomicity: each rank's file is written atomically under a name no earlier save used (a fresh
// tag); rank 0 writes index.json last, after every rank has reported success, then deletes the
// shard files the new index does not name. A crash or error before that leaves the old index, which
// names only old, complete files: an existing checkpoint in DIR is never damaged.
#pragma once

#include <map>
#include <string>

#include "globe/global/placement.h"
#include "globe/core/sbp.h"
#include "globe/nn/state_dict.h"

namespace globe {

struct ShardedSaveOptions {
  std::map<std::string, std::string> metadata = {};  // stored in index.json
};

// Where a tensor is loaded to.
struct TensorLayout {
  Placement placement;
  NdSbp sbp;
};

// Collective. Writes `state` into directory `dir` (created if missing).
void save_sharded(const StateDict& state, const std::string& dir,
                  const ShardedSaveOptions& options = {});

// Collective. Loads the keys of `layouts`, each as a global tensor with its placement and SBP
// (any: split on any axis, broadcast, partial_sum, N-D meshes), in the index's order. A key the
// checkpoint lacks is an error naming it and the directory.
StateDict load_sharded(const std::string& dir, const std::map<std::string, TensorLayout>& layouts);
// Collective. Loads every key of `like` with the layout of like's tensor there (a local tensor in
// `like` loads as a local tensor holding the whole value on every rank), in like's order; shapes
// and dtypes must match the checkpoint. For `model.state_dict()` this loads straight into the
// parameters' own layouts, so load_state_dict copies without communication.
StateDict load_sharded(const std::string& dir, const StateDict& like);
// Collective. Loads every key of `targets` straight into the tensor there (a model's parameters:
// `load_sharded_into(dir, model.state_dict())`), one tensor at a time, so a rank holds its share
// and one tensor's block at most; the checks and the dtype conversion are load_sharded(like)'s.
// Where a tensor would not fit (name, shape, dtype), nothing is written; a file that fails while
// being read (after those checks) leaves the targets partly loaded, and every rank throws.
void load_sharded_into(const std::string& dir, const StateDict& targets);
// Collective. Loads every key of the checkpoint with its whole value on every rank: broadcast on
// Placement::all() (tensors saved from local tensors load as local tensors). For state whose layout
// is not known in advance, e.g. an optimizer's before its first step.
StateDict load_sharded(const std::string& dir);

}  // namespace globe
