// Local tensor creation. Global creation (globe/global/global_tensor.cpp) reuses the same fills.
#include <algorithm>
#include <cmath>

#include "globe/core/random.h"
#include "globe/ops/hooks.h"
#include "globe/kernels/device_kernels.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"

namespace globe {

namespace detail {
// Installed by the global layer: a tensor like `t` (shape, dtype, placement, SBP; partial_sum
// becomes broadcast unless value is 0) filled with `value`.
}  // namespace detail

Tensor zeros(const Shape& shape, DType dtype, const Device& device) { return Tensor::empty(shape, dtype, device); }

Tensor ones(const Shape& shape, DType dtype, const Device& device) { return full(shape, 1.0, dtype, device); }

Tensor full(const Shape& shape, double value, DType dtype, const Device& device) {
  Tensor t = Tensor::uninitialized(shape, dtype, device);
  kernels::kernels_on(device).fill(t, value);
  return t;
}

Tensor arange(int64_t n, DType dtype) { return arange(0.0, double(n), 1.0, dtype); }

Tensor arange(double start, double end, double step, DType dtype) {
  GLOBE_CHECK(step != 0.0, "[arange] step must be non-zero");
  const int64_t n = std::max<int64_t>(0, int64_t(std::ceil((end - start) / step)));
  Tensor t = Tensor::uninitialized({n}, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + double(i) * step);
  }, "arange");
  return t;
}

namespace {
template <class T>
Tensor from_values(const std::vector<T>& values, const Shape& shape) {
  GLOBE_CHECK(int64_t(values.size()) == numel_of(shape), "[from_vector] ", values.size(),
              " values do not fill shape ", shape_str(shape));
  Tensor t = Tensor::uninitialized(shape, dtype_of<T>());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}
}  // namespace

Tensor from_vector(const std::vector<float>& v, const Shape& s) { return from_values(v, s); }
Tensor from_vector(const std::vector<double>& v, const Shape& s) { return from_values(v, s); }
Tensor from_vector(const std::vector<int64_t>& v, const Shape& s) { return from_values(v, s); }

namespace {
// A local random tensor of `shape`, drawn on `device` by its kernel table from this rank's next
// local stream.
Tensor random_local(kernels::RandomKind kind, const Shape& shape, DType dtype, const Device& device,
                    const kernels::RandomParams& params) {
  Tensor t = Tensor::uninitialized(shape, dtype, device);
  kernels::kernels_on(device).random_fill(kind, t, next_local_random_stream(), shape, Shape(shape.size(), 0), params);
  return t;
}
}  // namespace

Tensor randn(const Shape& shape, DType dtype, const Device& device) {
  check_device_usable(device, "[randn]");
  return random_local(kernels::RandomKind::normal, shape, dtype, device, {});
}

Tensor rand(const Shape& shape, DType dtype, const Device& device) {
  check_device_usable(device, "[rand]");
  return random_local(kernels::RandomKind::uniform, shape, dtype, device, {.low = 0.0, .high = 1.0});
}

Tensor uniform(const Shape& shape, double low, double high, DType dtype) {
  return random_local(kernels::RandomKind::uniform, shape, dtype, kCPU, {.low = low, .high = high});
}

void check_randint_range(int64_t low, int64_t high) {
  GLOBE_CHECK(high > low, "[randint] high must be greater than low, got low ", low, ", high ", high);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape) {
  check_randint_range(low, high);
  return random_local(kernels::RandomKind::randint, shape, kInt64, kCPU, {.int_low = low, .int_high = high});
}

Tensor zeros_like(const Tensor& t) {
  if (t.is_global()) return detail::ops_hooks.full_like_global(t, 0.0);
  return zeros(t.shape(), t.dtype(), t.device());
}

Tensor ones_like(const Tensor& t) {
  if (t.is_global()) return detail::ops_hooks.full_like_global(t, 1.0);
  return ones(t.shape(), t.dtype(), t.device());
}

}  // namespace globe
