#include "globe/nn/parallel_layers.h"

namespace globe::nn {

NdSbp on_axis(const Placement& placement, int64_t axis, const Sbp& s) {
  const int64_t n = placement.mesh_ndim();
  const int64_t a = normalize_dim(axis, n, "on_axis");
  std::vector<Sbp> v(n, sbp::broadcast);
  v[a] = s;
  return NdSbp(v);
}

namespace {

NdSbp broadcast_on(const NdSbp& s, int64_t axis) {
  std::vector<Sbp> v(s.begin(), s.end());
  v[size_t(normalize_dim(axis, int64_t(v.size()), "tensor-parallel region"))] = sbp::broadcast;
  return NdSbp(v);
}

}  // namespace

Tensor reduce_over_tp(const Tensor& t, int64_t tp_axis) {
  return t.is_global() ? t.to_global(broadcast_on(t.sbp(), tp_axis)) : t;
}

Tensor enter_tp_region(const Tensor& t, int64_t tp_axis) {
  if (!t.is_global()) return t;
  const NdSbp s = broadcast_on(t.sbp(), tp_axis);
  return t.to_global(t.placement(), s, s);
}

ColumnParallelLinear::ColumnParallelLinear(int64_t in_features, int64_t out_features, const Placement& p,
                                           bool bias, int64_t tp_axis)
    : Linear(in_features, out_features, bias) {
  std::vector<std::pair<std::string, NdSbp>> plan = {{"weight", on_axis(p, tp_axis, sbp::split(0))}};
  if (bias) plan.emplace_back("bias", on_axis(p, tp_axis, sbp::split(0)));
  distribute(p, plan, on_axis(p, tp_axis, sbp::broadcast));
}

RowParallelLinear::RowParallelLinear(int64_t in_features, int64_t out_features, const Placement& p, bool bias,
                                     int64_t tp_axis)
    : Linear(in_features, out_features, bias) {
  distribute(p, {{"weight", on_axis(p, tp_axis, sbp::split(1))}}, on_axis(p, tp_axis, sbp::broadcast));
}

}  // namespace globe::nn
