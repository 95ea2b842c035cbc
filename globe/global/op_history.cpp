#include "globe/global/op_history.h"

#include <unordered_map>

namespace globe {

namespace {

dist::OpHistory& history_of(const Placement& p) {
  static std::unordered_map<Placement, dist::OpHistory> histories;  // nodes never move
  auto it = histories.find(p);
  if (it == histories.end()) it = histories.emplace(p, dist::OpHistory(p.to_string())).first;
  return it->second;
}

dist::OpHistory& recorded(const Placement& placement, std::string_view name, uint32_t detail) {
  dist::OpHistory& h = history_of(placement);
  h.record(name, detail);
  return h;
}

}  // namespace

RecordOp::RecordOp(const Placement& placement, std::string_view name, uint32_t detail)
    : scope_(&recorded(placement, name, detail)) {}

uint32_t hash_layout(const Shape& shape, DType dtype, const NdSbp& layout, uint32_t h) {
  h = dist::mix(h, uint64_t(dtype) << 32 | uint64_t(shape.size()));
  for (int64_t d : shape) h = dist::mix(h, uint64_t(d));
  for (const Sbp& s : layout) h = dist::mix(h, uint64_t(s.kind) << 32 | uint64_t(s.is_split() ? s.dim : 0));
  return h;
}

uint32_t hash_layouts(const std::vector<Tensor>& tensors, uint32_t h) {
  for (const Tensor& t : tensors) h = hash_layout(t.shape(), t.dtype(), t.sbp(), h);
  return h;
}

}  // namespace globe
