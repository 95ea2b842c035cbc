// One-mesh-axis conversions inside a group: the direct collective per SBP pair (docs/design.md §4 table).
#pragma once

#include <functional>

#include "globe/core/tensor.h"
#include "globe/dist/communicator.h"
#include "globe/core/sbp.h"

namespace globe::detail {

// `local` is this member's shard, under `from`, of the `block`-shaped value the group shares;
// returns its shard under `to`. Never mutates `local`.
Tensor box_axis(const Tensor& local, const Shape& block, dist::Communicator& comm, const Sbp& from,
                const Sbp& to);

// A conversion started: its result, or, while a collective is in flight, what waits for it and
// gives the result (no closure where the result is already there: a small boxing's cost is mostly
// such bookkeeping).
struct Started {
  Tensor value;
  std::function<Tensor()> finish;
  Tensor get() const { return finish ? finish() : value; }
};

// box_axis started. S -> B (an all-gather) is left in flight (dist::Communicator::
// start_all_gather_v); any other conversion runs before this returns.
Started start_box_axis(const Tensor& local, const Shape& block, dist::Communicator& comm, const Sbp& from,
                       const Sbp& to);

// Deterministic mode's all-reduce (core/deterministic.h): dst (contiguous, src's element count)
// gets the sum of every member's contiguous src, added in tree_order.h's tree over member index on
// the member that owns each balanced piece, then gathered. src and dst may be one tensor.
void tree_all_reduce(const Tensor& src, const Tensor& dst, dist::Communicator& comm);

}  // namespace globe::detail
