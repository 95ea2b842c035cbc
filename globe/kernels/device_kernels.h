// The kernel table of each device: every kernel family that runs on more than the CPU has an entry
// here, keyed by its op kind (kinds.h), and ops call it through kernels_on(the inputs' device), so
// no op branches on the device (docs/design.md §16). Between an op and a device's table sits the
// dispatcher (device_kernels.cpp), which takes 16-bit floats through float32 where the table
// has no 16-bit form of the entry. The CPU table is in kernels/cpu/, the CUDA
// table in kernels/cuda/ (a CPU-only build links kernels/cuda/no_cuda.cpp, whose entries throw); only
// device_kernels.cpp includes either (scripts/check_layers.py enforces it).
//
// Every entry takes local tensors on the table's device and returns (or writes) tensors there.
#pragma once

#include <cstdint>

#include "globe/core/random.h"
#include "globe/core/tensor.h"
#include "globe/kernels/kinds.h"

namespace globe::kernels {

struct DeviceKernels {
  const char* device_name;
  // A new contiguous tensor f(a) of a's shape and dtype (a any strides; floating dtypes).
  Tensor (*unary)(UnaryKind kind, const Tensor& a);
  // A new contiguous tensor f(a, b) of shape `out`, a and b broadcast to it (same dtype; add, sub,
  // mul on int64 too).
  Tensor (*binary)(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& out);
  // A new contiguous tensor f(a, s) (floating dtypes).
  Tensor (*scalar)(ScalarKind kind, const Tensor& a, double s);
  // A new contiguous bool tensor of shape `out`: a <kind> b per element, a and b broadcast to it
  // (one dtype, bool included; NaN compares unequal to everything, as IEEE says).
  Tensor (*compare)(CompareKind kind, const Tensor& a, const Tensor& b, const Shape& out);
  // Per element, between a tensor's value and a bound (floating dtypes; lo / hi are -inf / inf
  // where absent): clamp (the min bound first, as torch) and its gradient (g where lo <= x <= hi,
  // else 0).
  Tensor (*clamp)(const Tensor& a, double lo, double hi);
  Tensor (*clamp_backward)(const Tensor& g, const Tensor& x, double lo, double hi);
  // A new contiguous tensor of shape `out`: a where `cond` (bool, or int64 read as non-zero) holds,
  // else b; all three broadcast to it, a and b of one dtype (bool included). masked_fill is where
  // with a one-element fill.
  Tensor (*where)(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& out);
  // dst = src elementwise, converting the dtype; same shape, any strides on both sides.
  void (*copy_into)(const Tensor& dst, const Tensor& src);
  // Every element of `dst` (any strides) set to `value` converted to its dtype.
  void (*fill)(const Tensor& dst, double value);
  // The sum of `a` over the dims where `keep_shape` (a's rank) is 1 and a is not: a new tensor of
  // keep_shape; float32 accumulates in float64.
  Tensor (*sum_to_keepdim)(const Tensor& a, const Shape& keep_shape);
  // Deterministic mode's sum over dim 1 of x [outer, length, inner] (contiguous, float32 or
  // float64, length whole leaves of `leaf`): a new [outer, 1, inner] whose every element is an
  // exactly specified sum (kernels/tree_sum.h): each leaf's terms added in index order from 0 in
  // x's dtype, the leaves' sums in tree_order.h's tree. Its bits depend on the values and `leaf`
  // alone: not on outer, inner (a rank's share of the outputs) or the device.
  Tensor (*leaf_tree_sum)(const Tensor& x, int64_t leaf);
  // Indexing (kernels/cpu/reduce.h describes each): argmax along dim (int64, dim kept as 1), torch's
  // gather, and its adjoint scatter_add into zeros of `shape`.
  Tensor (*argmax_keepdim)(const Tensor& a, int64_t dim);
  Tensor (*gather)(const Tensor& a, int64_t dim, const Tensor& index);
  Tensor (*scatter_add)(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);
  // a [..., n, k] @ b [..., k, m] (+ bias broadcastable to out_shape) -> a new [batch..., n, m]
  // (the batch dims already broadcast into out_shape); float32 and float64.
  Tensor (*matmul)(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias);
  // Deterministic mode's products (kernels/fixed_order_matmul.h): out [B, n, m] (contiguous) =
  // a [B, n, k] @ b [B, k, m] (float32 / float64; any strides, 0 for a broadcast entry), every
  // element an exactly specified sum: per leaf of `leaf` consecutive k (k a multiple of it), fused multiply-adds
  // from 0 in k order, the leaves' sums then added in tree_order.h's tree. So its bits depend on
  // its operands and `leaf` alone: not on n, m, B, strides, threads, vector width or device.
  // `bias` (undefined, or a contiguous [m] of out's dtype) is added to each finished sum: the
  // bits of the product followed by a separate add, in one pass.
  void (*fixed_order_gemm)(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf);

  // The neural-network rows (kernels/cpu/nn.h describes each; undefined tensors where optional).
  Tensor (*softmax)(const Tensor& a, int64_t dim, bool log);
  Tensor (*softmax_backward_last)(const Tensor& y, const Tensor& g, double scale);
  Tensor (*causal_softmax_last)(const Tensor& x, double scale, int64_t row0);
  Tensor (*causal_fill)(const Tensor& x, double value, int64_t r0, int64_t c0);
  Tensor (*normalize_last)(const Tensor& x, double eps, bool centered, const Tensor& weight, const Tensor& bias);
  Tensor (*normalize_last_backward)(const Tensor& g, const Tensor& x, double eps, bool centered, const Tensor& weight);
  Tensor (*normalize_last_weight_grad)(const Tensor& g, const Tensor& x, double eps, bool centered);
  Tensor (*rotary)(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse);
  Tensor (*embedding)(const Tensor& weight, const Tensor& indices, int64_t first, int64_t vocab);
  Tensor (*embedding_backward)(const Tensor& grad, const Tensor& indices, int64_t vocab);
  Tensor (*pick)(const Tensor& x, const Tensor& index, int64_t c0, int64_t classes);
  Tensor (*pick_backward)(const Tensor& grad, const Tensor& index, const Shape& out_shape, int64_t c0);
  // swiglu(gate, up)'s backward (kernels/cpu/table.h): g, gate, up of one shape -> [2, ...] packed
  // (d gate, d up).
  Tensor (*swiglu_backward)(const Tensor& g, const Tensor& gate, const Tensor& up);
  // Fused causal attention on packed qkv (kernels/cpu/attention.h).
  Tensor (*causal_attention)(const Tensor& qkv, double scale, Tensor* probs);
  Tensor (*causal_attention_backward)(const Tensor& qkv, const Tensor& gy, double scale, const Tensor& probs);

  // The optimizers' updates, in place on contiguous tensors of one dtype (kinds.h's SgdStep and
  // AdamStep carry the constants, already computed as the optimizer defines them).
  void (*sgd_update)(const Tensor& p, const Tensor& g, const Tensor& momentum_buffer, const SgdStep& step);
  void (*adam_update)(const Tensor& p, const Tensor& g, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                      const AdamStep& step);
  // The sum of the squares of a's elements (floating), accumulated in double, back on the host.
  double (*sum_of_squares)(const Tensor& a);

  // A random fill (kinds.h's RandomKind, kernels/cpu/random_fill.h): `out` (contiguous, floating;
  // int64 for randint) holds the block of a `logical`-shaped tensor starting at `start`, each
  // element drawn from stream s at its logical position, so every device and every layout draws
  // the same raw bits (core/philox.h).
  void (*random_fill)(RandomKind kind, const Tensor& out, const RandomStream& s, const Shape& logical,
                      const Shape& start, const RandomParams& params);

  // The entries that take bfloat16 and float16 themselves (entry_bit<&DeviceKernels::e>() each).
  // The dispatcher runs every other entry's 16-bit calls through its float32 form: the one 16-bit
  // rule (via_float32.h), for every device. copy_into and fill, which that rule uses to widen and
  // round, must take them.
  uint64_t native_16bit = 0;
};

// Every entry of DeviceKernels, in its order: X(entry) each, for tables made from another
// (the dispatcher's, kernels/host_memory_table.h).
#define GLOBE_KERNEL_ENTRIES(X) \
  X(unary) \
  X(binary) \
  X(scalar) \
  X(compare) \
  X(clamp) \
  X(clamp_backward) \
  X(where) \
  X(copy_into) \
  X(fill) \
  X(sum_to_keepdim) \
  X(leaf_tree_sum) \
  X(argmax_keepdim) \
  X(gather) \
  X(scatter_add) \
  X(matmul) \
  X(fixed_order_gemm) \
  X(softmax) \
  X(softmax_backward_last) \
  X(causal_softmax_last) \
  X(causal_fill) \
  X(normalize_last) \
  X(normalize_last_backward) \
  X(normalize_last_weight_grad) \
  X(rotary) \
  X(embedding) \
  X(embedding_backward) \
  X(pick) \
  X(pick_backward) \
  X(swiglu_backward) \
  X(causal_attention) \
  X(causal_attention_backward) \
  X(sgd_update) \
  X(adam_update) \
  X(sum_of_squares) \
  X(random_fill)

// An entry's bit in native_16bit: its place among the table's function pointers.
template <auto Entry>
uint64_t entry_bit() {
  static const uint64_t bit = [] {
    const DeviceKernels probe{};
    const auto at = reinterpret_cast<const char*>(&(probe.*Entry)) - reinterpret_cast<const char*>(&probe.unary);
    return uint64_t(1) << (size_t(at) / sizeof(void*));
  }();
  return bit;
}

// The table of a kind registered at run time (device/backend.h's register_device_kind); kept by
// reference. Built-in kinds' tables come from their kernels/<kind>/ folders instead.
void register_kernel_table(DeviceType type, const DeviceKernels& table);

// The dispatcher's table for `device` (checked usable): each entry finds the device from its
// tensor arguments, applies the 16-bit rule, and calls that device kind's table.
const DeviceKernels& kernels_on(const Device& device);
// The table of the device `t` lives on.
inline const DeviceKernels& kernels_for(const Tensor& t) { return kernels_on(t.device()); }

// dst = src on their device (the same for both): kernels_on(dst.device()).copy_into.
void device_copy(const Tensor& dst, const Tensor& src);
// `t` itself when contiguous, else a contiguous copy on its device.
Tensor device_dense(const Tensor& t);
// A contiguous copy of `t` in `dtype` on its device (values converted, 16-bit floats rounded).
Tensor device_convert(const Tensor& t, DType dtype);

// A copy of `src` on `device`, contiguous, same dtype (src itself when it is already there and
// contiguous). Crosses devices through device/memory.h's copy.
Tensor copy_to_device(const Tensor& src, const Device& device);

}  // namespace globe::kernels
