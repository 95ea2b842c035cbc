// Reads any block of a tensor of a sharded checkpoint from the chunk files that hold it, opening
// and parsing each file once, reading only the bytes the block needs.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "globe/core/tensor.h"
#include "globe/io/safetensors.h"
#include "globe/io/sharded_index.h"

namespace globe::io {

class ChunkReader {
 public:
  // `dir` holds the chunk files; `op` prefixes errors ("[load_sharded] ...").
  ChunkReader(std::string dir, std::string op) : dir_(std::move(dir)), op_(std::move(op)) {}

  // The block [start, start + extent) of `entry` as a new contiguous local tensor.
  Tensor read_block(const IndexEntry& entry, const Shape& start, const Shape& extent);
  // The same block into `dst`: a contiguous local host tensor of the entry's dtype and the extent.
  void read_block_into(const IndexEntry& entry, const Shape& start, const Shape& extent, const Tensor& dst);
  // Starts reading the block's bytes into the page cache in the background; a hint (failures are
  // left for the read to report).
  void prefetch_block(const IndexEntry& entry, const Shape& start, const Shape& extent);
  // The whole tensor.
  Tensor read_whole(const IndexEntry& entry) {
    return read_block(entry, Shape(entry.shape.size(), 0), entry.shape);
  }
  // The record of chunk `c` in its file, checked against the index (dtype, shape).
  const TensorRecord& chunk_record(const IndexEntry& entry, const ChunkRecord& c);
  // The parsed chunk file `name` (inside dir).
  const SafetensorsReader& file(const std::string& name);

 private:
  // fn(file, record, source start, extent, destination start) for each chunk the block overlaps.
  template <class Fn>
  void for_each_piece(const IndexEntry& entry, const Shape& start, const Shape& extent, Fn&& fn);
  std::string dir_, op_;
  std::map<std::string, std::unique_ptr<SafetensorsReader>> files_;
};

// Globe's dtype of an index entry; throws naming the tensor when Globe has none.
DType entry_dtype(const IndexEntry& entry, const std::string& where);

}  // namespace globe::io
