#include "globe/autograd/tree_accumulator.h"

#include "globe/ops/ops.h"

namespace globe {

void TreeAccumulator::add(const Tensor& term) {
  std::pair<int64_t, Tensor> carry{1, term};
  while (!subtrees_.empty() && subtrees_.back().first == carry.first) {
    carry = {2 * carry.first, globe::add(subtrees_.back().second, carry.second)};  // earlier terms on the left
    subtrees_.pop_back();
  }
  subtrees_.push_back(std::move(carry));
  ++count_;
}

Tensor TreeAccumulator::value() const {
  Tensor sum;
  for (auto it = subtrees_.rbegin(); it != subtrees_.rend(); ++it)
    sum = sum.defined() ? globe::add(it->second, sum) : it->second;
  return sum;
}

Tensor GradTerms::add(const Tensor& grad, const Tensor& term, uint64_t pass) {
  const bool new_pass = pass_ != pass;
  if (new_pass) pass_ = pass, next_use_ = 0;
  if (!grad.defined() || grad_.lock() != grad.impl_ptr()) {
    uses_.clear();
    if (grad.defined()) uses_.emplace_back().add(grad);
    next_use_ = new_pass ? 0 : uses_.size();
  }
  if (next_use_ == uses_.size()) uses_.emplace_back();
  TreeAccumulator& use = uses_[next_use_++];
  use.add(use.count() == 0 ? contiguous(term) : term);
  Tensor sum;
  for (const TreeAccumulator& u : uses_) sum = sum.defined() ? globe::add(sum, u.value()) : u.value();
  return sum;
}

}  // namespace globe
