#include "globe/global/zero_layout.h"

#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/kernels/device_kernels.h"

namespace globe {

NdSbp zero_layout(const Tensor& t) {
  NdSbp u = t.sbp();
  const auto& mesh = t.placement().mesh_shape();
  for (size_t a = 0; a < u.size(); ++a) {
    if (!u[a].is_broadcast() || mesh[a] <= 1) continue;
    // The first dim that splits evenly over the ranks it would be split over, else the first long
    // enough to give each a block: even blocks keep the largest rank's share at 1/n.
    int64_t even = -1, enough = -1;
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t ranks = mesh[a];
      for (size_t b = 0; b < u.size(); ++b)
        if (u[b].is_split() && u[b].dim == d) ranks *= mesh[b];
      if (t.shape()[d] < ranks) continue;
      if (enough < 0) enough = d;
      if (t.shape()[d] % ranks == 0) {
        even = d;
        break;
      }
    }
    if (even >= 0 || enough >= 0) u[a] = sbp::split(even >= 0 ? even : enough);
  }
  return u;
}

Tensor owned_copy(const Tensor& t, const NdSbp& sbp) {
  const Tensor boxed = box(t, t.placement(), sbp);
  const Tensor& shard = shard_of(boxed);
  Tensor own = Tensor::uninitialized(shard.shape(), shard.dtype(), shard.device());
  kernels::device_copy(own, shard);
  return make_global(own, t.shape(), t.placement(), sbp);
}

}  // namespace globe
