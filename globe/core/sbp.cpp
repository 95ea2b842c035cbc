#include "globe/core/sbp.h"

#include <algorithm>

#include "globe/base/error.h"

namespace globe {

std::string Sbp::to_string() const {
  switch (kind) {
    case Kind::split: return "S(" + std::to_string(dim) + ")";
    case Kind::broadcast: return "B";
    case Kind::partial_sum: return "P";
  }
  return "?";
}

void NdSbp::assign(const Sbp* s, size_t n) {
  GLOBE_CHECK(n <= kMaxMeshAxes, "[sbp] a layout of ", n, " mesh axes: at most ", kMaxMeshAxes, " are supported");
  std::copy(s, s + n, v_);
  n_ = uint8_t(n);
}

bool NdSbp::all_broadcast() const {
  for (const Sbp& s : *this)
    if (!s.is_broadcast()) return false;
  return true;
}

bool NdSbp::any_partial() const {
  for (const Sbp& s : *this)
    if (s.is_partial()) return true;
  return false;
}

std::string NdSbp::to_string() const {
  std::string s = "(";
  for (size_t i = 0; i < n_; ++i) s += (i ? ", " : "") + v_[i].to_string();
  return s + ")";
}

NdSbp replicated(int64_t mesh_ndim) { return NdSbp(std::vector<Sbp>(size_t(mesh_ndim), sbp::broadcast)); }

NdSbp partial_to_broadcast(NdSbp s) {
  for (size_t a = 0; a < s.size(); ++a)
    if (s[a].is_partial()) s[a] = sbp::broadcast;
  return s;
}

NdSbp dual(const NdSbp& s) {
  NdSbp d = s;
  for (size_t a = 0; a < d.size(); ++a) {
    if (s[a].is_broadcast()) d[a] = sbp::partial_sum;
    else if (s[a].is_partial()) d[a] = sbp::broadcast;
  }
  return d;
}

Range split_range(int64_t n, int64_t parts, int64_t i) {
  const int64_t base = n / parts, extra = n % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

NdSbp normalize_sbp(const NdSbp& nd_sbp, int64_t tensor_ndim, int64_t mesh_ndim, const char* op) {
  GLOBE_CHECK(int64_t(nd_sbp.size()) == mesh_ndim, "[", op, "] sbp ", nd_sbp.to_string(), " has ",
              nd_sbp.size(), " entries but the placement's mesh has ", mesh_ndim, " axes");
  NdSbp out = nd_sbp;
  for (size_t a = 0; a < out.size(); ++a) {
    if (!out[a].is_split()) continue;
    const int64_t d = out[a].dim;
    GLOBE_CHECK(d >= -tensor_ndim && d < tensor_ndim, "[", op, "] split dim ", d,
                " out of range for a tensor of ", tensor_ndim, " dims (sbp ", nd_sbp.to_string(), ")");
    out[a].dim = d < 0 ? d + tensor_ndim : d;
  }
  return out;
}

Block block_of(const Shape& logical, const std::vector<int64_t>& mesh, const NdSbp& nd_sbp,
               const std::vector<int64_t>& coord) {
  Block b{Shape(logical.size(), 0), logical};
  for (size_t a = 0; a < nd_sbp.size(); ++a) {
    if (!nd_sbp[a].is_split()) continue;
    const int64_t d = nd_sbp[a].dim;
    Range r = split_range(b.shape[d], mesh[a], coord[a]);
    b.start[d] += r.start;
    b.shape[d] = r.length;
  }
  return b;
}

}  // namespace globe
