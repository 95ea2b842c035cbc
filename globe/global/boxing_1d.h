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

// box_axis started: the returned function waits and gives its result. S -> B (an all-gather) is
// left in flight meanwhile (dist::Communicator::start_all_gather_v); any other conversion runs
// before this returns.
std::function<Tensor()> start_box_axis(const Tensor& local, const Shape& block, dist::Communicator& comm,
                                       const Sbp& from, const Sbp& to);

// Deterministic mode's all-reduce (core/deterministic.h): dst (contiguous, src's element count)
// gets the sum of every member's contiguous src, added in the pairwise tree over member index on
// the member that owns each balanced piece, then gathered. src and dst may be one tensor.
void tree_all_reduce(const Tensor& src, const Tensor& dst, dist::Communicator& comm);

}  // namespace globe::detail
