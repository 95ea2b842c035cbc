// Global tensors: a logical tensor + placement + SBP, with this rank's shard as a local tensor.
//
//   auto p = globe::placement("cpu", {0, 1});
//   Tensor x = globe::randn({4, 6}, p, sbp::split(0));   // rank r holds rows [2r, 2r+2)
//   Tensor y = x.to_global(p, sbp::broadcast);           // all-gather: both hold all 4 rows
//
// Every rank runs every global op (SPMD); ranks outside the placement hold an empty shard.
#pragma once

#include <functional>

#include "globe/core/tensor.h"
#include "globe/global/placement.h"
#include "globe/core/sbp.h"

namespace globe {

struct GlobalMeta {
  Placement placement;
  NdSbp sbp;    // normalised: one entry per mesh axis, split axes non-negative
  Tensor local; // this rank's shard; all extents 0 outside the placement
};

// This rank's shard of a global tensor, as stored: no graph node (to_local() is the
// differentiable way), for the library's own code.
const Tensor& shard_of(const Tensor& global);

// Wraps an existing shard (no communication, no checks beyond shapes): the building block of
// every global op. `local` must already be this rank's block of `shape` under (placement, sbp).
Tensor make_global(const Tensor& local, const Shape& shape, const Placement& placement, const NdSbp& sbp);

// The shape of this rank's shard of a `shape`-tensor under (placement, sbp); zeros outside.
Shape local_shape(const Shape& shape, const Placement& placement, const NdSbp& sbp, int rank);
// The block (start, shape) of the logical tensor held by `rank` (a member of the placement).
Block local_block(const Shape& shape, const Placement& placement, const NdSbp& sbp, int rank);

// Creation with a layout. Random values are sharding-invariant (docs/design.md §3).
Tensor randn(const Shape& shape, const Placement& placement, const NdSbp& sbp, DType dtype = kFloat32);
Tensor rand(const Shape& shape, const Placement& placement, const NdSbp& sbp, DType dtype = kFloat32);
Tensor uniform(const Shape& shape, double low, double high, const Placement& placement, const NdSbp& sbp,
               DType dtype = kFloat32);
Tensor randint(int64_t low, int64_t high, const Shape& shape, const Placement& placement, const NdSbp& sbp);
Tensor zeros(const Shape& shape, const Placement& placement, const NdSbp& sbp, DType dtype = kFloat32);
Tensor ones(const Shape& shape, const Placement& placement, const NdSbp& sbp, DType dtype = kFloat32);
Tensor full(const Shape& shape, double value, const Placement& placement, const NdSbp& sbp,
            DType dtype = kFloat32);
Tensor arange(int64_t n, const Placement& placement, const NdSbp& sbp, DType dtype = kInt64);
// The same logical value on every rank (e.g. from a file or literal), laid out as asked: each rank
// keeps only its block. Collective among the placement's ranks, in program order like every global
// op: they all-gather an 8-byte digest of their values, and values that differ are an error on
// each of them naming the ranks (hashing the value costs about as much as reading it once).
Tensor from_full(const Tensor& value, const Placement& placement, const NdSbp& sbp);

// x.to_global(x.placement(), sbp, grad_sbp) started ahead of its use (a prefetched parameter
// gather, nn/fully_shard.h): the returned function waits, records the graph node under the grad
// mode of that moment, and gives the result. Ranks start and finish them in the same order.
std::function<Tensor()> start_to_global(const Tensor& x, const NdSbp& sbp, const NdSbp& grad_sbp);

// Which rank holds which block, with its index ranges: a text picture for any number of mesh and
// tensor dims. Partial sums name their mesh axes; a replica names the first rank holding its block.
std::string visualize(const Tensor& t);
// The same for a layout not yet made: nothing is allocated or sent.
std::string visualize(const Shape& shape, const Placement& placement, const NdSbp& sbp, DType dtype = kFloat32);

}  // namespace globe
