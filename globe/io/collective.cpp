#include "globe/io/collective.h"

#include <cstring>
#include <sstream>

#include "globe/dist/runtime.h"
#include "globe/global/placement.h"
#include "globe/core/sbp.h"
#include "globe/ops/ops.h"

namespace globe::io {

namespace {

dist::Communicator& world() {
  return dist::group(Placement::all().ranks());
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

void enter_collective(const std::string& what) {
  if (dist::world_size() > 1) world().check_consistency(what);
}

void broadcast_string(std::string& s, int root) {
  if (dist::world_size() == 1) return;
  dist::Communicator& comm = world();
  Tensor len = from_vector(std::vector<int64_t>{int64_t(s.size())}, {1});
  comm.broadcast(len, root);
  const int64_t n = len.data<int64_t>()[0];
  if (n == 0) {
    s.clear();
    return;
  }
  Tensor buf = Tensor::empty({(n + 7) / 8}, kInt64);
  if (dist::world_rank() == root) std::memcpy(buf.raw_data(), s.data(), size_t(n));
  comm.broadcast(buf, root);
  if (dist::world_rank() != root) s.assign(static_cast<const char*>(buf.raw_data()), size_t(n));
}

void agree_on_errors(const std::string& my_error) {
  if (dist::world_size() == 1) {
    if (!my_error.empty()) throw Error(my_error);
    return;
  }
  dist::Communicator& comm = world();
  const int n = comm.size();
  Tensor mine = from_vector(std::vector<int64_t>{my_error.empty() ? 0 : 1}, {1});
  Tensor all = Tensor::empty({n}, kInt64);
  comm.all_gather_v(mine, all, std::vector<int64_t>(size_t(n), 1));
  int first = -1;
  for (int r = 0; r < n && first < 0; ++r)
    if (all.data<int64_t>()[r]) first = r;
  if (first < 0) return;
  std::string message = my_error;
  broadcast_string(message, first);
  throw Error(message);  // already names the failing rank
}

void agree_on_root_error(const std::string& root_error, int root) {
  std::string message = root_error;
  broadcast_string(message, root);
  if (!message.empty()) throw Error(message);
}

std::string layout_fingerprint(const StateDict& state) {
  uint64_t h = fnv1a("");
  for (const auto& [key, t] : state) {
    std::ostringstream os;
    os << key << '|' << describe(t) << '|' << (t.defined() && t.is_global() ? "g" : "l") << ';';
    h = fnv1a(os.str(), h);
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::to_string(state.size()) + " tensors, layouts " + buf;
}

std::unique_ptr<Progress> checkpoint_progress(const std::string& what, int64_t bytes, int64_t checkpoint_bytes) {
  constexpr int64_t kProgressBytes = int64_t(256) << 20;
  if ((checkpoint_bytes < 0 ? bytes : checkpoint_bytes) < kProgressBytes) return nullptr;
  return std::make_unique<Progress>(what, bytes, Progress::Unit::bytes);
}

}  // namespace globe::io
