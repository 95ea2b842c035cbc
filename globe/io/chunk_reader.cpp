#include "globe/io/chunk_reader.h"

#include <algorithm>

namespace globe::io {

DType entry_dtype(const IndexEntry& entry, const std::string& where) {
  const std::optional<DType> d = parse_dtype(entry.dtype, where, entry.name);
  GLOBE_CHECK(d.has_value(), "[checkpoint index] '", where, "': tensor '", entry.name,
              "' has dtype ", entry.dtype, ", which Globe cannot load (supported: ", loadable_dtypes(), ")");
  return *d;
}

const SafetensorsReader& ChunkReader::file(const std::string& name) {
  auto& slot = files_[name];
  if (!slot) slot = std::make_unique<SafetensorsReader>(dir_ + "/" + name, op_);
  return *slot;
}

const TensorRecord& ChunkReader::chunk_record(const IndexEntry& entry, const ChunkRecord& c) {
  const SafetensorsReader& f = file(c.file);
  const TensorRecord* rec = f.header().find(c.key);
  GLOBE_CHECK(rec != nullptr, "[", op_, "] '", f.path(), "' has no tensor '", c.key,
              "', which the index lists as a ", "chunk of '", entry.name, "'");
  GLOBE_CHECK(rec->dtype_name == entry.dtype && rec->shape == c.shape, "[", op_, "] '", f.path(),
              "': tensor '", c.key, "' is ", rec->dtype_name, shape_str(rec->shape),
              " but the index says the chunk of '", entry.name, "' at ", shape_str(c.offsets),
              " is ", entry.dtype, shape_str(c.shape));
  return *rec;
}

Tensor ChunkReader::read_block(const IndexEntry& entry, const Shape& start, const Shape& extent) {
  Tensor out = Tensor::uninitialized(extent, entry_dtype(entry, dir_ + "/" + kIndexFile));
  read_block_into(entry, start, extent, out);
  return out;
}

template <class Fn>
void ChunkReader::for_each_piece(const IndexEntry& entry, const Shape& start, const Shape& extent, Fn&& fn) {
  const size_t nd = entry.shape.size();
  if (numel_of(extent) == 0) return;
  for (const ChunkRecord& c : entry.chunks) {
    Shape lo(nd), hi(nd);
    bool hit = true;
    for (size_t d = 0; d < nd && hit; ++d) {
      lo[d] = std::max(start[d], c.offsets[d]);
      hi[d] = std::min(start[d] + extent[d], c.offsets[d] + c.shape[d]);
      hit = lo[d] < hi[d];
    }
    if (!hit) continue;
    Shape src(nd), ext(nd), dst(nd);
    for (size_t d = 0; d < nd; ++d) {
      src[d] = lo[d] - c.offsets[d];
      ext[d] = hi[d] - lo[d];
      dst[d] = lo[d] - start[d];
    }
    fn(file(c.file), chunk_record(entry, c), src, ext, dst);
  }
}

void ChunkReader::read_block_into(const IndexEntry& entry, const Shape& start, const Shape& extent, const Tensor& out) {
  for_each_piece(entry, start, extent, [&](const SafetensorsReader& f, const TensorRecord& rec, const Shape& src,
                                           const Shape& ext, const Shape& dst) { f.read_block(rec, src, ext, out, dst); });
  // The index was checked to tile each tensor, so every element of the block has been read.
}

void ChunkReader::prefetch_block(const IndexEntry& entry, const Shape& start, const Shape& extent) {
  try {
    for_each_piece(entry, start, extent, [&](const SafetensorsReader& f, const TensorRecord& rec, const Shape& src,
                                             const Shape& ext, const Shape&) { f.prefetch_block(rec, src, ext); });
  } catch (const Error&) {  // the read reports it
  }
}

}  // namespace globe::io
