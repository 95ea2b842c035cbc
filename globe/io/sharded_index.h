// The index of a sharded checkpoint directory, `DIR/index.json`:
//
//   {"format": "globe-sharded-checkpoint", "version": 1, "world_size": 2, "metadata": {...},
//    "tensors": {
//      "fc.weight": {"dtype": "F32", "shape": [8, 4], "layout": "placement(cpu, [0, 1]) (S(0))",
//                    "chunks": [{"file": "rank-00000-5f3a9c01.safetensors", "key": "fc.weight",
//                                "offsets": [0, 0], "shape": [4, 4]}, ...]},
//      "step": {"dtype": "I64", "shape": [], "local": true, "chunks": [...]}}}
//
// Each chunk is a block of the logical tensor (start `offsets`, extent `shape`) stored as tensor
// `key` of a safetensors file in DIR. The chunks of a tensor tile it exactly (checked on read).
// The index is written last, atomically: it is the commit point of a sharded save, and it only
// ever names files that are complete.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "globe/core/shape.h"

namespace globe::io {

inline constexpr const char* kIndexFile = "index.json";

struct ChunkRecord {
  std::string file;  // a plain file name inside the checkpoint directory
  std::string key;   // the tensor's name inside that file
  Shape offsets;     // start of the block in the logical tensor
  Shape shape;       // extent of the block
};

struct IndexEntry {
  std::string name;
  std::string dtype;  // safetensors name: "F32", "F64", "I64"
  Shape shape;
  bool local = false;  // saved from a local tensor (rank 0's value)
  std::string layout;  // the layout it was saved from, for people (not used to load)
  std::vector<ChunkRecord> chunks;
};

struct ShardedIndex {
  int world_size = 1;  // of the run that saved it
  std::map<std::string, std::string> metadata;
  std::vector<IndexEntry> tensors;  // in save order

  const IndexEntry* find(const std::string& name) const;
  // Every file the chunks name, sorted, once each.
  std::vector<std::string> files() const;
};

// Parses and validates index text: structure, dtypes, chunk bounds, plain file names, and that the
// chunks of every tensor tile it (no overlap, full coverage). `where` names the file in errors.
ShardedIndex parse_index(std::string_view text, const std::string& where);
// Reads DIR/index.json.
ShardedIndex read_index(const std::string& dir, const std::string& op);
std::string encode_index(const ShardedIndex& index);
// Writes DIR/index.json atomically.
void write_index(const std::string& dir, const ShardedIndex& index, const std::string& op);

// "rank-00003-<tag>.safetensors": the file a rank writes in a save tagged `tag`.
std::string shard_file_name(int rank, const std::string& tag);
// Whether `name` looks like a shard file (any rank, any tag): what a save may clean up.
bool is_shard_file_name(const std::string& name);
// A random tag for the files of one save (8 hex digits), so no save overwrites a file in use.
std::string fresh_shard_tag();
// Deletes the shard files in `dir` that `index` does not name, and leftover temporary shard files
// of crashed saves (best effort: the checkpoint the index describes is complete without them).
void remove_unindexed_shards(const std::string& dir, const ShardedIndex& index);

}  // namespace globe::io
