#include "globe/autograd/leaf_gradients.h"

#include "globe/core/deterministic.h"
#include "globe/ops/ops.h"

namespace globe {

Tensor LeafGradients::sum_with(const Tensor& leaf, Tensor term, uint64_t pass) {
  GLOBE_CHECK(term.shape() == leaf.shape(), "[backward] gradient of shape ", shape_str(term.shape()),
              " does not match its leaf of shape ", shape_str(leaf.shape()));
  if (term.dtype() != leaf.dtype()) term = to_dtype(term, leaf.dtype());
  const Tensor grad(leaf.impl().grad);
  if (deterministic()) return state_of<LeafGradState>(leaf).terms.add(grad, term, pass);
  return grad.defined() ? add(grad, term) : contiguous(term);
}

void LeafGradients::keep(const Tensor& leaf, const Tensor& sum) {
  leaf.impl().grad = sum.impl_ptr();
  if (deterministic()) state_of<LeafGradState>(leaf).terms.kept(sum);
}

void LeafGradients::accumulate(const Tensor& leaf, const Tensor& term, uint64_t pass) {
  keep(leaf, sum_with(leaf, term, pass));
}

namespace {
LeafGradients g_local;  // every gradient already in its leaf's layout, nothing in flight
LeafGradients* g_installed = &g_local;
}  // namespace

LeafGradients& leaf_gradients() { return *g_installed; }
void set_leaf_gradients(LeafGradients* gradients) { g_installed = gradients != nullptr ? gradients : &g_local; }

}  // namespace globe
