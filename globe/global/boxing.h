// Boxing: converting a global tensor's layout without changing its value (docs/design.md §4).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "globe/core/tensor.h"
#include "globe/global/placement.h"
#include "globe/core/sbp.h"

namespace globe {

// Point-to-point tag of moves between placements. Moves that the two sides may post in different
// orders (a pipeline's transfers) pass tags of their own (kMoveTag + 1 and up), so each receive
// matches its own send; consistency mode does not compare those (the sequence differs by design).
constexpr int kMoveTag = 0x7a;

// The same value laid out as (placement, sbp). No autograd (Tensor::to_global adds it). Every rank
// of the world calls it; members of either placement communicate. A move between placements sends
// without waiting for the receivers (dist::send_later): only receiving ranks wait.
Tensor box(const Tensor& x, const Placement& placement, const NdSbp& sbp, int move_tag = kMoveTag);

// box(x, x.placement(), sbp) started: the returned function waits and gives box's result. Where
// the last step is an all-gather (a fully sharded parameter's, nn/fully_shard.h) it stays in flight
// until then, so the caller computes meanwhile; every other step runs before this returns. Ranks
// start boxings in the same order, as they call box().
std::function<Tensor()> start_box(const Tensor& x, const NdSbp& sbp);

// Bytes this rank would send to convert `from` into `to` on one mesh axis of `group_size` ranks,
// for a block of `block_bytes` bytes: the cost model SBP deduction ranks candidates with.
double boxing_cost_bytes(const Sbp& from, const Sbp& to, double block_bytes, int group_size);

// What boxing this rank ran within one placement since the last reset, counted by path:
// "(S(0), P) -> (S(0), B): per axis (1: P -> B)" for a sequence of single-axis collectives, or
// "...: fallback (gather every axis, then slice)". Moves between placements are not counted.
// Paths are keyed by what asked for them: an op's input ("matmul input 1") inside the scope of a
// BoxingFor, else "to_global".
std::vector<std::pair<std::string, int64_t>> boxing_paths();
void reset_boxing_paths();
class BoxingFor {
 public:
  explicit BoxingFor(std::string what);
  ~BoxingFor();
  BoxingFor(const BoxingFor&) = delete;
  BoxingFor& operator=(const BoxingFor&) = delete;

 private:
  std::string prev_;
};

}  // namespace globe
