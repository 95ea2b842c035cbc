#include "globe/autograd/engine.h"

#include <cstdlib>
#include <deque>
#include <functional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "globe/autograd/leaf_gradients.h"
#include "globe/autograd/remade_inputs.h"
#include "globe/base/trace.h"
#include "globe/core/grad_mode.h"
#include "globe/core/node.h"
#include "globe/ops/ops.h"

namespace globe {

namespace detail {

std::vector<std::shared_ptr<Node>> backward_order(const std::shared_ptr<Node>& root,
                                                  const std::function<bool(const Tensor&)>& stop) {
  std::vector<std::shared_ptr<Node>> post;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs().size()) {
      const Tensor& in = node->inputs()[next++];
      const std::shared_ptr<Node>& child = in.grad_fn();
      if (child && !(stop && stop(in)) && seen.insert(child.get()).second) stack.push_back({child, 0});
    } else {
      post.push_back(node);
      stack.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
}

}  // namespace detail

namespace {

// A node's backward, inside a span of the module whose forward made it (traced runs only): what it
// communicates is counted under that module.
std::vector<Tensor> apply_in_module(Node& node, const Tensor& grad, const std::vector<bool>& needs) {
  if (node.module().empty() || !trace::on()) return node.apply(grad, needs);
  const trace::Span span(trace::Kind::module, node.module());
  return node.apply(grad, needs);
}

Tensor accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

// The backward pass now delivering gradients to leaves: each pass (a GraphTask, a weight pass, a
// leaf's own backward) takes the next number; a paused task takes its own again when it resumes.
uint64_t g_passes = 0, g_pass = 0;
uint64_t next_pass() { return ++g_passes; }

// Every term of a leaf's gradient goes to the installed route (autograd/leaf_gradients.h).
void accumulate_into_leaf(const Tensor& leaf, const Tensor& g) { leaf_gradients().accumulate(leaf, g, g_pass); }

// One backward pass, resumable: it stops before a node that must wait for another placement's
// ranks (Node::waits_for_peer) and continues from there when resumed.
class GraphTask {
 public:
  // kAll accumulates into every leaf; kSplit leaves out the leaves other than `inputs` (collected
  // for a later weight pass); kTargets returns the gradients of `inputs` and goes no further.
  enum class Mode { kAll, kSplit, kTargets };
  GraphTask(const Tensor& root, const Tensor& seed, std::vector<Tensor> inputs, Mode mode)
      : inputs_(std::move(inputs)), mode_(mode) {
    std::function<bool(const Tensor&)> stop;
    if (mode_ == Mode::kTargets) {
      stop = [this](const Tensor& t) { return input_index(t) < inputs_.size(); };
      results_.resize(inputs_.size());
    }
    order_ = detail::backward_order(root.grad_fn(), stop);
    pending_[order_.front().get()] = seed;
    if (mode_ == Mode::kAll) find_last_uses();
    if (RemadeInputs* r = remade_inputs()) remade_ = r->plan(order_, mode_ == Mode::kAll);
  }

  // Runs until done (true) or until a node that waits for a peer when `may_pause` (false).
  bool run(bool may_pause) {
    const trace::Span span(trace::Kind::region, "backward");
    g_pass = pass_;
    for (; next_ < order_.size(); announce_ready(next_++)) {
      const std::shared_ptr<Node>& node = order_[next_];
      auto it = pending_.find(node.get());
      if (it == pending_.end()) continue;  // reached only through inputs that need no grad
      if (may_pause && node->waits_for_peer()) return false;
      Tensor grad = std::move(it->second);
      pending_.erase(it);
      const auto& in = node->inputs();
      std::vector<bool> needs(in.size()), later(in.size());
      bool any_later = false;
      for (size_t i = 0; i < in.size(); ++i) {
        needs[i] = in[i].requires_grad();
        // Split mode: contributions to leaves other than the stage inputs wait for the weight pass.
        if (mode_ == Mode::kSplit && needs[i] && in[i].is_leaf() && !is_input(in[i])) {
          needs[i] = false;
          any_later = later[i] = true;
        }
      }
      if (any_later) deferred_.push_back({node, grad, later});
      if (remade_) remade_->before(next_);
      std::vector<Tensor> grads = apply_in_module(*node, grad, needs);
      for (size_t i = 0; i < in.size(); ++i) {
        if (!needs[i] || !grads[i].defined()) continue;
        if (mode_ == Mode::kTargets) {
          const size_t k = input_index(in[i]);
          GLOBE_CHECK(k < inputs_.size() || in[i].grad_fn(), "[backward] the gradient reached a tensor that requires ",
                      "grad (", describe(in[i]), ") but is not one of the targets, through ", node->name());
          if (k < inputs_.size()) {
            results_[k] = accumulate(results_[k], grads[i]);
            continue;
          }
        }
        if (Node* next = in[i].grad_fn().get()) {
          pending_[next] = accumulate(pending_[next], grads[i]);
        } else {
          accumulate_into_leaf(in[i], grads[i]);
        }
      }
      // Split mode frees as it goes: a node whose weight gradients wait keeps only what they need,
      // any other node nothing (this pass is its last).
      if (mode_ == Mode::kSplit) {
        if (any_later) node->keep_for_weight_pass();
        else node->release_saved();
      }
    }
    if (remade_) remade_->done();
    if (mode_ != Mode::kTargets) leaf_gradients().pass_done();
    return true;
  }

  std::vector<WeightGradWork::Item> take_deferred() { return std::move(deferred_); }
  std::vector<Tensor> take_results() { return std::move(results_); }

 private:
  size_t input_index(const Tensor& t) const {
    for (size_t k = 0; k < inputs_.size(); ++k)
      if (inputs_[k].same(t)) return k;
    return inputs_.size();
  }
  bool is_input(const Tensor& t) const { return input_index(t) < inputs_.size(); }

  // ready_[i]: the leaves whose gradient is complete once node i has run (its last user), in the
  // order of that node's inputs. The order must not depend on addresses: every rank hands the
  // gradients to the bucket reductions in it, and the ranks' buckets must agree.
  void find_last_uses() {
    std::unordered_map<TensorImpl*, size_t> last;
    for (size_t i = 0; i < order_.size(); ++i)
      for (const Tensor& in : order_[i]->inputs())
        if (in.requires_grad() && !in.grad_fn()) last[&in.impl()] = i;
    ready_.resize(order_.size());
    for (size_t i = 0; i < order_.size(); ++i)
      for (const Tensor& in : order_[i]->inputs()) {
        auto it = last.find(&in.impl());
        if (it == last.end() || it->second != i) continue;
        ready_[i].push_back(in);
        last.erase(it);  // a leaf used twice by one node is announced once
      }
  }
  // After node i ran (or was skipped): its last reads' bytes released, its leaves' gradients
  // announced, reductions in flight moved on.
  void announce_ready(size_t i) {
    if (remade_) remade_->after(i);
    leaf_gradients().ready(i < ready_.size() ? std::span<const Tensor>(ready_[i]) : std::span<const Tensor>());
  }

  std::vector<std::shared_ptr<Node>> order_;
  std::vector<std::vector<Tensor>> ready_;
  std::unique_ptr<RemadeInputs::Pass> remade_;  // null when nothing the pass reads is released
  size_t next_ = 0;
  std::unordered_map<Node*, Tensor> pending_;
  std::vector<Tensor> inputs_;
  Mode mode_;
  uint64_t pass_ = next_pass();
  std::vector<WeightGradWork::Item> deferred_;
  std::vector<Tensor> results_;  // kTargets: the gradient of each of inputs_
};

// Paused backward passes, oldest first. Never destroyed: it may be drained at exit.
std::deque<GraphTask>& paused() {
  static auto* q = new std::deque<GraphTask>();
  return *q;
}

Tensor checked_seed(const Tensor& root, const Tensor& grad_seed) {
  GLOBE_CHECK(root.requires_grad(), "[backward] the tensor does not require grad (no input of ",
              "its graph has requires_grad set, or it was computed under no_grad)");
  Tensor seed = grad_seed;
  if (!seed.defined()) {
    GLOBE_CHECK(root.numel() == 1, "[backward] can only be called on a scalar (one element) ",
                "without an explicit gradient; got shape ", shape_str(root.shape()));
    seed = ones_like(root);
  }
  GLOBE_CHECK(seed.shape() == root.shape(), "[backward] gradient shape ", shape_str(seed.shape()),
              " does not match the tensor's shape ", shape_str(root.shape()));
  return seed;
}

}  // namespace

namespace {
RemadeInputs* g_remade = nullptr;
}  // namespace

RemadeInputs* remade_inputs() { return g_remade; }
void set_remade_inputs(RemadeInputs* inputs) { g_remade = inputs; }

Tensor detail::read_grad(const Tensor& leaf) {
  finish_backward();
  return leaf_gradients().read(leaf);
}

bool detail::backward_paused() { return !paused().empty(); }

void run_backward(const Tensor& root, const Tensor& grad_seed) {
  NoGradGuard no_grad;
  Tensor seed = checked_seed(root, grad_seed);
  if (root.is_leaf()) {
    g_pass = next_pass();
    accumulate_into_leaf(root, seed);
    return;
  }
  // Behind a paused pass, a new one pauses at once where it would wait too: passes finish in the
  // order they were started.
  GraphTask task(root, seed, {}, GraphTask::Mode::kAll);
  if (paused().empty() && task.run(/*may_pause=*/true)) return;
  static const bool at_exit = [] { return std::atexit([] { finish_backward(); }) == 0; }();
  (void)at_exit;
  paused().push_back(std::move(task));
}

void finish_backward() {
  NoGradGuard no_grad;
  while (!paused().empty()) {
    paused().front().run(/*may_pause=*/false);
    paused().pop_front();
  }
}

WeightGradWork run_input_backward(const Tensor& root, const Tensor& grad_seed, const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  WeightGradWork work;
  Tensor seed = checked_seed(root, grad_seed);
  GraphTask task(root, seed, inputs, GraphTask::Mode::kSplit);
  task.run(/*may_pause=*/false);
  work.items_ = task.take_deferred();
  return work;
}

std::vector<Tensor> gradients(const Tensor& root, const Tensor& grad_seed, const std::vector<Tensor>& targets) {
  NoGradGuard no_grad;
  Tensor seed = checked_seed(root, grad_seed);
  for (size_t k = 0; k < targets.size(); ++k)
    if (targets[k].same(root)) {  // d root / d root
      std::vector<Tensor> out(targets.size());
      out[k] = seed;
      return out;
    }
  GraphTask task(root, seed, targets, GraphTask::Mode::kTargets);
  task.run(/*may_pause=*/false);
  return task.take_results();
}

void WeightGradWork::run() {
  NoGradGuard no_grad;
  const trace::Span span(trace::Kind::region, "backward (weights)");
  g_pass = next_pass();
  std::vector<Tensor> leaves;  // in the order their last contribution arrived
  for (Item& item : items_) {
    std::vector<Tensor> grads = apply_in_module(*item.node, item.grad, item.needs);
    for (size_t i = 0; i < item.needs.size(); ++i)
      if (item.needs[i] && grads[i].defined()) {
        const Tensor& leaf = item.node->inputs()[i];
        accumulate_into_leaf(leaf, grads[i]);
        std::erase_if(leaves, [&](const Tensor& t) { return t.same(leaf); });
        leaves.push_back(leaf);
      }
    leaf_gradients().ready({});
  }
  items_.clear();
  leaf_gradients().ready(leaves);
  leaf_gradients().pass_done();
}

void Tensor::backward() const { run_backward(*this); }

}  // namespace globe
