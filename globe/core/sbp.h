// SBP: how a global tensor's value is laid out over one mesh axis (docs/design.md §2).
//   split(i)    each rank holds a balanced block along tensor dim i
//   broadcast   each rank holds the whole value
//   partial_sum each rank holds a summand; the value is their sum
#pragma once

#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "globe/core/shape.h"

namespace globe {

struct Sbp {
  enum class Kind : uint8_t { split, broadcast, partial_sum };
  Kind kind = Kind::broadcast;
  int64_t dim = 0;  // for split: the tensor dimension split (may be negative until normalised); not a mesh axis

  bool is_split() const { return kind == Kind::split; }
  bool is_broadcast() const { return kind == Kind::broadcast; }
  bool is_partial() const { return kind == Kind::partial_sum; }
  bool operator==(const Sbp& o) const { return kind == o.kind && (kind != Kind::split || dim == o.dim); }
  bool operator!=(const Sbp& o) const { return !(*this == o); }
  std::string to_string() const;  // "S(0)", "B", "P"
};

namespace sbp {
constexpr Sbp split(int64_t dim) { return Sbp{Sbp::Kind::split, dim}; }
inline constexpr Sbp broadcast{Sbp::Kind::broadcast, 0};
inline constexpr Sbp partial_sum{Sbp::Kind::partial_sum, 0};
}  // namespace sbp

// One Sbp per mesh axis. A single Sbp converts implicitly (for 1-D meshes). Held inline, up to
// kMaxMeshAxes axes: layouts are copied and compared on every op and boxing, and a heap vector
// cost an allocation each time (bench/RESULTS.md, the 4-byte P -> B).
class NdSbp {
 public:
  static constexpr size_t kMaxMeshAxes = 8;

  NdSbp() = default;
  NdSbp(Sbp s) : n_(1) { v_[0] = s; }  // NOLINT: implicit on purpose, `to_global(p, sbp::broadcast)`
  NdSbp(std::initializer_list<Sbp> s) { assign(s.begin(), s.size()); }
  explicit NdSbp(const std::vector<Sbp>& s) { assign(s.data(), s.size()); }

  size_t size() const { return n_; }
  const Sbp& operator[](size_t i) const { return v_[i]; }
  Sbp& operator[](size_t i) { return v_[i]; }
  const Sbp* begin() const { return v_; }
  const Sbp* end() const { return v_ + n_; }
  bool operator==(const NdSbp& o) const {
    if (n_ != o.n_) return false;
    for (size_t i = 0; i < n_; ++i)
      if (v_[i] != o.v_[i]) return false;
    return true;
  }
  bool operator!=(const NdSbp& o) const { return !(*this == o); }
  bool all_broadcast() const;
  bool any_partial() const;
  std::string to_string() const;  // "(S(0), B)"

 private:
  void assign(const Sbp* s, size_t n);  // checks n <= kMaxMeshAxes
  Sbp v_[kMaxMeshAxes];
  uint8_t n_ = 0;
};

inline std::ostream& operator<<(std::ostream& os, const Sbp& s) { return os << s.to_string(); }
inline std::ostream& operator<<(std::ostream& os, const NdSbp& s) { return os << s.to_string(); }

// Broadcast on each of `mesh_ndim` mesh axes: a value every rank of the placement holds whole.
NdSbp replicated(int64_t mesh_ndim);

// `s` with every partial_sum mesh axis made broadcast: the layout of the summed value.
NdSbp partial_to_broadcast(NdSbp s);

// The layout a gradient naturally takes (docs/design.md §6): B <-> P, S(i) stays S(i).
NdSbp dual(const NdSbp& s);

// Balanced split of `n` over `parts`: part i gets floor(n/parts) + 1 elements if i < n % parts.
struct Range {
  int64_t start, length;
};
Range split_range(int64_t n, int64_t parts, int64_t i);

// Checks `nd_sbp` against a tensor rank and mesh (one entry per mesh axis, split dims in range)
// and returns it with split dims normalised. `op` names the caller in errors.
NdSbp normalize_sbp(const NdSbp& nd_sbp, int64_t tensor_ndim, int64_t mesh_ndim, const char* op);

// The block of the logical tensor held at mesh coordinate `coord`: the mesh axes apply one
// after another (mesh axis 0 splits the logical extent, mesh axis 1 splits each part, ...).
struct Block {
  Shape start, shape;
};
Block block_of(const Shape& logical, const std::vector<int64_t>& mesh, const NdSbp& nd_sbp,
               const std::vector<int64_t>& coord);

}  // namespace globe
