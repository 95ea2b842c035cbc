#include "globe/kernels/cpu/random_fill.h"

#include "globe/core/strided.h"

namespace globe::kernels {

namespace {

// Calls set(local_linear_index, logical_linear_index) for every element of the block.
template <class Fn>
void for_each_logical(const Tensor& out, const Shape& logical, const Shape& start, Fn&& set) {
  GLOBE_CHECK(out.is_contiguous() && out.dim() == static_cast<int64_t>(logical.size()),
              "[random] block ", shape_str(out.shape()), " does not fit logical shape ",
              shape_str(logical));
  const Shape lstrides = contiguous_strides(logical);
  int64_t base = 0;
  for (size_t d = 0; d < logical.size(); ++d) base += start[d] * lstrides[d];
  int64_t local = 0;
  for_each_run<1>(out.shape(), {lstrides}, {base}, [&](const StridedRun<1>& r) {
    for (int64_t i = 0; i < r.count; ++i) set(local++, uint64_t(r.offset[0] + i * r.stride[0]));
  });
}

}  // namespace

void fill_normal(const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start) {
  visit_floating(out.dtype(), "randn", [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    for_each_logical(out, logical, start, [&](int64_t i, uint64_t g) { p[i] = T(normal_at(s, g)); });
  });
}

void fill_uniform(const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                  double low, double high) {
  visit_floating(out.dtype(), "rand", [&](auto tag) {
    using T = decltype(tag);
    T* p = out.data<T>();
    const double scale = high - low;
    for_each_logical(out, logical, start,
                     [&](int64_t i, uint64_t g) { p[i] = T(low + scale * uniform_at(s, g)); });
  });
}

void fill_randint(const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                  int64_t low, int64_t high) {
  int64_t* p = out.data<int64_t>();
  const uint64_t range = uint64_t(high - low);
  for_each_logical(out, logical, start, [&](int64_t i, uint64_t g) { p[i] = low + int64_t(bits_at(s, g) % range); });
}

void fill_dropout_mask(const Tensor& out, const RandomStream& s, const Shape& logical,
                       const Shape& start, double p) {
  visit_floating(out.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T keep = T(1.0 / (1.0 - p));
    for_each_logical(out, logical, start,
                     [&](int64_t i, uint64_t g) { dst[i] = uniform_at(s, g) >= p ? keep : T(0); });
  });
}

void random_fill(RandomKind kind, const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                 const RandomParams& params) {
  switch (kind) {
    case RandomKind::normal: return fill_normal(out, s, logical, start);
    case RandomKind::uniform: return fill_uniform(out, s, logical, start, params.low, params.high);
    case RandomKind::randint: return fill_randint(out, s, logical, start, params.int_low, params.int_high);
    case RandomKind::dropout_mask: return fill_dropout_mask(out, s, logical, start, params.p);
  }
  GLOBE_FAIL("[random] unknown kind ", int(kind));
}

}  // namespace globe::kernels
