// Tensor: a cheap value handle over a shared TensorImpl. Copying a Tensor shares the data (like
// torch::Tensor or mlx::array). A local tensor owns a strided view of a Storage; a global tensor
// (globe/global/) has no storage of its own: it carries the logical shape plus a GlobalMeta that
// holds the placement, the SBP and this rank's shard as an ordinary local tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "globe/core/dtype.h"
#include "globe/base/error.h"
#include "globe/core/shape.h"
#include "globe/device/device.h"

namespace globe {

class Node;         // autograd graph node (globe/core/node.h)
struct LeafGradState;  // what the gradients' route keeps beside a leaf's gradient (globe/autograd/leaf_gradients.h)
struct GlobalMeta;  // placement + sbp + local shard (globe/global/global_tensor.h)
class Placement;    // globe/global/placement.h
class NdSbp;        // globe/core/sbp.h

// ---- Internals: the data behind a Tensor, for the library's layers (kernels, ops, global), ----
// ---- not for programs; they may change. Programs use Tensor's methods and the free ops.    ----

// A 64-byte aligned buffer on one device (globe/device/memory.h), zero-filled unless `zero` is
// false. `data` is a host pointer on the CPU and a device pointer on a GPU; it is freed with the
// storage unless `owner` is set.
struct Storage {
  explicit Storage(size_t nbytes, bool zero = true, Device device = kCPU);
  // Host memory Globe does not own (a numpy array's buffer): `owner` keeps it alive and is
  // released with the storage; not counted by memory_stats().
  Storage(void* data, size_t nbytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  std::shared_ptr<void> owner;  // set for memory owned elsewhere
  // `data` may be null while tensors refer to it: bytes released until a backward node reads them
  // (a fully sharded parameter's gathered copy, nn/remade_storage.h).
};

struct TensorImpl {
  TensorImpl() = default;
  TensorImpl(const TensorImpl&) = default;
  TensorImpl(TensorImpl&&) = default;
  TensorImpl& operator=(const TensorImpl&) = default;
  TensorImpl& operator=(TensorImpl&&) = default;
  // Releases the autograd graph behind this tensor iteratively (tensor.cpp): destroying a long
  // chain of ops must not take one nested destructor call per op.
  ~TensorImpl();

  Shape shape;  // logical shape (for a global tensor: the global shape)
  DType dtype = DType::float32;
  // Local data: element (i0, i1, ...) lives at storage + (offset + sum i_k * strides[k]) * itemsize.
  std::shared_ptr<Storage> storage;
  Shape strides;
  int64_t offset = 0;
  // Autograd.
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  // Opaque to core: the installed gradients' route's (a pending partial sum, deterministic mode's
  // terms), valid for the `grad` it describes; dropped with the leaf's identity (rebind, detach).
  std::shared_ptr<LeafGradState> grad_state;
  std::shared_ptr<Node> grad_fn;
  // Non-null for a global tensor.
  std::shared_ptr<const GlobalMeta> global;
};

// ---- The user-facing handle. Its methods are defined by concern: core ones in
// ---- globe/core/tensor.cpp, backward() in globe/autograd/engine.cpp, placement() and sbp() in
// ---- globe/global/global_tensor.cpp, to_local() and to_global() in globe/global/to_global.cpp.

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous local tensor filled with zeros, on `device`.
  static Tensor empty(const Shape& shape, DType dtype = kFloat32, const Device& device = kCPU);
  // Same, contents undefined: for kernels that write every element.
  static Tensor uninitialized(const Shape& shape, DType dtype = kFloat32, const Device& device = kCPU);
  // A contiguous local tensor over memory owned by `owner` (no copy): writes through either side
  // are seen by the other, as torch.from_numpy's.
  static Tensor from_external(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return numel_of(impl().shape); }
  DType dtype() const { return impl().dtype; }
  bool is_global() const { return impl().global != nullptr; }
  // Where the data lives: a local tensor's storage device; for a global tensor, this rank's shard's
  // (the placement's device type; cuda:LOCAL_RANK % GPUs for "cuda").
  Device device() const;

  // Local tensors only (inline: kernels and collectives ask on every call).
  const Shape& strides() const { return local_impl("strides").strides; }
  int64_t offset() const { return local_impl("offset").offset; }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return local_impl("storage").storage; }
  // Host pointers to element 0: typed (checks the dtype) and untyped. Both refuse a tensor on a
  // GPU, naming it: host loops must never read device memory.
  template <class T>
  T* data() const;
  void* raw_data() const;
  // Pointer to element 0 on whatever device holds it, for that device's kernels (kernels/cuda).
  void* device_data() const;

  // Reading values. On a global tensor these are collective (every rank must call).
  // item() of one element, converted to T: `loss.item()` is a double whatever the dtype (as a
  // Python float is); `t.item<int64_t>()` when an integer is wanted.
  template <class T = double>
  T item() const;
  template <class T>
  std::vector<T> to_vector() const;
  std::string to_string() const;

  // Autograd.
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& set_requires_grad(bool on = true);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  // The accumulated gradient, in this tensor's layout. Reading it finishes paused backward passes
  // and deferred reductions first (collective for a global tensor: every rank reads it).
  Tensor grad() const;
  void set_grad(const Tensor& g) const { impl().grad = g.impl_; }
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  // Reverse-mode from a scalar tensor (globe/autograd/engine.cpp).
  void backward() const;
  // Same values, cut from the graph.
  Tensor detach() const;

  // Global tensors.
  // This rank's shard (a local tensor; empty when this rank is outside the placement);
  // differentiable. On a local tensor: the tensor itself.
  Tensor to_local() const;
  const Placement& placement() const;
  const NdSbp& sbp() const;
  // Local -> global (docs/design.md §3) or global -> global boxing (docs/design.md §4); differentiable.
  Tensor to_global(const Placement& placement, const NdSbp& sbp) const;
  // With the gradient's layout chosen (OneFlow's grad_sbp): the backward boxes the gradient to
  // `grad_sbp` on this tensor's placement, e.g. broadcast where it would stay a partial sum —
  // Megatron's all-reduce at a tensor-parallel region's input. Same layout: a no-op forward.
  Tensor to_global(const Placement& placement, const NdSbp& sbp, const NdSbp& grad_sbp) const;
  Tensor to_global(const Placement& placement) const;  // keeps the SBP
  Tensor to_global(const NdSbp& sbp) const;            // keeps the placement

  bool same(const Tensor& other) const { return impl_ == other.impl_; }  // the same handle

  // ---- Internals, for the library's layers (see TensorImpl): not the user API. ----------------
  // A host tensor with this local tensor's values, shape and strides: the tensor itself on the
  // CPU, else a copy of its storage. For reading values on the host (to_vector, printing, saving).
  Tensor host_view() const;
  // A view of `base`'s storage with another shape/strides/offset (no autograd link).
  static Tensor view_of(const Tensor& base, Shape shape, Shape strides, int64_t offset);
  // A view of `base` narrowed along dim d to [start, start + length) (no autograd link).
  static Tensor narrow_view(const Tensor& base, int64_t d, int64_t start, int64_t length);
  TensorImpl& impl() const {  // inline: every accessor goes through it
    if (impl_ == nullptr) [[unlikely]] undefined_use();
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // Parameter identity: this handle's TensorImpl takes `src`'s data and layout (shape, dtype,
  // storage, global meta) and drops its own gradient and graph, keeping requires_grad. Every
  // handle that shares it (an optimizer's, a tied slot's) sees the new value: what
  // Module::to_global, distribute and to(dtype) do to a parameter.
  void rebind(const Tensor& src) const;

 private:
  [[noreturn]] static void undefined_use();
  // impl() of a local tensor; a global one throws "[what] a global tensor has no what; ...".
  TensorImpl& local_impl(const char* what) const {
    TensorImpl& i = impl();
    if (i.global != nullptr) [[unlikely]] global_has_no(what);
    return i;
  }
  [[noreturn]] static void global_has_no(const char* what);
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Short description for error messages: "float32[2, 3]" (+ layout for a global tensor).
std::string describe(const Tensor& t);

}  // namespace globe
