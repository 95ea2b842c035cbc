// Placement: which ranks hold a global tensor, arranged as a mesh (docs/design.md §1).
//
//   auto p1 = globe::placement("cpu", {0, 1});            // 1-D mesh of 2 ranks
//   auto p2 = globe::placement("cpu", {{0, 1}, {2, 3}});  // 2x2 mesh
//   auto p3 = globe::mesh_placement("cpu", {2, 2, 2});     // ranks 0..7 as a 2x2x2 mesh
//
// The order written is kept: mesh coordinate (i, j) is the rank written there.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "globe/device/device.h"

namespace globe {

class Placement {
 public:
  Placement() = default;
  // `ranks` in row-major mesh order; validates (see docs/design.md §1) and throws "[placement] ...".
  Placement(std::string device, std::vector<int> ranks, std::vector<int64_t> mesh_shape);
  // Every rank of the world, 1-D.
  static Placement all(const std::string& device = "cpu");

  // The device type's name, "cpu" or "cuda", as written.
  const std::string& device() const { return d().device; }
  DeviceType device_type() const { return d().type; }
  // Where this rank's shards of tensors on this placement live: the CPU, or for "cuda" GPU
  // local_rank % GPUs (OneFlow's rule; several ranks may share one GPU).
  Device local_device() const;
  const std::vector<int>& ranks() const { return d().ranks; }
  const std::vector<int64_t>& mesh_shape() const { return d().mesh; }
  int64_t mesh_ndim() const { return int64_t(d().mesh.size()); }
  int size() const { return int(d().ranks.size()); }
  bool contains(int rank) const { return index_of(rank) >= 0; }
  // Position of `rank` in ranks() (row-major mesh index), or -1.
  int index_of(int rank) const {
    const std::vector<int>& index = d().index;
    return rank >= 0 && size_t(rank) < index.size() ? index[size_t(rank)] : -1;
  }
  // Mesh coordinate of the member at row-major `index` (tabled when the placement is made: boxing
  // asks on every call).
  const std::vector<int64_t>& coord_of(int index) const;
  // Ranks that share every mesh coordinate with `rank` (a member) except along `axis`, ordered by
  // that axis (tabled as coord_of).
  const std::vector<int>& axis_group(int rank, int64_t axis) const;
  // The same over several axes (ascending): the ranks whose coordinates differ from `rank`'s only
  // there, in row-major order of those axes.
  std::vector<int> axes_group(int rank, const std::vector<int64_t>& axes) const;
  // The first rank (mesh coordinate 0, 0, ...).
  int first() const { return d().ranks.front(); }

  // Placements are interned (equal ones share their tables), so equality is identity.
  bool operator==(const Placement& o) const { return d_ == o.d_; }
  bool operator!=(const Placement& o) const { return !(*this == o); }
  size_t hash() const { return d().hash; }  // tabled: asked on every boxing
  // "placement(cpu, [[0, 1], [2, 3]])".
  std::string to_string() const;

 private:
  // Immutable once made and shared by copies: a placement travels with every global tensor and
  // every boxing, and a copy is then a reference count, not three allocations. Equal placements
  // share one (placement.cpp interns them).
  struct Data {
    std::string device;
    std::vector<int> ranks;
    std::vector<int64_t> mesh;
    DeviceType type = DeviceType::cpu;
    std::vector<int> index;                           // [rank]: index_of, -1 for non-members
    std::vector<std::vector<int64_t>> coords;         // [index]: mesh coordinate
    std::vector<std::vector<std::vector<int>>> axis;  // [index][axis]: axis_group
    size_t hash = 0;  // of the device, ranks and mesh; 0 for the default (empty) placement
  };
  const Data& d() const {
    static const Data none;
    return d_ ? *d_ : none;
  }
  std::shared_ptr<const Data> d_;
};

// The world ranks of either placement, ascending: the members of a move between them.
std::vector<int> union_ranks(const Placement& a, const Placement& b);

// The user-facing constructors of the API (1-D list, 2-D nested list).
// The 1-D list takes int64_t elements on purpose: with `int` a column mesh `{{0}, {1}}` would be
// ambiguous (each `{0}` converts to int as well as it does to a row); with int64_t the nested
// overload is the better match, and `{0, 1}` still picks the 1-D one.
Placement placement(const std::string& device, std::initializer_list<int64_t> ranks);
Placement placement(const std::string& device, std::initializer_list<std::initializer_list<int>> ranks);
Placement placement(const std::string& device, const std::vector<int>& ranks);
// A mesh of any number of dimensions over consecutive ranks first_rank, first_rank + 1, ... in
// row-major order (the shape-only form of PyTorch's init_device_mesh). For other orders, the
// Placement constructor takes the ranks and the shape.
Placement mesh_placement(const std::string& device, const std::vector<int64_t>& shape, int first_rank = 0);

}  // namespace globe

template <>
struct std::hash<globe::Placement> {
  size_t operator()(const globe::Placement& p) const { return p.hash(); }
};
