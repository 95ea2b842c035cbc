#include "globe/io/ckpt_tools.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>

#include "globe/base/format.h"
#include "globe/core/sbp.h"
#include "globe/io/chunk_reader.h"
#include "globe/io/safetensors.h"
#include "globe/io/sharded_index.h"

namespace globe::io {

namespace {

// Left-aligned columns.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::ostringstream os;
  for (const auto& r : rows) {
    os << " ";
    for (size_t c = 0; c < r.size(); ++c) {
      os << " " << r[c];
      if (c + 1 < r.size()) os << std::string(width[c] - r[c].size(), ' ');
    }
    os << "\n";
  }
  return os.str();
}

std::string metadata_lines(const std::map<std::string, std::string>& m) {
  if (m.empty()) return "";
  std::string s = "metadata:\n";
  for (const auto& [k, v] : m) s += "  " + k + " = " + v + "\n";
  return s;
}

uint64_t nbytes_of(const std::string& dtype, const Shape& shape) {
  return checked_nbytes(shape, dtype_size(dtype)).value_or(0);
}

// Reads every byte of `path` (I/O errors and short files show up here).
void read_everything(const std::string& path, const std::string& op) {
  ReadFile f(path, op);
  std::vector<char> buf(8 << 20);
  for (uint64_t at = 0; at < f.size(); at += buf.size())
    f.read_at(at, buf.data(), size_t(std::min<uint64_t>(buf.size(), f.size() - at)), "the data");
}

}  // namespace

bool is_sharded_dir(const std::string& path) {
  return std::filesystem::is_directory(path) && std::filesystem::exists(path + "/" + kIndexFile);
}

std::string describe_checkpoint(const std::string& path) {
  std::ostringstream os;
  std::vector<std::vector<std::string>> rows = {{"name", "dtype", "shape", "bytes"}};
  if (is_sharded_dir(path)) {
    const ShardedIndex index = read_index(path, "ls");
    uint64_t total = 0;
    rows[0].insert(rows[0].end(), {"chunks", "saved from"});
    for (const IndexEntry& e : index.tensors) {
      const uint64_t n = nbytes_of(e.dtype, e.shape);
      total += n;
      rows.push_back({e.name, e.dtype, shape_str(e.shape), format_bytes(double(n)),
                      std::to_string(e.chunks.size()), e.layout});
    }
    os << path << ": sharded checkpoint saved by " << index.world_size << " rank(s), "
       << index.tensors.size() << " tensors, " << format_bytes(double(total)) << " in "
       << index.files().size() << " file(s)\n";
    os << table(rows) << metadata_lines(index.metadata);
  } else {
    const SafetensorsReader r(path, "ls");
    for (const TensorRecord& t : r.header().tensors)
      rows.push_back({t.name, t.dtype_name, shape_str(t.shape), format_bytes(double(t.nbytes()))});
    os << path << ": safetensors file, " << r.header().tensors.size() << " tensors, "
       << format_bytes(double(r.header().data_size)) << " of data\n";
    os << table(rows) << metadata_lines(r.header().metadata);
  }
  return os.str();
}

std::string verify_checkpoint(const std::string& path) {
  std::ostringstream os;
  if (!is_sharded_dir(path)) {
    GLOBE_CHECK(!std::filesystem::is_directory(path), "[verify] '", path,
                "' is a directory without ", kIndexFile);
    const SafetensorsReader r(path, "verify");  // header, offsets, sizes, tiling
    read_everything(path, "verify");
    os << "OK: " << path << ": " << r.header().tensors.size() << " tensors, "
       << r.header().data_size << " bytes of data";
    return os.str();
  }
  const ShardedIndex index = read_index(path, "verify");  // structure, bounds, coverage
  ChunkReader reader(path, "verify");
  std::set<std::pair<std::string, std::string>> named;
  uint64_t chunks = 0;
  for (const IndexEntry& e : index.tensors)
    for (const ChunkRecord& c : e.chunks) {
      reader.chunk_record(e, c);  // the file has it, with the index's dtype and shape
      GLOBE_CHECK(named.insert({c.file, c.key}).second, "[verify] '", path, "/", kIndexFile,
                  "': tensor '", c.key, "' of '", c.file, "' is named by two chunks");
      ++chunks;
    }
  for (const std::string& f : index.files()) {
    for (const TensorRecord& t : reader.file(f).header().tensors)
      GLOBE_CHECK(named.count({f, t.name}), "[verify] '", path, "/", f, "' holds tensor '", t.name,
                  "', which the index does not name");
    read_everything(path + "/" + f, "verify");
  }
  os << "OK: " << path << ": " << index.tensors.size() << " tensors, " << chunks << " chunks in "
     << index.files().size() << " file(s), every tensor fully covered";
  return os.str();
}

void merge_sharded(const std::string& dir, const std::string& out) {
  const ShardedIndex index = read_index(dir, "merge");
  ChunkReader reader(dir, "merge");
  std::vector<TensorDecl> decls;
  for (const IndexEntry& e : index.tensors)
    decls.push_back({e.name, entry_dtype(e, dir + "/" + kIndexFile), e.shape});
  SafetensorsWriter w(out, decls, index.metadata, "merge");
  for (const IndexEntry& e : index.tensors) w.append(reader.read_whole(e));
  w.commit();
}

void split_to_sharded(const std::string& file, const std::string& dir, int ranks,
                      SplitLayout layout) {
  GLOBE_CHECK(ranks >= 1, "[split] --ranks must be at least 1, got ", ranks);
  const SafetensorsReader src(file, "split");
  const std::string tag = fresh_shard_tag();
  ShardedIndex index;
  index.world_size = ranks;
  index.metadata = src.header().metadata;
  // The blocks per rank, in file order.
  std::vector<std::vector<std::pair<const TensorRecord*, ChunkRecord>>> per_rank(
      static_cast<size_t>(ranks));
  for (const TensorRecord& t : src.header().tensors) {
    src.dtype_of(t);  // Globe dtypes only
    IndexEntry e;
    e.name = t.name;
    e.dtype = t.dtype_name;
    e.shape = t.shape;
    const bool split = layout == SplitLayout::split0 && !t.shape.empty();
    e.layout = split ? "split by globe-ckpt: S(0) over " + std::to_string(ranks) + " ranks"
                     : "split by globe-ckpt: B";
    for (int r = 0; r < (split ? ranks : 1); ++r) {
      ChunkRecord c{shard_file_name(r, tag), t.name, Shape(t.shape.size(), 0), t.shape};
      if (split) {
        const Range rg = split_range(t.shape[0], ranks, r);
        c.offsets[0] = rg.start;
        c.shape[0] = rg.length;
      }
      if (numel_of(c.shape) == 0) continue;  // as save_sharded: no chunk without elements
      e.chunks.push_back(c);
      per_rank[size_t(r)].emplace_back(&t, c);
    }
    index.tensors.push_back(std::move(e));
  }
  make_directories(dir, "split");
  std::vector<std::string> written;
  try {
    for (int r = 0; r < ranks; ++r) {
      const auto& blocks = per_rank[size_t(r)];
      if (blocks.empty()) continue;
      std::vector<TensorDecl> decls;
      for (const auto& [t, c] : blocks) decls.push_back({c.key, *t->dtype, c.shape});
      const std::string path = dir + "/" + shard_file_name(r, tag);
      SafetensorsWriter w(path, decls, {{"globe", "shard"}, {"tag", tag}}, "split");
      for (const auto& [t, c] : blocks) {
        Tensor block = Tensor::uninitialized(c.shape, *t->dtype);
        src.read_block(*t, c.offsets, c.shape, block, Shape(c.shape.size(), 0));
        w.append(block);
      }
      w.commit();
      written.push_back(path);
    }
    write_index(dir, index, "split");
  } catch (...) {
    for (const std::string& p : written) std::filesystem::remove(p);
    throw;
  }
  remove_unindexed_shards(dir, index);
}

}  // namespace globe::io
