#include "globe/io/sharded.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "globe/base/trace.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/io/chunk_reader.h"
#include "globe/io/collective.h"
#include "globe/io/hf_checkpoint.h"
#include "globe/io/safetensors.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/ops.h"

namespace globe {

namespace {

struct Planned {
  const Tensor* value = nullptr;
  NdSbp cut;          // global: the layout the blocks come from
  bool mine = false;  // this rank writes a chunk of it
  Shape my_shape;
};

}  // namespace

void save_sharded(const StateDict& state, const std::string& dir,
                  const ShardedSaveOptions& options) {
  const trace::Span span(trace::Kind::io, "save_sharded " + dir);
  const int me = dist::world_rank();
  io::enter_collective("save_sharded: " + io::layout_fingerprint(state));
  for (const auto& [key, t] : state)
    GLOBE_CHECK(t.defined(), "[save_sharded] '", dir, "': tensor '", key, "' is undefined");
  std::string tag = me == 0 ? io::fresh_shard_tag() : "";
  io::broadcast_string(tag, 0);
  const std::string my_file = io::shard_file_name(me, tag);

  // The plan: every rank computes every tensor's chunks (and so the whole index) without talking.
  io::ShardedIndex index;
  index.world_size = dist::world_size();
  index.metadata = options.metadata;
  std::vector<Planned> plan;
  std::vector<io::TensorDecl> mine;
  for (const auto& [key, t] : state) {
    io::IndexEntry e;
    e.name = key;
    e.dtype = io::safetensors_dtype(t.dtype());
    e.shape = t.shape();
    Planned p;
    p.value = &t;
    if (!t.is_global()) {
      e.local = true;
      e.layout = "local";
      e.chunks.push_back({io::shard_file_name(0, tag), key, Shape(t.dim(), 0), t.shape()});
      p.mine = me == 0;
      p.my_shape = t.shape();
    } else {
      e.layout = t.placement().to_string() + " " + t.sbp().to_string();
      p.cut = partial_to_broadcast(t.sbp());
      std::vector<int> holders = t.placement().ranks();
      std::sort(holders.begin(), holders.end());
      std::set<std::pair<Shape, Shape>> written;
      for (int r : holders) {
        const Block b = local_block(t.shape(), t.placement(), p.cut, r);
        if (numel_of(b.shape) == 0 || !written.insert({b.start, b.shape}).second) continue;
        e.chunks.push_back({io::shard_file_name(r, tag), key, b.start, b.shape});
        if (r == me) {
          p.mine = true;
          p.my_shape = b.shape;
        }
      }
    }
    if (p.mine) mine.push_back({key, t.dtype(), p.my_shape});
    index.tensors.push_back(std::move(e));
    plan.push_back(std::move(p));
  }

  NoGradGuard no_grad;
  std::string error = io::capture_error([&] { io::make_directories(dir, "save_sharded"); });
  std::unique_ptr<io::SafetensorsWriter> writer;
  if (!mine.empty() && error.empty())
    error = io::capture_error([&] {
      writer = std::make_unique<io::SafetensorsWriter>(
          dir + "/" + my_file, mine,
          std::map<std::string, std::string>{{"globe", "shard"}, {"tag", tag}}, "save_sharded");
    });
  int64_t all_bytes = 0, my_bytes = 0;  // every chunk of every rank; this rank's
  for (size_t i = 0; i < plan.size(); ++i)
    for (const io::ChunkRecord& c : index.tensors[i].chunks)
      all_bytes += numel_of(c.shape) * int64_t(itemsize(plan[i].value->dtype()));
  for (const io::TensorDecl& d : mine) my_bytes += numel_of(d.shape) * int64_t(itemsize(d.dtype));
  const std::unique_ptr<Progress> progress =
      me == 0 ? io::checkpoint_progress("save_sharded " + dir + " (rank 0's chunks)", my_bytes, all_bytes) : nullptr;
  for (const Planned& p : plan) {
    const Tensor& t = *p.value;
    Tensor v = t;
    if (t.is_global() && t.sbp() != p.cut)
      v = box(t, t.placement(), p.cut);  // collective: every rank
    if (p.mine && error.empty())
      error = io::capture_error([&] { writer->append(v.is_global() ? shard_of(v) : v); });
    if (p.mine && progress) progress->advance(numel_of(p.my_shape) * int64_t(itemsize(t.dtype())));
  }
  bool committed = false;
  if (writer && error.empty())
    error = io::capture_error([&] {
      writer->commit();
      committed = true;
    });
  writer.reset();
  auto drop_my_file = [&] {
    std::error_code ec;  // best effort: the index never names this file
    if (committed) std::filesystem::remove(dir + "/" + my_file, ec);
  };
  try {
    io::agree_on_errors(error);  // every file is complete before the index names it
    std::string index_error;
    if (me == 0) index_error = io::capture_error([&] { io::write_index(dir, index, "save_sharded"); });
    io::agree_on_root_error(index_error, 0);
  } catch (const Error&) {
    drop_my_file();
    // Every rank threw the same error; wait until every rank has removed its file, so the
    // directory is back to the old checkpoint when save_sharded returns anywhere.
    io::agree_on_errors("");
    throw;
  }
  if (me == 0) io::remove_unindexed_shards(dir, index);
}

namespace {

struct Request {
  const io::IndexEntry* entry;
  bool local = false;
  Placement placement;
  NdSbp sbp;
  std::optional<DType> as;  // converted to this floating dtype after reading (load_sharded(like))
  Tensor into;              // load_sharded_into: this rank's block is read straight into it
};

// Reads the index (Globe's, or a Hugging Face directory's) on every rank; a failure anywhere fails
// everywhere.
io::ShardedIndex read_index_everywhere(const std::string& dir) {
  io::ShardedIndex index;
  io::agree_on_errors(io::capture_error([&] { index = io::read_checkpoint_index(dir, "load_sharded"); }));
  return index;
}

// The file that lists the tensors of `dir`, for errors.
std::string index_path(const std::string& dir) {
  if (!io::is_hf_checkpoint(dir)) return dir + "/" + io::kIndexFile;
  const std::string sharded = dir + "/" + io::kHfIndexFile;
  return std::filesystem::exists(sharded) ? sharded : dir + "/" + io::kHfSingleFile;
}

const io::IndexEntry& entry_of(const io::ShardedIndex& index, const std::string& dir,
                               const std::string& key) {
  const io::IndexEntry* e = index.find(key);
  GLOBE_CHECK(e != nullptr, "[load_sharded] '", index_path(dir), "' has no tensor '", key, "'");
  return *e;
}

Request global_request(const io::IndexEntry& e, const std::string& dir,
                       const TensorLayout& layout) {
  const std::string where = index_path(dir);
  io::entry_dtype(e, where);
  NdSbp s;
  try {
    s = normalize_sbp(layout.sbp, int64_t(e.shape.size()), layout.placement.mesh_ndim(),
                      "load_sharded");
  } catch (const Error& err) {
    GLOBE_FAIL("[load_sharded] '", where, "': tensor '", e.name, "' ", e.dtype, shape_str(e.shape),
               " cannot take the layout ", layout.sbp.to_string(), ": ", err.what());
  }
  return {&e, false, layout.placement, s, std::nullopt, Tensor()};
}

// Reads each rank's block of every request; boxes only where the target has partial_sum axes.
// Each loaded tensor goes to `sink` as soon as it is read (so a sink that copies it away and lets it
// go holds one tensor at a time).
void load_requests(const std::string& dir, const std::vector<Request>& requests,
                   const std::function<void(const std::string&, const Tensor&)>& sink) {
  const trace::Span span(trace::Kind::io, "load_sharded " + dir);
  const int me = dist::world_rank();
  std::string error;
  io::ChunkReader reader(dir, "load_sharded");
  NoGradGuard no_grad;
  // The block this rank reads of a request: all of a local tensor, its block of a global one, none
  // where it is outside the placement.
  auto my_block = [&](const Request& r) -> std::optional<Block> {
    if (r.local) return Block{Shape(r.entry->shape.size(), 0), r.entry->shape};
    if (!r.placement.contains(me)) return std::nullopt;
    return local_block(r.entry->shape, r.placement, partial_to_broadcast(r.sbp), me);
  };
  // Its bytes, for the progress line and the prefetch.
  auto my_bytes_of = [&](const Request& r) -> int64_t {
    const std::optional<Block> b = my_block(r);
    return b ? numel_of(b->shape) * int64_t(itemsize(io::entry_dtype(*r.entry, dir))) : 0;
  };
  // Read in file order (each file's tensors by their offset), as a sequential reader would: the
  // model's order jumps between files and back (model.layers.10 is stored before model.layers.2),
  // and the prefetch below asks for the next bytes in this order. (Measured alone, the order made
  // no difference to a cold load; with the prefetch it keeps each rank's requests ascending.) The
  // order depends only on the files, so every rank takes it and runs the collectives below in the
  // same order.
  auto position = [&](const Request& r) -> std::pair<std::string, uint64_t> {
    if (r.entry->chunks.empty()) return {std::string(), 0};
    const io::ChunkRecord& c = r.entry->chunks.front();
    uint64_t at = UINT64_MAX;  // a file that cannot be read sorts last; reading it reports why
    try {
      at = reader.chunk_record(*r.entry, c).begin;
    } catch (const Error&) {
    }
    return {c.file, at};
  };
  std::vector<std::pair<std::pair<std::string, uint64_t>, const Request*>> order;
  for (const Request& r : requests) order.push_back({position(r), &r});
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // Ask for the bytes this rank reads up to kPrefetchAhead before it reads them: the disk then reads
  // ahead while the loop below copies (and first touches) the targets, rather than one after the
  // other; bounded, so that ranks sharing a disk keep to a short stretch each.
  constexpr int64_t kPrefetchAhead = int64_t(64) << 20;
  size_t prefetched = 0;
  int64_t asked = 0, consumed = 0;
  auto prefetch_ahead = [&] {
    while (prefetched < order.size() && asked - consumed < kPrefetchAhead) {
      const Request& r = *order[prefetched++].second;
      if (const std::optional<Block> b = my_block(r)) {
        reader.prefetch_block(*r.entry, b->start, b->shape);
        asked += my_bytes_of(r);
      }
    }
  };
  int64_t all_bytes = 0, my_bytes = 0;
  for (const Request& r : requests) {
    all_bytes += numel_of(r.entry->shape) * int64_t(itemsize(io::entry_dtype(*r.entry, dir)));
    my_bytes += my_bytes_of(r);
  }
  const std::unique_ptr<Progress> progress =
      me == 0 ? io::checkpoint_progress("load_sharded " + dir + " (rank 0's blocks)", my_bytes, all_bytes) : nullptr;
  for (const auto& [at, request] : order) {
    const Request& r = *request;
    const io::IndexEntry& e = *r.entry;
    const DType dtype = io::entry_dtype(e, dir);
    prefetch_ahead();
    auto read_done = [&] {
      const int64_t bytes = my_bytes_of(r);
      consumed += bytes;
      if (progress) progress->advance(bytes);
    };
    // After a failure this rank stops reading but keeps building (zero) tensors, so that it still
    // takes part in every collective below; agree_on_errors then fails every rank.
    auto converted = [&](const Tensor& t) { return r.as ? to_dtype(t, *r.as) : t; };
    if (r.local) {
      Tensor v;
      if (error.empty()) error = io::capture_error([&] { v = reader.read_whole(e); });
      if (error.empty()) sink(e.name, converted(v.defined() ? v : Tensor::empty(e.shape, dtype)));
      read_done();
      continue;
    }
    const NdSbp cut = partial_to_broadcast(r.sbp);
    if (r.into.defined()) {  // no new tensor: the rank's block goes where it belongs
      if (r.placement.contains(me) && error.empty()) {
        const Block b = local_block(e.shape, r.placement, cut, me);
        error = io::capture_error([&] { reader.read_block_into(e, b.start, b.shape, r.into); });
      }
      read_done();
      continue;
    }
    Tensor local;
    if (r.placement.contains(me)) {
      const Block b = local_block(e.shape, r.placement, cut, me);
      if (error.empty()) error = io::capture_error([&] { local = reader.read_block(e, b.start, b.shape); });
      if (!local.defined()) local = Tensor::empty(b.shape, dtype);
      local = kernels::copy_to_device(converted(local), r.placement.local_device());  // read on the host
      read_done();
    } else {
      local = converted(Tensor::empty(Shape(e.shape.size(), 0), dtype));
    }
    Tensor g = make_global(local, e.shape, r.placement, cut);
    if (cut != r.sbp) g = box(g, r.placement, r.sbp);  // B -> P: local, no communication
    if (error.empty()) sink(e.name, g);  // after a failure: the sink gets nothing more here
  }
  io::agree_on_errors(error);
}

// The loaded tensors under their names, in the requests' order (they are read in file order).
StateDict collect(const std::string& dir, const std::vector<Request>& requests) {
  std::map<std::string, Tensor> loaded;
  load_requests(dir, requests, [&](const std::string& name, const Tensor& t) { loaded[name] = t; });
  StateDict out;
  for (const Request& r : requests) out.set(r.entry->name, loaded.at(r.entry->name));
  return out;
}

std::string describe_requests(const std::vector<Request>& requests) {
  std::string s;
  for (const Request& r : requests)
    s += r.entry->name +
         (r.local ? "|local;" : "|" + r.placement.to_string() + r.sbp.to_string() + ";");
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(s));
  return std::to_string(requests.size()) + " tensors, layouts " + buf;
}

}  // namespace

StateDict load_sharded(const std::string& dir, const std::map<std::string, TensorLayout>& layouts) {
  io::enter_collective("load_sharded " + std::to_string(layouts.size()) + " keys");
  const io::ShardedIndex index = read_index_everywhere(dir);
  for (const auto& [key, layout] : layouts) entry_of(index, dir, key);
  std::vector<Request> requests;
  for (const io::IndexEntry& e : index.tensors) {
    auto it = layouts.find(e.name);
    if (it != layouts.end()) requests.push_back(global_request(e, dir, it->second));
  }
  io::enter_collective("load_sharded: " + describe_requests(requests));
  return collect(dir, requests);
}

namespace {

// A floating checkpoint loads into a floating target of another width (a bf16 file into float32
// weights, as transformers' torch_dtype and torch's load_state_dict convert); other dtypes must match.
bool both_floating(const io::IndexEntry& e, const Tensor& t) {
  const std::optional<DType> d = io::parse_dtype(e.dtype, e.name, e.name);
  return d && is_floating(*d) && is_floating(t.dtype());
}

// The requests that load every key of `like` in the layout of like's tensor there, after checking
// that the checkpoint fits (every difference named at once).
std::vector<Request> like_requests(const std::string& dir, const io::ShardedIndex& index, const StateDict& like) {
  std::string differ, missing;
  for (const auto& [key, t] : like) {
    GLOBE_CHECK(t.defined(), "[load_sharded] '", dir, "': the target of '", key, "' is undefined");
    const io::IndexEntry* e = index.find(key);
    if (e == nullptr) {
      missing += (missing.empty() ? "'" : ", '") + key + "'";
    } else if (e->shape != t.shape() || !(e->dtype == io::safetensors_dtype(t.dtype()) || both_floating(*e, t))) {
      differ += " tensor '" + key + "' is " + e->dtype + shape_str(e->shape) + " in the checkpoint but " +
                io::safetensors_dtype(t.dtype()) + shape_str(t.shape()) + " in the target;";
    }
  }
  if (!differ.empty() || !missing.empty()) {
    std::string extra;
    for (const io::IndexEntry& e : index.tensors)
      if (!like.contains(e.name)) extra += (extra.empty() ? "'" : ", '") + e.name + "'";
    GLOBE_FAIL("[load_sharded] '", dir, "' does not fit the target:", differ,
               missing.empty() ? "" : " '" + index_path(dir) + "' has no tensor " + missing + ";",
               extra.empty() ? "" : " only in the checkpoint: " + extra + ";");
  }
  std::vector<Request> requests;
  for (const auto& [key, t] : like) {
    const io::IndexEntry& e = entry_of(index, dir, key);
    Request r = t.is_global() ? global_request(e, dir, {t.placement(), t.sbp()}) : Request{&e, true, {}, {}, std::nullopt, Tensor()};
    if (e.dtype != io::safetensors_dtype(t.dtype())) r.as = t.dtype();
    requests.push_back(r);
  }
  return requests;
}

}  // namespace

StateDict load_sharded(const std::string& dir, const StateDict& like) {
  io::enter_collective("load_sharded like " + io::layout_fingerprint(like));
  const io::ShardedIndex index = read_index_everywhere(dir);
  return collect(dir, like_requests(dir, index, like));
}

void load_sharded_into(const std::string& dir, const StateDict& targets) {
  io::enter_collective("load_sharded_into " + io::layout_fingerprint(targets));
  const io::ShardedIndex index = read_index_everywhere(dir);
  NoGradGuard no_grad;
  std::vector<Request> requests = like_requests(dir, index, targets);
  // Read in place where the target's block is the file's bytes as they are: a contiguous host
  // tensor of the same dtype, laid out without partial sums. The rest is read, then copied.
  for (Request& r : requests) {
    const Tensor& t = targets.at(r.entry->name);
    if (r.local || r.as || partial_to_broadcast(r.sbp) != r.sbp) continue;
    const Tensor local = t.to_local();
    if (local.device() == kCPU && local.is_contiguous()) r.into = local;
  }
  load_requests(dir, requests, [&](const std::string& name, const Tensor& t) { copy_(targets.at(name), t); });
}

StateDict load_sharded(const std::string& dir) {
  io::enter_collective("load_sharded all keys");
  const io::ShardedIndex index = read_index_everywhere(dir);
  const Placement all = Placement::all();
  std::vector<Request> requests;
  for (const io::IndexEntry& e : index.tensors) {
    if (e.local)
      requests.push_back({&e, true, {}, {}, std::nullopt, Tensor()});
    else
      requests.push_back(global_request(e, dir, {all, sbp::broadcast}));
  }
  return collect(dir, requests);
}

}  // namespace globe
