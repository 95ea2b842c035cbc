// The op interface and the single dispatch point every op passes through.
//
// An op is a small class (as in MLX's primitives): `infer` computes the output's metadata from the
// inputs' metadata and validates them, `compute` runs the local kernel, `vjp` expresses the
// backward pass with public ops (so gradients of global tensors go through the same global
// machinery). `dispatch` is where the global layer hooks in: it sees every op's inputs and their
// metadata before anything is computed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

struct TensorMeta {
  Shape shape;
  DType dtype;
};

struct ComputeArgs {
  TensorMeta out;  // metadata of the (local) output this compute must produce
};

class Op {
 public:
  virtual ~Op() = default;
  virtual std::string name() const = 0;
  // Output metadata; throws "[name] ..." naming shapes/dtypes when the inputs are invalid.
  virtual TensorMeta infer(const std::vector<TensorMeta>& inputs) const = 0;
  // The local kernel. `inputs` are local tensors (for a global op: this rank's shards).
  virtual Tensor compute(const std::vector<Tensor>& inputs, const ComputeArgs& args) const = 0;
  // Gradient w.r.t. each input i with needs[i]. `output` is the forward result (detached);
  // `grad` has the output's shape. Entries for inputs that need no grad may stay undefined.
  virtual std::vector<Tensor> vjp(const std::vector<Tensor>& inputs, const Tensor& output,
                                  const Tensor& grad, const std::vector<bool>& needs) const;
  // Whether the op has a gradient at all (argmax, comparisons and backward kernels do not).
  virtual bool differentiable() const { return true; }
};

using OpPtr = std::shared_ptr<const Op>;

// Runs `op` on `inputs`: validates via infer, computes, records the autograd node.
Tensor dispatch(const OpPtr& op, const std::vector<Tensor>& inputs);

template <class OpT, class... Args>
Tensor apply_op(const std::vector<Tensor>& inputs, Args&&... args) {
  return dispatch(std::make_shared<const OpT>(std::forward<Args>(args)...), inputs);
}

namespace detail {
// Installed by the global layer: runs an op whose inputs include a global tensor.
extern Tensor (*g_dispatch_global)(const OpPtr& op, const std::vector<Tensor>& inputs);
// Records the autograd node for `out` (shared by local and global dispatch).
void record_node(const OpPtr& op, const std::vector<Tensor>& inputs, Tensor& out);
// Metadata of each input.
std::vector<TensorMeta> metas_of(const std::vector<Tensor>& inputs);
}  // namespace detail

}  // namespace globe
