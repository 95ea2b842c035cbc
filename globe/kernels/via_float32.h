// The 16-bit floats (bfloat16, float16) through a device's float32 kernels: call_via_float32(f,
// args...), when any tensor argument is 16-bit, widens every such argument to float32 (exact),
// runs f, and rounds its floating results back to that dtype once. The dispatcher applies it to
// every entry a device's table does not mark as taking 16-bit floats itself (device_kernels.h).
// So every kernel of a table computes and accumulates a 16-bit op in float32 (matmul, sums,
// softmax, layer norm, Adam), the mixed-precision contract of docs/design.md §17, without a second
// copy of each kernel. Entries that write into their arguments (the optimizers' updates, random
// fills) get the written values back, rounded. Arguments of other dtypes (int64 indices, float32
// optimizer state) pass as they are; a call without 16-bit tensors goes straight to F.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "globe/core/tensor.h"

namespace globe::kernels {

namespace via_detail {

// A 16-bit tensor's float32 copy on its device (device_kernels.cpp), `t` itself otherwise.
Tensor widen(const Tensor& t);
// `t` (float32, from a widened call) rounded to `to`; any other tensor as it is.
Tensor narrow(const Tensor& t, DType to);
// dst (16-bit) = src (its widened, possibly written, copy), rounded.
void write_back(const Tensor& dst, const Tensor& src);

inline bool low(const Tensor& t) { return t.defined() && is_reduced_precision(t.dtype()); }
inline bool low(const Tensor* t) { return t != nullptr && low(*t); }
template <class A>
bool low(const A&) {
  return false;
}

// One argument on its way into the float32 kernel: a widened copy for a tensor, the value itself
// otherwise.
template <class A>
struct Arg {
  A value;
  A get() { return value; }
  void finish(DType) {}
};
template <>
struct Arg<const Tensor&> {
  const Tensor& original;
  Tensor wide = widen(original);
  const Tensor& get() { return wide; }
  void finish(DType) {
    if (low(original) && wide.impl_ptr() != original.impl_ptr()) write_back(original, wide);
  }
};
template <>
struct Arg<Tensor*> {
  Tensor* out;
  Tensor* get() { return out; }
  void finish(DType to) {
    if (out != nullptr) *out = narrow(*out, to);
  }
};

template <class X>
void finish_output(X& a, DType to) {
  if constexpr (std::is_same_v<X, Arg<Tensor*>>) a.finish(to);
}

template <class A>
DType first_low(DType found, const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    if (found == DType::float32 && low(a)) return a.dtype();
  }
  return found;
}

}  // namespace via_detail

// f(args...) with every 16-bit tensor argument widened to float32 and f's floating results
// rounded back once (what the dispatcher does for an entry without a 16-bit form:
// device_kernels.cpp); straight to f where no argument is 16-bit.
template <class R, class... A>
R call_via_float32(R (*f)(A...), std::type_identity_t<A>... args) {
  using namespace via_detail;
  if (!(low(args) || ...)) return f(std::forward<A>(args)...);
  DType to = DType::float32;
  ((to = first_low(to, args)), ...);
  // A tensor-valued output pointer (Tensor*) takes the rounded result after the call.
  std::tuple<Arg<A>...> wide{Arg<A>{std::forward<A>(args)}...};
  if constexpr (std::is_void_v<R>) {
    std::apply([&](auto&... a) { f(a.get()...); }, wide);
    std::apply([&](auto&... a) { (a.finish(to), ...); }, wide);  // in-place entries: written values go back
  } else {
    R r = std::apply([&](auto&... a) { return f(a.get()...); }, wide);
    if constexpr (std::is_same_v<R, Tensor>) {
      // After a value-returning entry only output pointers are finished: its tensors are inputs.
      std::apply([&](auto&... a) { (finish_output(a, to), ...); }, wide);
      return narrow(r, to);
    } else {
      return r;
    }
  }
}

}  // namespace globe::kernels
