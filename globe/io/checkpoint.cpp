#include "globe/io/checkpoint.h"

#include <memory>
#include <nlohmann/json.hpp>

#include "globe/base/trace.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/io/collective.h"
#include "globe/io/safetensors.h"

namespace globe {

namespace {

void check_rank(int rank, const char* op, const char* what) {
  GLOBE_CHECK(rank >= 0 && rank < dist::world_size(), "[", op, "] ", what, " ", rank,
              " is outside the world of ", dist::world_size(), " ranks");
}

}  // namespace

void save(const StateDict& state, const std::string& path, const SaveOptions& options) {
  const trace::Span span(trace::Kind::io, "save " + path);
  const int dst = options.global_dst_rank, me = dist::world_rank();
  io::enter_collective("save to rank " + std::to_string(dst) + ": " +
                       io::layout_fingerprint(state));
  check_rank(dst, "save", "global_dst_rank");
  for (const auto& [key, t] : state)
    GLOBE_CHECK(t.defined(), "[save] '", path, "': tensor '", key, "' is undefined");

  NoGradGuard no_grad;
  std::unique_ptr<io::SafetensorsWriter> writer;
  std::string error;  // the destination's first failure; the others keep the collective going
  if (me == dst) {
    std::vector<io::TensorDecl> decls;
    for (const auto& [key, t] : state) decls.push_back({key, t.dtype(), t.shape()});
    error = io::capture_error([&] {
      writer = std::make_unique<io::SafetensorsWriter>(path, decls, options.metadata, "save");
    });
  }
  const Placement on_dst = placement("cpu", std::vector<int>{dst});
  int64_t bytes = 0;
  for (const auto& [key, t] : state) bytes += t.numel() * int64_t(itemsize(t.dtype()));
  std::unique_ptr<Progress> progress = me == dst ? io::checkpoint_progress("save " + path, bytes) : nullptr;
  for (const auto& [key, t] : state) {
    // One tensor at a time: the destination holds at most one gathered tensor beyond the model.
    Tensor value = t.is_global() ? shard_of(box(t, on_dst, sbp::broadcast)) : t;
    if (me == dst && error.empty()) error = io::capture_error([&] { writer->append(value); });
    if (progress) progress->advance(t.numel() * int64_t(itemsize(t.dtype())));
  }
  progress.reset();
  if (me == dst && error.empty()) error = io::capture_error([&] { writer->commit(); });
  writer.reset();  // an uncommitted temporary file goes away here
  io::agree_on_root_error(error, dst);
}

StateDict load(const std::string& path, const LoadOptions& options) {
  const trace::Span span(trace::Kind::io, "load " + path);
  const int src = options.global_src_rank, me = dist::world_rank();
  io::enter_collective("load from rank " + std::to_string(src));
  check_rank(src, "load", "global_src_rank");

  // The source reads everything first, so a bad file fails before any tensor is built.
  std::vector<std::pair<std::string, Tensor>> values;
  std::string error, header;
  if (me == src) {
    error = io::capture_error([&] {
      io::SafetensorsReader reader(path, "load");
      nlohmann::json meta = nlohmann::json::array();
      int64_t bytes = 0;
      for (const io::TensorRecord& rec : reader.header().tensors) bytes += int64_t(rec.nbytes());
      const std::unique_ptr<Progress> progress = io::checkpoint_progress("load " + path, bytes);
      for (const io::TensorRecord& rec : reader.header().tensors) {
        values.emplace_back(rec.name, reader.read(rec));
        if (progress) progress->advance(int64_t(rec.nbytes()));
        meta.push_back({rec.name, rec.dtype_name, rec.shape});
      }
      header = nlohmann::json{{"tensors", meta}, {"metadata", reader.header().metadata}}.dump();
    });
  }
  io::agree_on_root_error(error, src);
  io::broadcast_string(header, src);

  const Placement on_src = placement("cpu", std::vector<int>{src});
  StateDict out;
  size_t i = 0;
  const nlohmann::json parsed = nlohmann::json::parse(header);
  if (options.metadata) *options.metadata = parsed["metadata"].get<std::map<std::string, std::string>>();
  for (const nlohmann::json& m : parsed["tensors"]) {
    const std::string name = m[0].get<std::string>();
    const Shape shape = m[2].get<Shape>();
    const DType dtype = *io::parse_dtype(m[1].get<std::string>(), path, name);
    Tensor local = me == src ? values[i].second : Tensor::empty(Shape(shape.size(), 0), dtype);
    out.set(name, make_global(local, shape, on_src, sbp::broadcast));
    ++i;
  }
  return out;
}

}  // namespace globe
