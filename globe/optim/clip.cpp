#include "globe/optim/clip.h"

#include <algorithm>
#include <cmath>

#include "globe/autograd/engine.h"
#include "globe/core/deterministic.h"
#include "globe/core/grad_mode.h"
#include "globe/dist/runtime.h"
#include "globe/global/boxing.h"
#include "globe/global/global_tensor.h"
#include "globe/global/grad_buckets.h"
#include "globe/global/op_history.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/ops.h"

namespace globe::optim {

namespace {

// Sum of squares of this rank's share of `g`: its shard's, divided by the number of ranks that
// hold the same shard (mesh axes where the layout is broadcast), so that the sum over the world
// counts every element once. Partial sums are reduced first (squares of summands do not add up).
double local_share_of_squares(Tensor g) {
  if (!g.is_global()) return kernels::kernels_for(g).sum_of_squares(g);
  if (g.sbp().any_partial()) g = box(g, g.placement(), partial_to_broadcast(g.sbp()));
  if (!g.placement().contains(dist::world_rank())) return 0.0;
  double replicas = 1;
  for (size_t a = 0; a < g.sbp().size(); ++a)
    if (g.sbp()[a].is_broadcast()) replicas *= double(g.placement().mesh_shape()[a]);
  const Tensor local = g.to_local();
  return local.numel() == 0 ? 0.0 : kernels::kernels_for(local).sum_of_squares(local) / replicas;
}

// `t` (host, double) summed over every rank of the world. Collective.
void sum_over_world(const Tensor& t) {
  std::vector<int> world(size_t(dist::world_size()));
  for (int r = 0; r < dist::world_size(); ++r) world[size_t(r)] = r;
  const RecordOp record(Placement::all(), "clip_grad_norm", dist::kMixSeed);
  dist::group(world).all_reduce_sum(t);
}

// Deterministic mode (docs/design.md §10): each gradient's squares summed over its whole value
// (gathered where it is split: the same kernel on the same values as in one process) by the first
// rank of its placement, the per-parameter sums brought to every rank (one non-zero term each, so
// exact in any order), and added in parameter order.
double deterministic_grad_norm(const std::vector<Tensor>& params) {
  std::vector<double> squares(params.size(), 0.0);
  bool any_global = false;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor g = params[i].grad();
    if (!g.defined()) continue;
    any_global |= g.is_global();
    if (g.is_global()) {
      g = box(g, g.placement(), replicated(g.placement().mesh_ndim()));
      if (dist::world_rank() != g.placement().first()) continue;
      g = g.to_local();
    }
    if (g.numel() > 0) squares[i] = kernels::kernels_for(g).sum_of_squares(g);
  }
  if (any_global && dist::world_size() > 1 && !squares.empty()) {
    const Tensor t = from_vector(squares, {int64_t(squares.size())});
    sum_over_world(t);
    squares.assign(t.data<double>(), t.data<double>() + squares.size());
  }
  double total = 0;
  for (double s : squares) total += s;
  return std::sqrt(total);
}

}  // namespace

double grad_norm(const std::vector<Tensor>& params) {
  NoGradGuard no_grad;
  finish_backward();               // paused backward passes may still add to the gradients
  resolve_pending_grads(params);  // data-parallel reductions in buckets, not one per parameter
  if (deterministic()) return deterministic_grad_norm(params);
  double squares = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (g.defined()) squares += local_share_of_squares(g);
  }
  bool any_global = false;
  for (const Tensor& p : params) any_global |= p.is_global();
  if (any_global && dist::world_size() > 1) {
    const Tensor t = from_vector(std::vector<double>{squares}, {1});
    sum_over_world(t);
    squares = t.data<double>()[0];
  }
  return std::sqrt(squares);
}

void scale_grads(const std::vector<Tensor>& params, double factor) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor local = g.is_global() ? g.to_local() : g;
    if (local.numel() > 0) copy_(local, mul(local, factor));
  }
}

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
  const double norm = grad_norm(params);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) scale_grads(params, coef);
  return norm;
}

double warmup_cosine_lr(int64_t step, int64_t warmup, int64_t decay_steps, double max_lr, double min_lr) {
  if (step < warmup) return max_lr * double(step + 1) / double(warmup + 1);
  if (step > decay_steps) return min_lr;
  const double ratio = double(step - warmup) / double(std::max<int64_t>(1, decay_steps - warmup));
  const double pi = std::acos(-1.0);
  return min_lr + 0.5 * (1.0 + std::cos(pi * ratio)) * (max_lr - min_lr);
}

}  // namespace globe::optim
