// Safetensors files of local tensors: a streaming atomic writer and a reader that reads whole
// tensors or any rectangular block of one (reading only the bytes the block needs).
//
//   io::SafetensorsWriter w("a.safetensors", {{"w", kFloat32, {2, 3}}}, {}, "save");
//   w.append(weight);  // in declaration order
//   w.commit();
//   io::SafetensorsReader r("a.safetensors", "load");
//   Tensor w2 = r.read("w");
#pragma once

#include <map>
#include <string>
#include <vector>

#include "globe/core/tensor.h"
#include "globe/io/atomic_file.h"
#include "globe/io/safetensors_header.h"

namespace globe::io {

class SafetensorsReader {
 public:
  // Opens `path` and parses its header; `op` prefixes errors ("[load] ...").
  SafetensorsReader(const std::string& path, const std::string& op);

  const SafetensorsHeader& header() const { return header_; }
  const std::string& path() const { return file_.path(); }
  // The record of `name`; throws "[op] 'path' has no tensor 'name'".
  const TensorRecord& record(const std::string& name) const;
  // Globe's dtype of a record; throws naming the file and the tensor when Globe has none (F16...).
  DType dtype_of(const TensorRecord& rec) const;

  // The whole tensor as a new contiguous local tensor.
  Tensor read(const TensorRecord& rec) const;
  Tensor read(const std::string& name) const { return read(record(name)); }
  // Copies the block [start, start + extent) of `rec` into `dst` (a contiguous local tensor of
  // rec's dtype) at `dst_start`. Reads only the rows the block covers, coalescing nearby ones.
  void read_block(const TensorRecord& rec, const Shape& start, const Shape& extent,
                  const Tensor& dst, const Shape& dst_start) const;
  // Starts reading the bytes from the block's first element to its last into the page cache in the
  // background (ReadFile::prefetch), so that the disk works while the caller copies other blocks.
  void prefetch_block(const TensorRecord& rec, const Shape& start, const Shape& extent) const;

 private:
  void copy_block(const TensorRecord& rec, const Shape& start, const Shape& extent, const Tensor& dst,
                  const Shape& dst_start) const;
  void check_bools(const TensorRecord& rec, const Tensor& t) const;
  ReadFile file_;
  std::string op_;
  SafetensorsHeader header_;
};

// What a writer will write: name, dtype, shape.
struct TensorDecl {
  std::string name;
  DType dtype;
  Shape shape;
};

class SafetensorsWriter {
 public:
  // Writes the header of `tensors` to a temporary file beside `path` (see AtomicFile).
  SafetensorsWriter(const std::string& path, const std::vector<TensorDecl>& tensors,
                    const std::map<std::string, std::string>& metadata, const std::string& op);
  // The next declared tensor's values: a local tensor of its dtype and shape (any strides).
  void append(const Tensor& value);
  // Checks every tensor was appended, then fsync + rename (atomic).
  void commit();
  const std::string& path() const { return file_.path(); }

 private:
  AtomicFile file_;
  std::string op_;
  std::vector<TensorDecl> tensors_;
  size_t next_ = 0;
};

// Writes `tensors` (local tensors) to `path` in one go.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata, const std::string& op);

}  // namespace globe::io
