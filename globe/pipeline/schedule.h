// Pipeline schedules as data (docs/06-pipeline.md). A schedule is the one global order of actions that every
// rank walks — (stage, micro-batch, forward / backward / input-gradient / weight-gradient) — and a
// rank runs only the actions of the stages it holds. The order comes from simulating the schedule's
// rule on unit times (F = 1, B = 2, or I = 1 and W = 1 when the backward is split); each action
// starts after the actions it needs have finished, so both ends of a transfer meet in order and no
// schedule can deadlock. Print one with to_string():
//
//   auto s = globe::pipeline::Schedule::make("1f1b", /*groups=*/4, /*microbatches=*/8);
//   std::cout << s.to_string();
//
// Schedules:
//   gpipe        every forward, then every backward (m micro-batches of activations per stage)
//   1f1b         after p - r warm-up forwards, one backward for each forward (at most p - r alive)
//   interleaved  v model chunks per rank group, chunk c on group c mod p (Megatron's order): the
//                bubble shrinks by 1/v
//   zb-h1        1f1b with the backward split into input gradient (I, on the critical path) and
//                weight gradient (W, filling the bubbles): bubble (p-1)/(3m+p-1) at unit times;
//                at most p micro-batches per stage, 1f1b's first-stage bound
//   zbv          zero bubble in a V (Qi et al. 2024): 2 chunks per rank group, group g running
//                stages g and 2p-1-g, the backward split as in zb-h1; a free group runs an input
//                gradient when one is ready, else a forward within 1F1B's memory (2p chunks of half
//                a stage), else a weight gradient
#pragma once

#include <string>
#include <vector>

namespace globe::pipeline {

// The rank group that runs `stage` of `groups` groups: stage mod groups, or in a V (stages
// 0..p-1 down the groups, p..2p-1 back up: group g runs stages g and 2p-1-g).
inline int stage_group(int stage, int groups, bool v_shape) {
  return v_shape && stage >= groups ? 2 * groups - 1 - stage : stage % groups;
}

enum class Phase : unsigned char { forward, backward, input_grad, weight_grad };

struct Action {
  int stage;       // model stage (with chunks: a chunk), 0 .. stages()-1
  int microbatch;  // 0 .. microbatches()-1
  Phase phase;
  bool operator==(const Action& o) const = default;
};

// "F3" (stage omitted), or "F3@s1" with the stage.
std::string to_string(const Action& a, bool with_stage = true);

class Schedule {
 public:
  // `name`: gpipe, 1f1b, interleaved, zb-h1, zbv (also written gpipe / 1F1B / ZB-H1 / ZB-V in
  // any case). `groups`: rank groups (pipeline ranks) p; `chunks`: model chunks per group v (2 or
  // more for interleaved, 2 for zbv; 1 otherwise). Throws "[pipeline] ..." for an unknown name, m <= 0, p <= 0, or a
  // combination the schedule cannot run, with the reason.
  static Schedule make(const std::string& name, int groups, int microbatches, int chunks = 1);
  // The chunks per group a schedule runs with unless told: 2 for interleaved and zbv, else 1
  // (any spelling make() takes; an unknown name throws as make() does).
  static int default_chunks(const std::string& name);

  const std::string& name() const { return name_; }
  int groups() const { return groups_; }
  int chunks() const { return chunks_; }
  int stages() const { return groups_ * chunks_; }
  int microbatches() const { return microbatches_; }
  // The rank group that runs a stage: stage mod p, or for zbv the V (stages 0..p-1 on groups 0..p-1,
  // stages p..2p-1 on groups p-1..0).
  int group_of(int stage) const { return stage_group(stage, groups_, v_shape_); }
  bool splits_backward() const { return split_; }

  // Every action in the global order.
  const std::vector<Action>& order() const { return order_; }
  // Position of an action in order() (for error messages: "action 17 of 48").
  int position(const Action& a) const;
  // The simulated time table: one row per group, one column per time unit, "." where idle.
  std::string to_string() const;
  // Simulated idle fraction of the groups (unit times) and the most micro-batches whose
  // activations a group holds at once.
  double simulated_bubble() const;
  // When order()[i] starts in the simulation, in unit times; and how long an action of a phase
  // runs there (F 1, B 2, I 1, W 1). What the time table and the tutorials' charts are drawn from.
  const std::vector<int>& simulated_starts() const { return start_; }
  static int unit_time(Phase phase) { return phase == Phase::backward ? 2 : 1; }
  std::vector<int> simulated_peak_alive() const { return peak_alive_; }

 private:
  std::string name_;
  int groups_ = 1, chunks_ = 1, microbatches_ = 1;
  bool split_ = false;
  bool v_shape_ = false;
  std::vector<Action> order_;
  std::vector<int> start_;                      // simulated start time of order_[i]
  std::vector<std::vector<std::string>> grid_;  // [group][time]
  std::vector<int> peak_alive_;
  int makespan_ = 0;
  int busy_ = 0;
};

}  // namespace globe::pipeline
