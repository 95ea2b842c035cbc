#include "globe/io/hf_checkpoint.h"

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <set>

#include "globe/base/trace.h"
#include "globe/dist/runtime.h"
#include "globe/io/atomic_file.h"
#include "globe/io/checkpoint.h"
#include "globe/io/collective.h"
#include "globe/io/json_parse.h"
#include "globe/io/safetensors.h"
#include "globe/ops/ops.h"

namespace globe {

namespace io {

namespace {

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::string read_text(const std::string& path, const std::string& op) {
  ReadFile file(path, op);
  GLOBE_CHECK(file.size() <= kMaxHeaderBytes, "[", op, "] '", path, "' is ", file.size(), " bytes, more than an index can be");
  std::string text(file.size(), '\0');
  file.read_at(0, text.data(), text.size(), "the index");
  return text;
}

// A file name the index may name: plain, inside the directory.
bool plain_name(const std::string& f) {
  return !f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos && f.find('\\') == std::string::npos;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

}  // namespace

bool is_hf_checkpoint(const std::string& dir) {
  return !is_file(dir + "/" + kIndexFile) && (is_file(dir + "/" + kHfIndexFile) || is_file(dir + "/" + kHfSingleFile));
}

ShardedIndex read_hf_index(const std::string& dir, const std::string& op) {
  // name -> file, in the index's order (transformers sorts it by name)
  std::vector<std::pair<std::string, std::string>> weight_map;
  ShardedIndex index;
  const std::string index_path = dir + "/" + kHfIndexFile;
  const bool sharded = is_file(index_path);
  if (sharded) {
    const nlohmann::ordered_json j = parse_json_strict(read_text(index_path, op), op.c_str(), index_path, "the index");
    GLOBE_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), "[", op, "] '", index_path,
                "' has no \"weight_map\" object (a Hugging Face index maps each tensor's name to its file)");
    if (j.contains("metadata") && j["metadata"].is_object())
      for (const auto& [k, v] : j["metadata"].items()) index.metadata[k] = v.is_string() ? v.get<std::string>() : v.dump();
    for (const auto& [name, file] : j["weight_map"].items()) {
      GLOBE_CHECK(file.is_string() && plain_name(file.get<std::string>()), "[", op, "] '", index_path, "': tensor '", name,
                  "' maps to ", file.dump(), ", not a file name inside the directory");
      weight_map.emplace_back(name, file.get<std::string>());
    }
  } else {
    GLOBE_CHECK(is_file(dir + "/" + kHfSingleFile), "[", op, "] '", dir, "' has neither ", kIndexFile, ", ", kHfIndexFile,
                " nor ", kHfSingleFile, ": no checkpoint there");
    SafetensorsReader r(dir + "/" + kHfSingleFile, op);
    for (const TensorRecord& rec : r.header().tensors) weight_map.emplace_back(rec.name, kHfSingleFile);
  }

  // Each file once: its header says every tensor's dtype and shape (and that the file is whole).
  std::map<std::string, std::unique_ptr<SafetensorsReader>> files;
  std::map<std::string, std::vector<std::string>> missing_files;  // file -> the tensors mapped to it
  std::vector<std::string> problems;
  for (const auto& [name, file] : weight_map) {
    if (files.count(file) || missing_files.count(file)) {
      if (missing_files.count(file)) missing_files[file].push_back(name);
      continue;
    }
    if (!is_file(dir + "/" + file)) {
      missing_files[file].push_back(name);
      continue;
    }
    files[file] = std::make_unique<SafetensorsReader>(dir + "/" + file, op);  // a truncated file fails here
  }
  for (const auto& [file, names] : missing_files)
    problems.push_back("it names '" + file + "' (for " + std::to_string(names.size()) + " tensors: " +
                       quoted_list(names) + "), which is not in the directory");
  std::map<std::string, std::vector<std::string>> absent;  // file -> tensors it lacks
  for (const auto& [name, file] : weight_map) {
    auto it = files.find(file);
    if (it == files.end()) continue;
    const TensorRecord* rec = it->second->header().find(name);
    if (rec == nullptr) {
      absent[file].push_back(name);
      continue;
    }
    IndexEntry e;
    e.name = name;
    e.dtype = rec->dtype_name;
    e.shape = rec->shape;
    e.layout = "whole, in " + file;
    e.chunks.push_back({file, name, Shape(rec->shape.size(), 0), rec->shape});
    index.tensors.push_back(std::move(e));
  }
  for (const auto& [file, names] : absent)
    problems.push_back("'" + file + "' lacks " + quoted_list(names) + ", which the index maps to it");
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? " " : "; ") + p;
    GLOBE_FAIL("[", op, "] '", sharded ? index_path : dir + "/" + kHfSingleFile, "':", all);
  }
  return index;
}

ShardedIndex read_checkpoint_index(const std::string& dir, const std::string& op) {
  // A directory with neither: read_hf_index's error names all three files. No directory at all:
  // read_index's ("cannot open 'DIR/index.json': No such file or directory").
  std::error_code ec;
  const bool hf = !is_file(dir + "/" + kIndexFile) && std::filesystem::is_directory(dir, ec);
  return hf ? read_hf_index(dir, op) : read_index(dir, op);
}

}  // namespace io

namespace {

std::string hf_shard_name(size_t k, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k + 1, n);
  return buf;
}

// "model-00001-of-00003.safetensors" and the like: the files a save may replace.
bool is_hf_shard_name(const std::string& name) {
  unsigned a = 0, b = 0;
  char tail[16] = {};
  return std::sscanf(name.c_str(), "model-%5u-of-%5u.%15s", &a, &b, tail) == 3 && std::string(tail) == "safetensors" &&
         name.size() == std::string("model-00001-of-00001.safetensors").size();
}

}  // namespace

void save_hf(const StateDict& state, const std::string& dir, const HfSaveOptions& options) {
  const trace::Span span(trace::Kind::io, "save_hf " + dir);
  const int me = dist::world_rank(), world = dist::world_size();
  io::enter_collective("save_hf: " + io::layout_fingerprint(state));
  GLOBE_CHECK(options.max_shard_bytes > 0, "[save_hf] max_shard_bytes must be positive, not ", options.max_shard_bytes);
  for (const auto& [key, t] : state) GLOBE_CHECK(t.defined(), "[save_hf] '", dir, "': tensor '", key, "' is undefined");
  GLOBE_CHECK(!options.dtype || is_floating(*options.dtype), "[save_hf] dtype ", dtype_name(options.dtype.value_or(kInt64)),
              " is not floating: floating tensors are converted to it");
  // The dtype a tensor is written in.
  auto written = [&](const Tensor& t) { return options.dtype && is_floating(t.dtype()) ? *options.dtype : t.dtype(); };

  // Files as transformers cuts them: in state order, a new file when the next tensor would not fit.
  std::vector<StateDict> groups(1);
  int64_t in_group = 0, total = 0;
  for (const auto& [key, t] : state) {
    const int64_t bytes = t.numel() * int64_t(itemsize(written(t)));
    if (in_group > 0 && in_group + bytes > options.max_shard_bytes) {
      groups.emplace_back();
      in_group = 0;
    }
    groups.back().set(key, t);
    in_group += bytes;
    total += bytes;
  }
  const size_t n = groups.size();
  std::vector<std::string> names;
  for (size_t k = 0; k < n; ++k) names.push_back(n == 1 ? io::kHfSingleFile : hf_shard_name(k, n));

  std::string tag = me == 0 ? io::fresh_shard_tag() : "";
  io::broadcast_string(tag, 0);
  auto partial = [&](size_t k) { return dir + "/." + names[k] + ".partial-" + tag; };
  io::agree_on_errors(io::capture_error([&] { io::make_directories(dir, "save_hf"); }));
  try {
    for (size_t k = 0; k < n; ++k) {  // collective; each file gathered to and written by its rank
      StateDict file;
      for (const auto& [key, t] : groups[k]) file.set(key, written(t) == t.dtype() ? t : to_dtype(t, written(t)));
      save(file, partial(k), {.global_dst_rank = int(k % size_t(world)), .metadata = options.metadata});
    }
  } catch (const Error&) {
    std::error_code ec;  // every rank threw the same error: drop the complete temporary files
    for (size_t k = 0; k < n; ++k)
      if (int(k % size_t(world)) == me) std::filesystem::remove(partial(k), ec);
    throw;
  }

  // Every file is complete: rank 0 renames them into place, writes the index, removes the rest.
  std::string error;
  if (me == 0)
    error = io::capture_error([&] {
      for (size_t k = 0; k < n; ++k) {
        std::error_code ec;
        std::filesystem::rename(partial(k), dir + "/" + names[k], ec);
        GLOBE_CHECK(!ec, "[save_hf] cannot rename '", partial(k), "' to '", names[k], "': ", ec.message());
      }
      const std::set<std::string> keep(names.begin(), names.end());
      std::error_code ec;
      if (n == 1) {
        std::filesystem::remove(dir + "/" + io::kHfIndexFile, ec);
      } else {
        nlohmann::ordered_json j;
        j["metadata"]["total_size"] = total;
        std::vector<std::pair<std::string, std::string>> map;
        for (size_t k = 0; k < n; ++k)
          for (const auto& [key, t] : groups[k]) map.emplace_back(key, names[k]);
        std::sort(map.begin(), map.end());
        j["weight_map"] = nlohmann::ordered_json::object();
        for (const auto& [key, file] : map) j["weight_map"][key] = file;
        const std::string text = j.dump(2) + "\n";
        io::AtomicFile f(dir + "/" + io::kHfIndexFile, "save_hf");
        f.write(text.data(), text.size(), "the index");
        f.commit();
      }
      for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool ours = is_hf_shard_name(name) || name == io::kHfSingleFile;
        if (ours && !keep.count(name)) std::filesystem::remove(entry.path(), ec);
      }
      io::sync_directory(dir, "save_hf");
    });
  io::agree_on_root_error(error, 0);
}

}  // namespace globe
