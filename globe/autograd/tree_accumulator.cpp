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

}  // namespace globe
