// The op interface and the single dispatch point every op passes through.
//
// An op is a small class (as in MLX's primitives): `infer` computes the output's metadata from the
// inputs' metadata and validates them, `compute` runs the local kernel, `vjp` expresses the
// backward pass with public ops (so gradients of global tensors go through the same global
// machinery). `dispatch` is where the global layer hooks in: it sees every op's inputs and their
// metadata before anything is computed.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "globe/base/error.h"
#include "globe/core/deterministic.h"
#include "globe/core/tensor.h"
#include "globe/core/sbp.h"

namespace globe {

struct TensorMeta {
  Shape shape;
  DType dtype;
};

struct ComputeArgs {
  TensorMeta out;  // metadata of the (local) output this compute must produce
  // For a global op: each input's logical shape and the start of this rank's block in it (ops
  // such as a vocab-split embedding need to know which rows they hold). Empty for local ops.
  std::vector<Shape> in_global_shapes;
  std::vector<Shape> in_block_starts;
  // Deterministic mode only (core/deterministic.h): for a global op, each input's count of blocks
  // per dim (the product of the mesh axes splitting it; 1 where unsplit). Empty otherwise.
  std::vector<Shape> in_parts;

  // Deterministic mode: the leaf length of dims first..last of input `i` (whose shard is `local`),
  // summed as one dim of their flattened (row-major) index: from the run's global length and the
  // blocks of its first dim, the same on every rank (the dispatch splits no later dim of a run).
  int64_t leaf_length(const char* op, const char* what, size_t i, int64_t first, const Tensor& local,
                      int64_t last = -1) const {
    int64_t length = 1;
    for (int64_t d = first; d <= std::max(first, last); ++d) {
      GLOBE_CHECK(d == first || parts(i, d) == 1, "[", op, "] deterministic mode: dim ", d, " of a summed run of dims ",
                  first, "..", last, " is split");
      length *= global_length(i, d, local);
    }
    return globe::leaf_length(op, what, length, parts(i, first));
  }

 private:
  int64_t global_length(size_t i, int64_t dim, const Tensor& local) const {
    return in_global_shapes.empty() ? local.shape()[size_t(dim)] : in_global_shapes[i][size_t(dim)];
  }
  int64_t parts(size_t i, int64_t dim) const { return in_parts.empty() ? 1 : in_parts[i][size_t(dim)]; }
};

// One valid layout combination of an op on one mesh axis: inputs laid out as `inputs` give the
// output laid out as `output` by running the local kernel on each rank's shards (docs/design.md §5).
struct SbpSignature {
  std::vector<Sbp> inputs;
  Sbp output;
};

// What a signature rule may know about the mesh: the ranks along the axis being decided and in
// the whole placement (for rules that need even divisibility, such as reshape).
struct SbpContext {
  int64_t axis_size;
  int64_t placement_size;
};

// An op as the autograd graph keeps it: a name and a backward. Every node of the graph is
// recorded from one (record_node). Op adds the forward that dispatch runs; the global layer's
// layout changes (to_global, to_local) are GraphOps only, their forward being boxing.
class GraphOp {
 public:
  virtual ~GraphOp() = default;
  virtual std::string name() const = 0;
  // Gradient w.r.t. each input i with needs[i]. `output` is the forward result (detached);
  // `grad` has the output's shape. Entries for inputs that need no grad may stay undefined.
  virtual std::vector<Tensor> vjp(const std::vector<Tensor>& inputs, const Tensor& output,
                                  const Tensor& grad, const std::vector<bool>& needs) const;
  // Whether this rank, running the backward of this op, would wait for another placement's ranks
  // (see Node::waits_for_peer).
  virtual bool backward_waits_for_peer(const std::vector<Tensor>& inputs, const Tensor& output) const {
    (void)inputs;
    (void)output;
    return false;
  }
  // Whether the op has a gradient at all (argmax, comparisons and backward kernels do not).
  virtual bool differentiable() const { return true; }
  // Whether vjp() reads `output`. An op that says no lets a deferred weight-gradient pass
  // (run_input_backward) drop the forward output it would otherwise keep alive.
  virtual bool vjp_reads_output() const { return true; }
};

class Op : public GraphOp {
 public:
  // Output metadata; throws "[name] ..." naming shapes/dtypes when the inputs are invalid.
  virtual TensorMeta infer(const std::vector<TensorMeta>& inputs) const = 0;
  // The local kernel. `inputs` are local tensors on one device (for a global op: this rank's
  // shards), and the output goes on that device: compute reaches kernels through
  // kernels_on(device) (kernels/device_kernels.h), never branching on the device itself.
  virtual Tensor compute(const std::vector<Tensor>& inputs, const ComputeArgs& args) const = 0;
  // Valid layouts per mesh axis, in order of preference (ties in cost go to the earlier one).
  // All-broadcast is always valid and need not be listed. The default lists nothing more: such an
  // op runs global by gathering its inputs.
  virtual std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& inputs,
                                                   const SbpContext& ctx) const;
  // Whether compute, in deterministic mode, sums over a split dim leaf by leaf (so its partial
  // output on each rank is a whole subtree of the sum). The global dispatch lets only such ops
  // produce partial sums in that mode, and no op read them (docs/design.md §10).
  virtual bool tree_partials() const { return false; }
  // Deterministic mode: the input dims that compute sums leaf by leaf, as runs of consecutive
  // dims summed as one (their flattened index). A layout may split a run only along its first dim
  // and only into whole subtrees of its leaves (core/deterministic.h's splits_into_leaves), so the
  // global dispatch skips a signature that would split one otherwise (all-broadcast always
  // remains).
  struct PieceDims {
    size_t input;
    int64_t first, last;
  };
  virtual std::vector<PieceDims> piece_dims(const std::vector<TensorMeta>&) const { return {}; }
};

using GraphOpPtr = std::shared_ptr<const GraphOp>;
using OpPtr = std::shared_ptr<const Op>;

// `dim` of `t` normalised into [0, t.dim()) ("[op] dim ... out of range ..."): the free functions
// call it once and hand their op a clean dim. An undefined `t` is left to dispatch to report.
inline int64_t dim_of(const Tensor& t, int64_t dim, const char* op) {
  return t.defined() ? normalize_dim(dim, t.shape(), op) : dim;
}

// Runs `op` on `inputs`: validates via infer, computes, records the autograd node.
Tensor dispatch(const OpPtr& op, const std::vector<Tensor>& inputs);

template <class OpT, class... Args>
Tensor apply_op(const std::vector<Tensor>& inputs, Args&&... args) {
  return dispatch(std::make_shared<const OpT>(std::forward<Args>(args)...), inputs);
}

namespace detail {
// Records the autograd node for `out` (shared by local and global dispatch). The node's edges are
// `inputs`; its backward reads `values` instead where given (one per input, undefined: the input
// itself): the global dispatch passes an input it reduced (P -> B) as reduced, so the gradient
// is computed from the reduced value and needs no reduction of its own (docs/design.md §6).
void record_node(const GraphOpPtr& op, const std::vector<Tensor>& inputs, Tensor& out,
                 const std::vector<Tensor>& values = {});
// The same for one input, building no vector of inputs unless a node is recorded: to_local and
// to_global run it on every call.
void record_node(const GraphOpPtr& op, const Tensor& input, Tensor& out);
// Metadata of each input.
std::vector<TensorMeta> metas_of(const std::vector<Tensor>& inputs);
// Checks that local `inputs` share one device; throws "[op] ..." naming the devices otherwise
// (what torch says for a CUDA and a CPU tensor in one op).
void check_devices(const Op& op, const std::vector<Tensor>& inputs);
}  // namespace detail

}  // namespace globe
