#include "globe/autograd/checkpoint.h"

#include <unordered_map>
#include <utility>

#include "globe/autograd/engine.h"
#include "globe/core/grad_mode.h"
#include "globe/core/node.h"
#include "globe/core/random.h"

namespace globe {

namespace {

// A recorded region: the ops of its nodes in the engine's order, and the tensors from outside it
// that they read and that require grad, ordered by their last use in the backward (as the engine
// announces finished leaves, so that bucketed reductions see the same order with and without
// recomputation).
struct Region {
  std::vector<std::string> ops;
  std::vector<Tensor> boundary;
};

Region explore(const Tensor& out, uint64_t first_serial) {
  auto outside = [first_serial](const Tensor& t) { return !t.grad_fn() || t.grad_fn()->serial() < first_serial; };
  const std::vector<std::shared_ptr<Node>> order = detail::backward_order(out.grad_fn(), outside);
  Region r;
  std::unordered_map<const TensorImpl*, size_t> last;
  for (size_t i = 0; i < order.size(); ++i) {
    r.ops.push_back(order[i]->name());
    for (const Tensor& in : order[i]->inputs())
      if (in.requires_grad() && outside(in)) last[&in.impl()] = i;
  }
  for (size_t i = 0; i < order.size(); ++i)
    for (const Tensor& in : order[i]->inputs()) {
      auto it = last.find(&in.impl());
      if (it == last.end() || it->second != i) continue;
      r.boundary.push_back(in);
      last.erase(it);
    }
  return r;
}

bool recorded_inside(const Tensor& out, uint64_t first_serial) {
  return out.defined() && out.requires_grad() && out.grad_fn() && out.grad_fn()->serial() >= first_serial;
}

class GradModeGuard {
 public:
  explicit GradModeGuard(bool on) : prev_(grad_enabled()) { set_grad_enabled(on); }
  ~GradModeGuard() { set_grad_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

thread_local int t_recomputing = 0;

// Runs fn with the generator at `rng`, then puts the generator back where it was.
Tensor replay(const RegionFn& fn, const std::vector<Tensor>& args, const GeneratorState& rng) {
  const GeneratorState now = generator_state();
  set_generator_state(rng);
  ++t_recomputing;
  try {
    Tensor out = fn(args);
    --t_recomputing;
    set_generator_state(now);
    return out;
  } catch (...) {
    --t_recomputing;
    set_generator_state(now);
    throw;
  }
}

// The node that stands for a whole region: its inputs are the region's boundary.
class CheckpointNode final : public Node {
 public:
  CheckpointNode(RegionFn fn, std::vector<Tensor> args, std::string label, GeneratorState rng, Region region,
                 const Tensor& output)
      : Node(std::move(region.boundary)),
        fn_(std::move(fn)),
        args_(std::move(args)),
        label_(std::move(label)),
        rng_(rng),
        ops_(std::move(region.ops)),
        out_shape_(output.shape()),
        out_dtype_(output.dtype()),
        out_desc_(describe(output)) {}

  std::string name() const override { return "checkpoint(" + label_ + ")"; }

  std::vector<Tensor> apply(const Tensor& grad, const std::vector<bool>& needs) override {
    std::vector<Tensor> grads = stash_.empty() ? recompute_gradients(grad) : std::exchange(stash_, {});
    // A split backward (zero-bubble schedules) asks for the inputs now and the weights later: one
    // recomputation serves both, the gradients not asked for wait here.
    bool keep = false;
    std::vector<Tensor> later(grads.size());
    for (size_t i = 0; i < grads.size(); ++i)
      if (!needs[i] && grads[i].defined()) {
        later[i] = std::move(grads[i]);
        keep = true;
      }
    if (keep) stash_ = std::move(later);
    return grads;
  }

 private:
  std::vector<Tensor> recompute_gradients(const Tensor& grad) {
    Tensor out;
    Region again;
    {
      GradModeGuard on(true);
      const uint64_t first = Node::next_serial().load();
      out = replay(fn_, args_, rng_);
      GLOBE_CHECK(recorded_inside(out, first), "[checkpoint] ", label_, ": the recomputed forward recorded no ",
                  "graph (the first run did); a region must compute the same way when it is run again");
      again = explore(out, first);
    }
    check_same(out, again);
    return gradients(out, grad, inputs());
  }

  void check_same(const Tensor& out, const Region& again) const {
    const std::string what = "[checkpoint] " + label_ + ": the recomputed forward differs from the first run, so its " +
                             "gradients would be wrong; ";
    GLOBE_CHECK(out.shape() == out_shape_ && out.dtype() == out_dtype_, what, "it returned ", describe(out),
                " instead of ", out_desc_);
    const size_t n = std::min(ops_.size(), again.ops.size());
    for (size_t i = 0; i < n; ++i)
      GLOBE_CHECK(ops_[i] == again.ops[i], what, "op ", i + 1, " counted back from the output was ", ops_[i], " and is now ", again.ops[i],
                  " (recompute only regions whose ops do not depend on host state or on how often they ran)");
    GLOBE_CHECK(ops_.size() == again.ops.size(), what, "it recorded ", ops_.size(), " ops and now ", again.ops.size());
    const std::vector<Tensor>& before = inputs();
    GLOBE_CHECK(before.size() == again.boundary.size(), what, "it read ", before.size(),
                " tensors that require grad from outside and now ", again.boundary.size());
    for (size_t i = 0; i < before.size(); ++i)
      GLOBE_CHECK(before[i].same(again.boundary[i]), what, "outside tensor ", i, " was ", describe(before[i]),
                  " and is now another tensor, ", describe(again.boundary[i]),
                  " (was a parameter replaced between forward and backward?)");
  }

  RegionFn fn_;
  std::vector<Tensor> args_;
  std::string label_;
  GeneratorState rng_;
  std::vector<std::string> ops_;
  Shape out_shape_;
  DType out_dtype_;
  std::string out_desc_;
  std::vector<Tensor> stash_;
};

}  // namespace

bool recomputing() { return t_recomputing > 0; }

Tensor checkpoint(const RegionFn& fn, const std::vector<Tensor>& inputs, const std::string& name) {
  if (!grad_enabled()) return fn(inputs);
  const GeneratorState rng = generator_state();
  const uint64_t first = Node::next_serial().load();
  Tensor out = fn(inputs);
  if (!recorded_inside(out, first)) return out;
  Region region = explore(out, first);
  Tensor result = out.detach();
  out = Tensor();  // drops the region's graph and every intermediate it kept
  result.impl().grad_fn = std::make_shared<CheckpointNode>(fn, inputs, name, rng, std::move(region), result);
  result.impl().requires_grad = true;
  return result;
}

}  // namespace globe
