// The global layer's side of the hook tables (core/hooks.h, ops/hooks.h) and of the gradient's
// route (autograd/leaf_gradients.h, global/leaf_gradients.h): the functions it lends the layers
// below, and the one function that installs them all.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "globe/core/tensor.h"
#include "globe/ops/op.h"

namespace globe::detail {

// Fills every hook table, once. Called whenever a global tensor is made, so the tables are filled
// before any global tensor is used (a static initialiser could be dropped by the linker from a
// static library).
void install_hooks();

// global_tensor.cpp
std::string describe_layout(const Tensor& t);
Device shard_device(const Tensor& t);
Tensor whole_value(const Tensor& t);
Tensor full_like_global(const Tensor& t, double value);
Tensor fill_like_global(const Tensor& t, const std::function<void(const Tensor&, const Shape&)>& fill);
// to_global.cpp
Tensor grad_to_leaf_layout(const Tensor& grad, const Tensor& leaf);
bool may_stay_pending(const Tensor& grad, const Tensor& leaf);
void copy_global(const Tensor& dst, const Tensor& src);
// dispatch_global.cpp
Tensor dispatch_global(const OpPtr& op, const std::vector<Tensor>& inputs);

}  // namespace globe::detail
