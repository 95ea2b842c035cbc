#include "globe/autograd/engine.h"

#include <unordered_map>
#include <unordered_set>

#include "globe/autograd/grad_mode.h"
#include "globe/autograd/node.h"
#include "globe/ops/ops.h"

namespace globe {

namespace detail {
Tensor (*g_grad_to_leaf_layout)(const Tensor& grad, const Tensor& leaf) = nullptr;
}

namespace {

// Nodes reachable from `root`, ordered so that every node comes before the nodes it feeds from
// (reverse topological order of the forward computation). Iterative: deep graphs don't overflow.
std::vector<Node*> order_nodes(Node* root) {
  std::vector<Node*> post;
  std::unordered_set<Node*> seen{root};
  std::vector<std::pair<Node*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs().size()) {
      Node* child = node->inputs()[next++].grad_fn().get();
      if (child && seen.insert(child).second) stack.push_back({child, 0});
    } else {
      post.push_back(node);
      stack.pop_back();
    }
  }
  return {post.rbegin(), post.rend()};
}

Tensor accumulate(const Tensor& sum, const Tensor& g) { return sum.defined() ? add(sum, g) : g; }

void accumulate_into_leaf(const Tensor& leaf, Tensor g) {
  if (detail::g_grad_to_leaf_layout) g = detail::g_grad_to_leaf_layout(g, leaf);
  GLOBE_CHECK(g.shape() == leaf.shape(), "[backward] gradient of shape ", shape_str(g.shape()),
              " does not match its leaf of shape ", shape_str(leaf.shape()));
  if (g.dtype() != leaf.dtype()) g = to_dtype(g, leaf.dtype());
  Tensor sum = leaf.grad().defined() ? add(leaf.grad(), g) : contiguous(g);
  // The sum of two gradients in the leaf's layout may come out in another one (add picks its
  // cheapest signature): put it back.
  if (detail::g_grad_to_leaf_layout) sum = detail::g_grad_to_leaf_layout(sum, leaf);
  leaf.set_grad(sum);
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_seed) {
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
  NoGradGuard no_grad;
  if (root.is_leaf()) {
    accumulate_into_leaf(root, seed);
    return;
  }
  std::unordered_map<Node*, Tensor> pending;
  pending[root.grad_fn().get()] = seed;
  for (Node* node : order_nodes(root.grad_fn().get())) {
    auto it = pending.find(node);
    if (it == pending.end()) continue;  // reached only through inputs that need no grad
    Tensor grad = std::move(it->second);
    pending.erase(it);
    const auto& inputs = node->inputs();
    std::vector<bool> needs(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) needs[i] = inputs[i].requires_grad();
    std::vector<Tensor> grads = node->apply(grad, needs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!needs[i] || !grads[i].defined()) continue;
      if (Node* next = inputs[i].grad_fn().get()) {
        pending[next] = accumulate(pending[next], grads[i]);
      } else {
        accumulate_into_leaf(inputs[i], grads[i]);
      }
    }
  }
}

void Tensor::backward() const { run_backward(*this); }

}  // namespace globe
