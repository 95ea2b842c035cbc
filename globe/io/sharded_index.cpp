#include "globe/io/sharded_index.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include "globe/base/error.h"
#include "globe/io/atomic_file.h"
#include "globe/io/json_parse.h"
#include "globe/io/safetensors_header.h"

namespace globe::io {

namespace {

using json = nlohmann::ordered_json;
constexpr const char* kFormat = "globe-sharded-checkpoint";
constexpr int kVersion = 1;

Shape parse_extents(const json& v, const std::string& where, const std::string& key,
                    const char* field) {
  GLOBE_CHECK(v.is_array(), "[checkpoint index] '", where, "': tensor '", key, "': ", field,
              " must be an array");
  Shape s;
  for (const json& e : v) {
    GLOBE_CHECK(e.is_number_unsigned() && e.get<uint64_t>() <= uint64_t(INT64_MAX),
                "[checkpoint index] '", where, "': tensor '", key, "': ", field,
                " entries must be non-negative integers, got ", e.dump());
    s.push_back(e.get<int64_t>());
  }
  return s;
}

const json& field(const json& obj, const char* name, const std::string& where,
                  const std::string& key) {
  GLOBE_CHECK(obj.is_object() && obj.contains(name), "[checkpoint index] '", where,
              "': ", key.empty() ? std::string("the index") : "tensor '" + key + "'", " has no \"",
              name, "\"");
  return obj.at(name);
}

bool plain_file_name(const std::string& f) {
  return !f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos &&
         f.find('\0') == std::string::npos && f != kIndexFile;
}

// The chunks must tile the tensor: each inside it, no two overlapping, volumes adding up.
void check_tiling(const IndexEntry& e, const std::string& where) {
  const size_t nd = e.shape.size();
  auto fail_if = [&](bool bad, const auto&... msg) {
    GLOBE_CHECK(!bad, "[checkpoint index] '", where, "': tensor '", e.name, "' ",
                shape_str(e.shape), ": ", msg...);
  };
  auto empty = [](const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); };
  for (const ChunkRecord& c : e.chunks) {
    fail_if(c.offsets.size() != nd || c.shape.size() != nd, "chunk in '", c.file, "' has offsets ",
            shape_str(c.offsets), " and shape ", shape_str(c.shape), " for a ", nd, "-d tensor");
    for (size_t d = 0; d < nd; ++d)
      fail_if(c.offsets[d] > e.shape[d] || c.shape[d] > e.shape[d] - c.offsets[d], "chunk at ",
              shape_str(c.offsets), " of shape ", shape_str(c.shape), " in '", c.file,
              "' lies outside the tensor");
  }
  for (size_t a = 0; a < e.chunks.size(); ++a)
    for (size_t b = a + 1; b < e.chunks.size(); ++b) {
      const ChunkRecord &x = e.chunks[a], &y = e.chunks[b];
      bool overlap = !empty(x.shape) && !empty(y.shape);
      for (size_t d = 0; d < nd && overlap; ++d)
        overlap =
            x.offsets[d] < y.offsets[d] + y.shape[d] && y.offsets[d] < x.offsets[d] + x.shape[d];
      fail_if(overlap, "chunks at ", shape_str(x.offsets), " ('", x.file, "') and ",
              shape_str(y.offsets), " ('", y.file, "') overlap");
    }
  // Inside the tensor and disjoint, so the volumes add up to at most the tensor's.
  const std::optional<uint64_t> total = checked_nbytes(e.shape, 1);
  fail_if(!total, "the shape is too large");
  uint64_t covered = 0;
  for (const ChunkRecord& c : e.chunks) covered += *checked_nbytes(c.shape, 1);
  fail_if(covered != *total, "the chunks cover ", covered, " of ", *total,
          " elements: some part of the tensor is in no file");
}

}  // namespace

const IndexEntry* ShardedIndex::find(const std::string& name) const {
  for (const IndexEntry& e : tensors)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string> ShardedIndex::files() const {
  std::set<std::string> s;
  for (const IndexEntry& e : tensors)
    for (const ChunkRecord& c : e.chunks) s.insert(c.file);
  return {s.begin(), s.end()};
}

ShardedIndex parse_index(std::string_view text, const std::string& where) {
  const json root = parse_json_strict(text, "checkpoint index", where, "the index");
  GLOBE_CHECK(root.is_object(), "[checkpoint index] '", where, "': must be a JSON object");
  const json& format = field(root, "format", where, "");
  GLOBE_CHECK(format == kFormat, "[checkpoint index] '", where, "': format ", format.dump(),
              " is not \"", kFormat, "\"");
  const json& version = field(root, "version", where, "");
  GLOBE_CHECK(version == kVersion, "[checkpoint index] '", where, "': version ", version.dump(),
              " is not supported (this Globe reads version ", kVersion, ")");
  ShardedIndex index;
  const json& ws = field(root, "world_size", where, "");
  GLOBE_CHECK(ws.is_number_unsigned() && ws.get<uint64_t>() >= 1 &&
                  ws.get<uint64_t>() <= uint64_t(INT32_MAX),
              "[checkpoint index] '", where, "': world_size must be a positive integer");
  index.world_size = ws.get<int>();
  if (root.contains("metadata")) {
    const json& m = root.at("metadata");
    GLOBE_CHECK(m.is_object(), "[checkpoint index] '", where,
                "': metadata must be an object of strings");
    for (const auto& [k, v] : m.items()) {
      GLOBE_CHECK(v.is_string(), "[checkpoint index] '", where, "': metadata '", k,
                  "' must be a string");
      index.metadata[k] = v.get<std::string>();
    }
  }
  const json& tensors = field(root, "tensors", where, "");
  GLOBE_CHECK(tensors.is_object(), "[checkpoint index] '", where, "': tensors must be an object");
  for (const auto& [name, t] : tensors.items()) {
    IndexEntry e;
    e.name = name;
    const json& dt = field(t, "dtype", where, name);
    GLOBE_CHECK(dt.is_string() && dtype_size(dt.get<std::string>()) > 0, "[checkpoint index] '",
                where, "': tensor '", name, "' has unknown dtype ", dt.dump());
    e.dtype = dt.get<std::string>();
    e.shape = parse_extents(field(t, "shape", where, name), where, name, "shape");
    if (t.contains("local")) {
      GLOBE_CHECK(t.at("local").is_boolean(), "[checkpoint index] '", where, "': tensor '", name,
                  "': local must be true or false");
      e.local = t.at("local").get<bool>();
    }
    if (t.contains("layout") && t.at("layout").is_string())
      e.layout = t.at("layout").get<std::string>();
    const json& chunks = field(t, "chunks", where, name);
    GLOBE_CHECK(chunks.is_array(), "[checkpoint index] '", where, "': tensor '", name,
                "': chunks must be an array");
    for (const json& c : chunks) {
      ChunkRecord r;
      const json& file = field(c, "file", where, name);
      const json& key = field(c, "key", where, name);
      GLOBE_CHECK(file.is_string() && plain_file_name(file.get<std::string>()),
                  "[checkpoint index] '", where, "': tensor '", name, "': chunk file ", file.dump(),
                  " is not a plain file name in the directory");
      GLOBE_CHECK(key.is_string(), "[checkpoint index] '", where, "': tensor '", name,
                  "': chunk key must be a string");
      r.file = file.get<std::string>();
      r.key = key.get<std::string>();
      r.offsets = parse_extents(field(c, "offsets", where, name), where, name, "chunk offsets");
      r.shape = parse_extents(field(c, "shape", where, name), where, name, "chunk shape");
      e.chunks.push_back(std::move(r));
    }
    check_tiling(e, where);
    index.tensors.push_back(std::move(e));
  }
  return index;
}

ShardedIndex read_index(const std::string& dir, const std::string& op) {
  const std::string path = dir + "/" + kIndexFile;
  ReadFile file(path, op);
  GLOBE_CHECK(file.size() <= kMaxHeaderBytes, "[", op, "] '", path, "' is ", file.size(),
              " bytes, more than an index can be");
  std::string text(file.size(), '\0');
  file.read_at(0, text.data(), text.size(), "the index");
  return parse_index(text, path);
}

std::string encode_index(const ShardedIndex& index) {
  // Compact but readable: one line per tensor header and per chunk.
  auto dump = [](const json& j) { return j.dump(); };
  try {
    json metadata = json::object();
    for (const auto& [k, v] : index.metadata) metadata[k] = v;
    std::string out = "{\"format\": " + dump(kFormat) +
                      ", \"version\": " + std::to_string(kVersion) +
                      ", \"world_size\": " + std::to_string(index.world_size) +
                      ",\n \"metadata\": " + dump(metadata) + ",\n \"tensors\": {";
    for (size_t i = 0; i < index.tensors.size(); ++i) {
      const IndexEntry& e = index.tensors[i];
      out += std::string(i ? "," : "") + "\n  " + dump(e.name) + ": {\"dtype\": " + dump(e.dtype) +
             ", \"shape\": " + dump(e.shape);
      if (e.local) out += ", \"local\": true";
      if (!e.layout.empty()) out += ", \"layout\": " + dump(e.layout);
      out += ", \"chunks\": [";
      for (size_t c = 0; c < e.chunks.size(); ++c) {
        const ChunkRecord& r = e.chunks[c];
        out += std::string(c ? "," : "") + "\n    {\"file\": " + dump(r.file) +
               ", \"key\": " + dump(r.key) + ", \"offsets\": " + dump(r.offsets) +
               ", \"shape\": " + dump(r.shape) + "}";
      }
      out += "]}";
    }
    return out + "}}\n";
  } catch (const json::exception& e) {
    GLOBE_FAIL("[checkpoint index] cannot encode the index (names must be valid UTF-8): ",
               e.what());
  }
}

void write_index(const std::string& dir, const ShardedIndex& index, const std::string& op) {
  const std::string text = encode_index(index);
  AtomicFile f(dir + "/" + kIndexFile, op);
  f.write(text.data(), text.size(), "the index");
  f.commit();
}

std::string shard_file_name(int rank, const std::string& tag) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05d-", rank);
  return buf + tag + ".safetensors";
}

bool is_shard_file_name(const std::string& name) {
  const std::string suffix = ".safetensors";
  if (name.rfind("rank-", 0) != 0 || name.size() < 5 + 5 + 1 + suffix.size()) return false;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  for (size_t i = 5; i < 10; ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return name[10] == '-';
}

std::string fresh_shard_tag() {
  std::random_device rd;
  const uint64_t t = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  const uint32_t v =
      uint32_t(rd()) ^ uint32_t(t) ^ uint32_t(t >> 32) ^ (uint32_t(::getpid()) << 16);
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

void remove_unindexed_shards(const std::string& dir, const ShardedIndex& index) {
  const std::vector<std::string> keep = index.files();
  std::error_code ec;
  try {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      // Also the temporary files of a save that crashed ("<shard>.tmp.<pid>.<n>").
      const size_t tmp = name.find(".safetensors.tmp.");
      const std::string base = tmp == std::string::npos ? name : name.substr(0, tmp + 12);
      if (is_shard_file_name(base) &&
          (tmp != std::string::npos || !std::binary_search(keep.begin(), keep.end(), name)))
        std::filesystem::remove(entry.path(), ec);
    }
  } catch (const std::exception&) {
    // Leftovers waste space but do no harm: the index never names them.
  }
}

}  // namespace globe::io
