#include "globe/pipeline/pipeline.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "globe/autograd/tree_accumulator.h"
#include "globe/base/trace.h"
#include "globe/core/deterministic.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/global/grad_buckets.h"
#include "globe/global/meta_wire.h"
#include "globe/ops/ops.h"

namespace globe::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The layout a tensor takes on `to`: its own where the meshes have as many axes, else replicated.
NdSbp layout_on(const NdSbp& s, const Placement& from, const Placement& to) {
  return from.mesh_ndim() == to.mesh_ndim() ? s : replicated(to.mesh_ndim());
}

// A global tensor on a placement this rank is not in: metadata only, an empty shard.
Tensor phantom(const Shape& shape, DType dtype, const Placement& p, const NdSbp& sbp) {
  return make_global(Tensor::empty(Shape(shape.size(), 0), dtype), shape, p, sbp);
}

// `x` as a global tensor on `p` (collective over the ranks of both placements).
Tensor onto(const Tensor& x, const Placement& p) {
  if (!x.is_global()) return x.to_global(p, replicated(p.mesh_ndim()));
  if (x.placement() == p) return x;
  return box(x, p, layout_on(x.sbp(), x.placement(), p));
}

// Micro-batch k of m of a batch cut along dim 0. A global batch split along dim 0 over one mesh
// axis (data parallel) is cut on each rank's own rows when every shard divides evenly, so every
// data-parallel rank runs its share of every micro-batch without communication (as Megatron cuts
// each data-parallel rank's batch); the micro-batch holds other rows than a cut of the whole, but
// the same number, and the batch's mean loss is the same. Any other layout, and any layout in
// deterministic mode, is cut as a whole.
Tensor microbatch(const Tensor& t, int m, int k) {
  const int64_t rows = t.shape()[0];
  const Range whole = split_range(rows, m, k);
  if (!t.is_global()) return narrow(t, 0, whole.start, whole.length);
  const NdSbp& s = t.sbp();
  int split_axes = 0;
  int64_t ways = 1;
  for (size_t a = 0; a < s.size(); ++a) {
    if (s[a].is_split() && s[a].dim == 0) {
      ++split_axes;
      ways *= t.placement().mesh_shape()[a];
    } else if (!s[a].is_broadcast()) {
      split_axes = 2;  // another split or a partial sum: cut the whole
    }
  }
  // Deterministic mode cuts the whole: micro-batch k is then the batch's k-th block of rows on
  // every layout, a whole subtree of the batch's sums wherever the micro-batch's rows hold whole
  // leaves (core/deterministic.h), so the micro-batch count changes no bit.
  if (split_axes != 1 || rows % (ways * m) != 0 || t.requires_grad() || deterministic())
    return narrow(t, 0, whole.start, whole.length);
  Shape shape = t.shape();
  shape[0] = rows / m;
  const Tensor local = t.to_local();
  if (!t.placement().contains(dist::world_rank())) return make_global(local, shape, t.placement(), s);
  const int64_t n = rows / (ways * m);
  return make_global(narrow(local, 0, k * n, n), shape, t.placement(), s);
}

bool shape_matches(const Shape& shape, const Shape& expected) {
  if (shape.size() != expected.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (expected[d] >= 0 && expected[d] != shape[d]) return false;
  return true;
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::input_grad: return "input-gradient backward";
    case Phase::weight_grad: return "weight-gradient backward";
  }
  return "";
}

// Transfer header: the stage output's dtype, global shape and layout (global/meta_wire.h).
Tensor encode_header(const Tensor& t) {
  return from_vector(wire::encode(t.dtype(), t.shape(), t.sbp(), "pipeline"), {wire::kWords});
}

Tensor decode_header(const Tensor& header, const Placement& src) {
  const wire::Meta m = wire::decode(header.data<int64_t>());
  return phantom(m.shape, m.dtype, src, m.sbp);
}

}  // namespace

Pipeline::Pipeline(std::vector<Placement> groups, std::vector<nn::UnaryModule*> blocks, Options options,
                   std::vector<nn::UnaryModule*> first, std::vector<nn::UnaryModule*> last)
    : groups_(std::move(groups)) {
  // Everything is checked before anything moves or communicates.
  const int p = int(groups_.size());
  GLOBE_CHECK(p >= 1, "[pipeline] needs at least one rank group (placement)");
  for (int a = 0; a < p; ++a)
    for (int b = a + 1; b < p; ++b)
      for (int r : groups_[size_t(a)].ranks())
        GLOBE_CHECK(!groups_[size_t(b)].contains(r), "[pipeline] stage placements must not share ranks: rank ", r,
                    " is in both ", groups_[size_t(a)].to_string(), " (group ", a, ") and ",
                    groups_[size_t(b)].to_string(), " (group ", b, ")");
  schedule_ = Schedule::make(options.schedule, p, options.microbatches, options.chunks);
  const int S = schedule_.stages();
  const int n = int(blocks.size());
  GLOBE_CHECK(n >= S, "[pipeline] ", S, " stages but only ", n, " blocks: every stage needs at least one block");
  std::vector<int> stage_of = options.stage_of_block;
  if (stage_of.empty()) {
    for (int s = 0; s < S; ++s)
      for (int64_t i = 0; i < split_range(n, S, s).length; ++i) stage_of.push_back(s);
  }
  GLOBE_CHECK(int(stage_of.size()) == n, "[pipeline] the plan gives a stage for ", stage_of.size(), " blocks but there are ", n);
  stages_.resize(size_t(S));
  for (int i = 0; i < n; ++i) {
    const int s = stage_of[size_t(i)];
    GLOBE_CHECK(s >= 0 && s < S, "[pipeline] the plan puts block ", i, " on stage ", s, ", which does not exist (",
                S, " stages: 0 to ", S - 1, ")");
    GLOBE_CHECK(i == 0 || s >= stage_of[size_t(i - 1)], "[pipeline] the plan puts block ", i, " on stage ", s,
                " after block ", i - 1, " on stage ", stage_of[size_t(i - 1)], ": stages take consecutive blocks");
    if (stages_[size_t(s)].blocks++ == 0) stages_[size_t(s)].first_block = i;
    stages_[size_t(s)].modules.push_back(blocks[size_t(i)]);
  }
  for (int s = 0; s < S; ++s)
    GLOBE_CHECK(stages_[size_t(s)].blocks > 0, "[pipeline] the plan leaves stage ", s, " empty: every stage needs at least one block");
  stages_.front().modules.insert(stages_.front().modules.begin(), first.begin(), first.end());
  stages_.back().modules.insert(stages_.back().modules.end(), last.begin(), last.end());

  for (int s = 0; s < S; ++s)
    for (nn::UnaryModule* m : stages_[size_t(s)].modules) m->to_global(placement_of(s));
}

bool Pipeline::mine(int stage) const { return placement_of(stage).contains(dist::world_rank()); }

namespace {

// Whether `t` (a slot, by address) is a parameter that `m` or a module under it fully shards.
bool fully_sharded(nn::Module& m, const Tensor* t) {
  bool found = false;
  const std::map<std::string, NdSbp>& layouts = m.gather_layouts();
  if (!layouts.empty())
    m.for_each_slot([&](const std::string& name, Tensor& slot, bool) { found = found || (&slot == t && layouts.count(name)); });
  for (const auto& [name, child] : m.named_children()) found = found || fully_sharded(*child, t);
  return found;
}

}  // namespace

void Pipeline::check_ties_unsharded() const {
  for (const Tie& tie : ties_)
    for (const Stage& st : stages_)
      for (nn::UnaryModule* m : st.modules)
        GLOBE_CHECK(!fully_sharded(*m, tie.parameter) && !fully_sharded(*m, tie.slot), "[pipeline] tie: ",
                    globe::describe(*tie.parameter), " is shared with stage ", tie.slot_stage, " and fully sharded (nn::fully_shard) ",
                    "on its own stage; ZeRO-3 cannot shard a parameter that another stage reads: leave the module that holds ",
                    "it unsharded (the GPT's --zero 3 shards its blocks, not the tied embedding)");
}

void Pipeline::tie(Tensor& parameter, Tensor& slot) {
  int param_stage = -1, slot_stage = -1;
  for (int s = 0; s < stages(); ++s)
    for (nn::UnaryModule* m : stages_[size_t(s)].modules)
      m->for_each_slot([&](const std::string&, Tensor& t, bool) {
        if (&t == &parameter) param_stage = s;
        if (&t == &slot) slot_stage = s;
      });
  GLOBE_CHECK(param_stage >= 0 && slot_stage >= 0, "[pipeline] tie: the ", param_stage < 0 ? "parameter" : "slot",
              " is not a tensor of any stage's modules");
  GLOBE_CHECK(param_stage != slot_stage, "[pipeline] tie: both tensors are on stage ", param_stage,
              "; share the tensor itself within a stage");
  ties_.push_back({&parameter, &slot, slot_stage});
  check_ties_unsharded();
}

void Pipeline::expect_input(int stage, Shape shape) {
  GLOBE_CHECK(stage >= 0 && stage < stages(), "[pipeline] expect_input: no stage ", stage, " (", stages(), " stages)");
  stages_[size_t(stage)].expected_input = std::move(shape);
}

std::string Pipeline::describe() const {
  std::ostringstream os;
  for (int s = 0; s < stages(); ++s) {
    const Stage& st = stages_[size_t(s)];
    os << "stage " << s << " on " << placement_of(s).to_string() << ": blocks " << st.first_block;
    if (st.blocks > 1) os << "-" << st.first_block + st.blocks - 1;
    if (s == 0 && st.modules.size() > size_t(st.blocks)) os << " (+ first modules)";
    if (s == stages() - 1 && s > 0 && st.modules.size() > size_t(st.blocks)) os << " (+ last modules)";
    os << "\n";
  }
  return os.str();
}

Tensor Pipeline::forward(int stage, const Tensor& x) {
  Tensor h = x;
  for (nn::UnaryModule* m : stages_[size_t(stage)].modules) h = (*m)(h);
  return h;
}

// Moves `t` (defined on the sending stage's ranks) from stage `from` to stage `to`. Both ends call
// it at their action for micro-batch `mb`; the sender does not wait. Forward moves carry a header
// (dtype, shape, layout) first, so the receiver needs no knowledge of the sender's shapes and a
// stage's expected input is checked on both ends. A gradient's receiver knows its metadata: that
// of `like`, the output it is the gradient of, as the next stage received it.
Tensor Pipeline::transfer(const Tensor& t, int from, int to, int mb, bool fwd, const Tensor& like) {
  const Placement& src = placement_of(from);
  const Placement& dst = placement_of(to);
  const int me = dist::world_rank();
  const bool sending = src.contains(me), receiving = dst.contains(me);
  std::ostringstream what_os;
  what_os << (fwd ? "forward" : "backward") << ", stage " << from << " -> " << to << ", micro-batch " << mb;
  const std::string what = what_os.str();
  const int tag = kMoveTag + 1 + int(((int64_t(mb) * stages() + std::min(from, to)) * 2 + (fwd ? 0 : 1)) % (1 << 20));

  const std::vector<int> members = union_ranks(src, dst);
  dist::Communicator& comm = dist::group(members);
  auto index_in = [&](int r) { return int(std::find(members.begin(), members.end(), r) - members.begin()); };

  struct CountWait {
    double& total;
    Clock::time_point start;
    bool on;
    ~CountWait() {
      if (on) total += seconds_since(start);
    }
  } count_wait{waited_, Clock::now(), receiving};
  // The same time in the timeline: what the step's bubble is counted from.
  std::optional<trace::Span> receive;
  if (receiving) receive.emplace(trace::Kind::wait, "receive " + what);
  Tensor value = t;
  if (!fwd && !sending) value = phantom(like.shape(), like.dtype(), src, layout_on(like.sbp(), dst, src));
  if (fwd) {
    if (sending && me == src.first()) {
      const Tensor header = encode_header(t);
      for (int r : dst.ranks()) dist::send_later(comm.isend(header, index_in(r), tag));
    }
    if (!sending) {
      Tensor header = Tensor::empty({wire::kWords}, kInt64);
      dist::WaitingFor waiting(what);
      comm.irecv(header, index_in(src.first()), tag).wait();
      value = decode_header(header, src);
    }
    const auto& expected = stages_[size_t(to)].expected_input;
    if (expected)
      GLOBE_CHECK(shape_matches(value.shape(), *expected), "[pipeline] ", what, ": stage ", from, " sends ",
                  globe::describe(value), " but stage ", to, " expects its input to be ", shape_str(*expected),
                  " (-1: any extent)");
  }
  GLOBE_CHECK(receiving || sending, "[pipeline] internal: rank ", me, " is on neither end of ", what);
  const NdSbp target = layout_on(value.sbp(), src, dst);
  dist::WaitingFor waiting(what);
  Tensor moved = box(value, dst, target, tag);
  return receiving ? moved : Tensor();
}

StepResult Pipeline::step(const Tensor& input, const Tensor& target, const LossFn& loss_fn) {
  return run(input, target, loss_fn, true);
}

Tensor Pipeline::evaluate(const Tensor& input, const Tensor& target, const LossFn& loss_fn) {
  NoGradGuard no_grad;
  return run(input, target, loss_fn, false).loss;
}

// One step's run, in phases: place the batch and the tied values, run this rank's actions in the
// schedule's order, give tied slots' gradients back to their parameters, give every parameter a
// gradient on every rank (metadata where its stage is elsewhere), and box the loss.
struct Pipeline::StepRun {
  StepRun(Pipeline& pipe, const Tensor& input, const Tensor& target, const LossFn& loss_fn, bool train);

  // Tied values to their users' stages, as leaves whose gradients go back at the end.
  void share_ties();
  // Every action of this rank's stages, in the schedule's order; an error names the action.
  void run_actions();
  // Tied slots give their gradient back to the parameter (collective over both stages' ranks).
  void return_tie_gradients();
  // SPMD reads (an optimizer step, a norm, item()) see every parameter's gradient on every rank:
  // where a stage's parameters are not held, their gradient is metadata as they are.
  void give_absent_gradients_metadata();
  // The loss, summed inside the last stage (partial under data parallelism) and broadcast over it
  // so that every rank knows its layout.
  Tensor finish_loss(DType input_dtype);

  StepResult result;

 private:
  void forward(int s, int k);
  void backward(int s, int k, Phase phase);
  void weights(int s, int k);
  // The micro-batch's loss into the step's total: in the gradients' tree in deterministic mode.
  void add_loss(const Tensor& loss);
  // `t` from stage `from` to stage `to`: a transfer between rank groups, or a handoff within one.
  Tensor move(const Tensor& t, int from, int to, int mb, bool fwd, const Tensor& like);

  Pipeline& p_;
  const LossFn& loss_fn_;
  const bool train_;
  const int S_, m_;
  const int64_t rows_;
  Tensor in_, tgt_;
  std::map<std::pair<int, int>, Live> live_;         // (stage, micro-batch)
  std::map<std::pair<int, int>, Tensor> handoff_;    // same rank group: (to stage, mb) -> tensor
  std::vector<int> alive_;
  Tensor total_;
  TreeAccumulator losses_;  // deterministic mode's total (autograd/tree_accumulator.h)
};

Pipeline::StepRun::StepRun(Pipeline& pipe, const Tensor& input, const Tensor& target, const LossFn& loss_fn, bool train)
    : p_(pipe),
      loss_fn_(loss_fn),
      train_(train),
      S_(pipe.stages()),
      m_(pipe.schedule_.microbatches()),
      rows_(input.dim() > 0 ? input.shape()[0] : 0),
      alive_(size_t(pipe.stages()), 0) {
  p_.check_ties_unsharded();  // a module may have been sharded after tie()
  GLOBE_CHECK(input.dim() > 0 && target.dim() > 0 && target.shape()[0] == rows_, "[pipeline] step: input ",
              globe::describe(input), " and target ", globe::describe(target), " need the same number of rows (dim 0)");
  GLOBE_CHECK(rows_ >= m_, "[pipeline] step: ", m_, " micro-batches need at least ", m_, " rows; the batch has ", rows_);
  if (train_) check_microbatches("pipeline", rows_, m_);  // deterministic mode: the whole batch's bits, or an error
  // Inputs to the first stage, targets to the last: collective moves.
  in_ = onto(input, p_.placement_of(0));
  tgt_ = onto(target, p_.placement_of(S_ - 1));
  result.peak_alive.assign(size_t(S_), 0);
}

void Pipeline::StepRun::share_ties() {
  for (Tie& tie : p_.ties_) {
    NoGradGuard no_grad;
    const Placement& p = p_.placement_of(tie.slot_stage);
    Tensor v = box(tie.parameter->detach(), p, layout_on(tie.parameter->sbp(), tie.parameter->placement(), p)).detach();
    v.set_requires_grad(true);
    *tie.slot = v;
  }
}

Tensor Pipeline::StepRun::move(const Tensor& t, int from, int to, int mb, bool fwd, const Tensor& like) {
  if (p_.placement_of(from) != p_.placement_of(to)) return p_.transfer(t, from, to, mb, fwd, like);
  const auto key = std::make_pair(fwd ? to : -1 - to, mb);
  if (t.defined()) {
    handoff_[key] = t;
    return t;
  }
  Tensor got = handoff_.at(key);
  handoff_.erase(key);
  return got;
}

void Pipeline::StepRun::add_loss(const Tensor& loss) {
  NoGradGuard no_grad;
  if (deterministic()) losses_.add(loss.detach());
  else total_ = total_.defined() ? add(total_, loss.detach()) : loss.detach();
}

void Pipeline::StepRun::forward(int s, int k) {
  Live& l = live_[{s, k}];
  Tensor x;
  if (s == 0) {
    x = microbatch(in_, m_, k);
  } else {
    x = move(Tensor(), s - 1, s, k, true, Tensor()).detach();
    if (train_) x.set_requires_grad(true);
  }
  l.input = x;
  Tensor y = p_.forward(s, x);
  if (s == S_ - 1) {
    // The micro-batch's mean loss weighted by its share of the rows: the losses sum to the
    // batch's mean loss, and so do their gradients.
    const Range r = split_range(rows_, m_, k);
    l.output = mul(loss_fn_(y, microbatch(tgt_, m_, k)), double(r.length) / double(rows_));
    add_loss(l.output);
  } else {
    l.output = y;
    move(y, s, s + 1, k, true, Tensor());
  }
  if (!train_) live_.erase({s, k});
  else result.peak_alive[size_t(s)] = std::max(result.peak_alive[size_t(s)], ++alive_[size_t(s)]);
}

void Pipeline::StepRun::backward(int s, int k, Phase phase) {
  Live& l = live_.at({s, k});
  Tensor seed;
  if (s < S_ - 1) seed = move(Tensor(), s + 1, s, k, false, l.output);
  std::vector<Tensor> inputs;
  if (s > 0) inputs.push_back(l.input);
  if (phase == Phase::input_grad) {
    l.weights = run_input_backward(l.output, seed, inputs);
  } else {
    run_backward(l.output, seed);
  }
  if (s > 0) move(l.input.grad(), s, s - 1, k, false, Tensor());
  l.input = Tensor();
  l.output = Tensor();
  if (phase == Phase::backward) {
    live_.erase({s, k});
    --alive_[size_t(s)];
  }
}

void Pipeline::StepRun::weights(int s, int k) {
  live_.at({s, k}).weights.run();
  live_.erase({s, k});
  --alive_[size_t(s)];
}

void Pipeline::StepRun::run_actions() {
  const Schedule& schedule = p_.schedule_;
  // Each stage's last action that adds to its parameters' gradients: only there may their
  // data-parallel reductions start during backward (one reduction per step, not per micro-batch).
  std::vector<const Action*> last_grad(size_t(S_), nullptr);
  for (const Action& a : schedule.order())
    if (a.phase == Phase::backward || a.phase == Phase::weight_grad) last_grad[size_t(a.stage)] = &a;

  for (const Action& a : schedule.order()) {
    const int s = a.stage, k = a.microbatch;
    if (!p_.mine(s) || (!train_ && a.phase != Phase::forward)) continue;
    const auto ta = Clock::now();
    trace::Span span(trace::Kind::pipeline);  // "F3@s1": the schedule's own name for the action
    if (span) {
      span->name = to_string(a);
      span->args = {{"stage", std::to_string(s)}, {"microbatch", std::to_string(k)}, {"phase", phase_name(a.phase)}};
    }
    std::optional<NoSyncGuard> accumulate;
    if (&a != last_grad[size_t(s)]) accumulate.emplace();
    try {
      if (a.phase == Phase::forward) forward(s, k);
      else if (a.phase == Phase::backward || a.phase == Phase::input_grad) backward(s, k, a.phase);
      else weights(s, k);
    } catch (const std::exception& e) {
      std::ostringstream os;
      os << "[pipeline] " << phase_name(a.phase) << " of stage " << s << " on " << p_.placement_of(s).to_string()
         << ", micro-batch " << k << " (action " << schedule.position(a) << " of " << schedule.order().size()
         << " in the " << schedule.name() << " order): " << e.what();
      throw Error(os.str());
    }
    result.busy_seconds += seconds_since(ta);
  }
}

void Pipeline::StepRun::return_tie_gradients() {
  for (Tie& tie : p_.ties_) {
    NoGradGuard no_grad;
    const Placement& p = p_.placement_of(tie.slot_stage);
    Tensor g = p.contains(dist::world_rank()) ? tie.slot->grad() : Tensor();
    if (!g.defined()) g = phantom(tie.slot->shape(), tie.slot->dtype(), p, tie.slot->sbp());
    Tensor back = box(g, tie.parameter->placement(), tie.parameter->sbp());
    if (tie.parameter->placement().contains(dist::world_rank())) {
      Tensor mine_g = tie.parameter->grad();
      tie.parameter->set_grad(mine_g.defined() ? add(mine_g, back) : back);
    }
    tie.slot->set_grad(Tensor());
  }
}

void Pipeline::StepRun::give_absent_gradients_metadata() {
  for (int s = 0; s < S_; ++s) {
    if (p_.mine(s)) continue;
    for (nn::UnaryModule* mod : p_.stages_[size_t(s)].modules)
      for (const Tensor& prm : mod->parameters())
        if (prm.requires_grad() && prm.is_global() && !Tensor(prm.impl().grad).defined())
          prm.set_grad(phantom(prm.shape(), prm.dtype(), prm.placement(), prm.sbp()));
  }
}

Tensor Pipeline::StepRun::finish_loss(DType input_dtype) {
  const Placement& last = p_.placement_of(S_ - 1);
  // Ranks outside the last stage hold the loss as metadata; its dtype is the input's when that is
  // floating point (a model of float64 computes a float64 loss), else float32.
  const DType loss_dtype = is_floating(input_dtype) ? input_dtype : kFloat32;
  if (losses_.count() > 0) total_ = losses_.value();
  return total_.defined() ? box(total_, last, replicated(last.mesh_ndim()))
                          : phantom({}, loss_dtype, last, replicated(last.mesh_ndim()));
}

StepResult Pipeline::run(const Tensor& input, const Tensor& target, const LossFn& loss_fn, bool train) {
  const trace::Span span(trace::Kind::region, "pipeline step");  // the extent its bubble is a share of
  const auto t0 = Clock::now();
  StepRun step(*this, input, target, loss_fn, train);
  step.share_ties();
  waited_ = 0;
  step.run_actions();
  if (train) {
    step.return_tie_gradients();
    step.give_absent_gradients_metadata();
  }
  StepResult result = std::move(step.result);
  result.loss = step.finish_loss(input.dtype());
  result.busy_seconds -= waited_;
  result.step_seconds = seconds_since(t0);
  return result;
}

}  // namespace globe::pipeline
