// Checkpoints (save / load with global_dst_rank / global_src_rank, sharded directories) and the
// process's place in the world.
#include <exception>

#include "bind.h"

namespace globe::py {

void bind_io(pyb::module_& m) {
  m.def("save", [](const pyb::dict& state, const std::string& path, int global_dst_rank,
                   std::map<std::string, std::string> metadata) {
    SaveOptions o;
    o.global_dst_rank = global_dst_rank;
    o.metadata = std::move(metadata);
    save(to_state_dict(state), path, o);
  }, pyb::arg("state"), pyb::arg("path"), pyb::arg("global_dst_rank") = 0,
        pyb::arg("metadata") = std::map<std::string, std::string>{});
  // The tensors, and the file's metadata when asked: (dict, metadata).
  m.def("load", [](const std::string& path, int global_src_rank, bool with_metadata) -> pyb::object {
    LoadOptions o;
    o.global_src_rank = global_src_rank;
    std::map<std::string, std::string> metadata;
    if (with_metadata) o.metadata = &metadata;
    pyb::dict tensors = to_dict(load(path, o));
    if (!with_metadata) return tensors;
    return pyb::make_tuple(tensors, metadata);
  }, pyb::arg("path"), pyb::arg("global_src_rank") = 0, pyb::arg("with_metadata") = false);
  m.def("save_sharded", [](const pyb::dict& state, const std::string& dir) { save_sharded(to_state_dict(state), dir); },
        pyb::arg("state"), pyb::arg("dir"));
  m.def("load_sharded_into", [](const std::string& dir, const pyb::dict& targets) { load_sharded_into(dir, to_state_dict(targets)); },
        pyb::arg("dir"), pyb::arg("targets"));
  m.def("save_hf", [](const pyb::dict& state, const std::string& dir, int64_t max_shard_bytes, const pyb::object& dtype) {
    HfSaveOptions options{.max_shard_bytes = max_shard_bytes};
    if (!dtype.is_none()) options.dtype = dtype.cast<DType>();
    save_hf(to_state_dict(state), dir, options);
  }, pyb::arg("state"), pyb::arg("dir"), pyb::arg("max_shard_bytes") = int64_t(5'000'000'000), pyb::arg("dtype") = pyb::none());
  m.def("load_sharded", [](const std::string& dir, const pyb::object& like) {
    if (like.is_none()) return to_dict(load_sharded(dir));
    return to_dict(load_sharded(dir, to_state_dict(like.cast<pyb::dict>())));
  }, pyb::arg("dir"), pyb::arg("like") = pyb::none());

  m.def("rank", &dist::world_rank);
  m.def("world_size", &dist::world_size);
  m.def("local_rank", &dist::local_rank);
  m.def("set_consistency_checks", &dist::set_consistency_checks);
  // An uncaught Python exception on one rank of several ends the rank the way an uncaught C++
  // exception does: the others are told, then it aborts (globe/dist/runtime.cpp). Exiting
  // normally instead would finalise MPI while the others wait in collectives for it.
  m.def("exit_after_failure", &dist::exit_after_failure, pyb::arg("code"),
        "tells the other ranks, then exits with `code` (the traceback is already printed)");
  m.def("print_error_here", &dist::print_error_here, pyb::arg("text"),
        "files `text` as this rank's error; false when another rank already showed the same");
  m.def("set_grad_bucket_bytes", &set_grad_bucket_bytes, pyb::arg("bytes"));
  m.def("grad_bucket_bytes", &grad_bucket_bytes);
  pyb::class_<NoSyncGuard>(m, "_NoSyncGuard").def(pyb::init<>());
}

}  // namespace globe::py
