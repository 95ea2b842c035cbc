#include "globe/global/placement.h"

#include <algorithm>
#include <climits>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "globe/base/error.h"
#include "globe/core/sbp.h"
#include "globe/device/backend.h"
#include "globe/core/shape.h"
#include "globe/dist/runtime.h"

namespace globe {

namespace {

// Every placement made, by hash: equal placements share one Data, so comparing two is comparing
// pointers. A program makes a handful; they live to its end.
struct Interned {
  std::mutex mu;
  std::unordered_multimap<size_t, std::shared_ptr<const void>> by_hash;
};
Interned& interned() {
  static Interned* table = new Interned;  // never destroyed: placements outlive static destructors
  return *table;
}

// The device kind as named; an unknown name is the cpu here, refused by the constructor's check.
DeviceType named_type(const std::string& device) { return find_device_type(device).value_or(DeviceType::cpu); }

}  // namespace

Placement::Placement(std::string device_type, std::vector<int> members, std::vector<int64_t> mesh)
    : d_(std::make_shared<const Data>(
          Data{device_type, std::move(members), std::move(mesh), named_type(device_type), {}, {}, {}, 0})) {
  size_t hash = std::hash<std::string>()(device());
  for (int r : ranks()) hash = hash * 1000003u ^ size_t(r);
  for (int64_t m : mesh_shape()) hash = hash * 31u ^ size_t(m);
  Interned& table = interned();
  const std::lock_guard<std::mutex> lock(table.mu);
  for (auto [it, end] = table.by_hash.equal_range(hash); it != end; ++it) {
    auto same = std::static_pointer_cast<const Data>(it->second);
    if (same->device == device() && same->ranks == ranks() && same->mesh == mesh_shape()) {
      d_ = std::move(same);  // made and checked before
      return;
    }
  }
  // Every message names the placement; the checks that make to_string() safe come first.
  GLOBE_CHECK(!ranks().empty(), "[placement] ", to_string(), " is empty: a placement needs at least one rank");
  GLOBE_CHECK(numel_of(mesh_shape()) == int64_t(ranks().size()), "[placement] mesh ", shape_str(mesh_shape()),
              " does not hold the ", ranks().size(), " ranks ", shape_str(std::vector<int64_t>(ranks().begin(), ranks().end())),
              " of placement(", device(), ", ...)");
  GLOBE_CHECK(mesh_shape().size() <= NdSbp::kMaxMeshAxes, "[placement] ", to_string(), " has a mesh of ",
              mesh_shape().size(), " axes: at most ", NdSbp::kMaxMeshAxes, " are supported");
  GLOBE_CHECK(find_device_type(device()).has_value(), "[placement] ", to_string(), ": unknown device type '",
              device(), "' (supported: ", device_type_list(), ")");
  // "this build has no CUDA" / "no CUDA device visible", on every rank
  if (this->device_type() != DeviceType::cpu) (void)local_device();
  std::set<int> seen;
  const int world = dist::world_size();
  for (int r : ranks()) {
    GLOBE_CHECK(seen.insert(r).second, "[placement] rank ", r, " appears twice in ", to_string());
    GLOBE_CHECK(r >= 0, "[placement] negative rank ", r, " in ", to_string());
    GLOBE_CHECK(r < world, "[placement] ", to_string(), " names rank ", r, " but the world has ", world,
                " rank", world == 1 ? "" : "s",
                world == 1 ? " (this program was started directly; to run N ranks use "
                             "`globe-launch --nproc_per_node N PROGRAM`)"
                           : "");
  }
  // The tables coord_of, axis_group and index_of answer from, made once the layout is known to be
  // valid.
  auto full = std::make_shared<Data>(*d_);
  full->hash = hash;
  full->index.assign(size_t(*std::max_element(full->ranks.begin(), full->ranks.end())) + 1, -1);
  for (size_t i = 0; i < full->ranks.size(); ++i) full->index[size_t(full->ranks[i])] = int(i);
  const size_t n = full->ranks.size(), dims = full->mesh.size();
  full->coords.assign(n, std::vector<int64_t>(dims));
  for (size_t i = 0; i < n; ++i)
    for (size_t a = dims, rest = i; a-- > 0;) {
      full->coords[i][a] = int64_t(rest % size_t(full->mesh[a]));
      rest /= size_t(full->mesh[a]);
    }
  d_ = full;
  full->axis.assign(n, std::vector<std::vector<int>>(dims));
  for (size_t i = 0; i < n; ++i)
    for (size_t a = 0; a < dims; ++a) full->axis[i][a] = axes_group(full->ranks[i], {int64_t(a)});
  table.by_hash.emplace(hash, full);
}

Device Placement::local_device() const {
  if (device_type() == DeviceType::cpu) return kCPU;
  const int visible = device_count(device());
  const Device d(device_type(), visible > 0 ? dist::local_rank() % visible : 0);
  check_device_usable(d, "[placement] " + to_string() + " on rank " + std::to_string(dist::world_rank()) + ":");
  return d;
}

Placement Placement::all(const std::string& device) {
  std::vector<int> ranks(dist::world_size());
  for (int i = 0; i < int(ranks.size()); ++i) ranks[i] = i;
  return Placement(device, ranks, {int64_t(ranks.size())});
}

const std::vector<int64_t>& Placement::coord_of(int index) const {
  GLOBE_CHECK(index >= 0 && index < size(), "[placement] ", to_string(), " has no member at index ", index);
  return d().coords[size_t(index)];
}

const std::vector<int>& Placement::axis_group(int rank, int64_t axis) const {
  const int i = index_of(rank);
  GLOBE_CHECK(i >= 0, "[placement] rank ", rank, " is not in ", to_string());
  GLOBE_CHECK(axis >= 0 && axis < mesh_ndim(), "[placement] ", to_string(), " has no mesh axis ", axis);
  return d().axis[size_t(i)][size_t(axis)];
}

std::vector<int> Placement::axes_group(int rank, const std::vector<int64_t>& axes) const {
  const auto strides = contiguous_strides(mesh_shape());
  std::vector<int64_t> c = coord_of(index_of(rank));
  int64_t count = 1;
  for (int64_t a : axes) count *= mesh_shape()[size_t(a)];
  std::vector<int> out;
  for (int64_t k = 0; k < count; ++k) {
    for (size_t i = axes.size(), rest = size_t(k); i-- > 0;) {  // k in row-major order over `axes`
      const size_t a = size_t(axes[i]);
      c[a] = int64_t(rest % size_t(mesh_shape()[a]));
      rest /= size_t(mesh_shape()[a]);
    }
    int64_t idx = 0;
    for (size_t a = 0; a < mesh_shape().size(); ++a) idx += c[a] * strides[a];
    out.push_back(ranks()[size_t(idx)]);
  }
  return out;
}

std::string Placement::to_string() const {
  std::ostringstream os;
  os << "placement(" << device() << ", ";
  if (ranks().empty()) return os.str() + "[])";
  // Nested brackets following the mesh.
  const auto strides = contiguous_strides(mesh_shape());
  for (size_t i = 0; i < ranks().size(); ++i) {
    for (size_t a = 0; a < mesh_shape().size(); ++a)
      if (int64_t(i) % (strides[a] * mesh_shape()[a]) == 0) os << "[";
    os << ranks()[i];
    size_t closes = 0;
    for (size_t a = 0; a < mesh_shape().size(); ++a)
      if ((int64_t(i) + 1) % (strides[a] * mesh_shape()[a]) == 0) ++closes;
    os << std::string(closes, ']');
    if (i + 1 < ranks().size()) os << ", ";
  }
  os << ")";
  return os.str();
}

Placement placement(const std::string& device, std::initializer_list<int64_t> ranks) {
  std::vector<int> r;
  for (int64_t x : ranks) {
    GLOBE_CHECK(x >= INT_MIN && x <= INT_MAX, "[placement] rank ", x, " is out of range");
    r.push_back(int(x));
  }
  return Placement(device, std::move(r), {int64_t(ranks.size())});
}

Placement mesh_placement(const std::string& device, const std::vector<int64_t>& shape, int first_rank) {
  GLOBE_CHECK(!shape.empty(), "[placement] mesh_placement(", device, ", []): the mesh needs at least one dimension");
  for (int64_t d : shape)
    GLOBE_CHECK(d >= 1, "[placement] mesh_placement(", device, ", ", shape_str(shape),
                "): every mesh dimension must be at least 1");
  GLOBE_CHECK(first_rank >= 0, "[placement] mesh_placement(", device, ", ", shape_str(shape), ", first rank ",
              first_rank, "): ranks are not negative");
  std::vector<int> ranks(size_t(numel_of(shape)));
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = first_rank + int(i);
  return Placement(device, std::move(ranks), shape);
}

Placement placement(const std::string& device, const std::vector<int>& ranks) {
  return Placement(device, ranks, {int64_t(ranks.size())});
}

Placement placement(const std::string& device, std::initializer_list<std::initializer_list<int>> rows) {
  std::vector<int> flat;
  const size_t width = rows.size() ? rows.begin()->size() : 0;
  for (const auto& row : rows) {
    if (row.size() != width) {
      std::ostringstream written;  // the nested array as the user wrote it
      written << "placement(" << device << ", [";
      for (auto r = rows.begin(); r != rows.end(); ++r) {
        written << (r == rows.begin() ? "[" : ", [");
        for (auto x = r->begin(); x != r->end(); ++x) written << (x == r->begin() ? "" : ", ") << *x;
        written << "]";
      }
      written << "])";
      GLOBE_FAIL("[placement] ragged rank array in ", written.str(), ": rows of ", width, " and ", row.size(),
                 " ranks (a mesh must be rectangular)");
    }
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return Placement(device, flat, {int64_t(rows.size()), int64_t(width)});
}

std::vector<int> union_ranks(const Placement& a, const Placement& b) {
  std::set<int> s(a.ranks().begin(), a.ranks().end());
  s.insert(b.ranks().begin(), b.ranks().end());
  return {s.begin(), s.end()};
}

}  // namespace globe
