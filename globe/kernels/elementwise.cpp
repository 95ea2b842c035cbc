#include "globe/kernels/elementwise.h"

namespace globe::kernels {

Shape broadcast_strides(const Tensor& t, const Shape& out) {
  const Shape& s = t.shape();
  const Shape& st = t.strides();
  Shape r(out.size(), 0);
  const size_t lead = out.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i) r[lead + i] = s[i] == 1 ? 0 : st[i];
  return r;
}

Tensor dense(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  copy_into(out, t);
  return out;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  GLOBE_CHECK(dst.shape() == src.shape(), "[copy] shape ", shape_str(src.shape()), " into ",
              shape_str(dst.shape()));
  visit_dtype(dst.dtype(), [&](auto dtag) {
    using D = decltype(dtag);
    visit_dtype(src.dtype(), [&](auto stag) {
      using S = decltype(stag);
      D* pd = static_cast<D*>(dst.storage()->data);
      const S* ps = static_cast<const S*>(src.storage()->data);
      for_each_run<2>(dst.shape(), {dst.strides(), src.strides()}, {dst.offset(), src.offset()},
                      [&](const StridedRun<2>& r) {
                        D* d = pd + r.offset[0];
                        const S* s = ps + r.offset[1];
                        for (int64_t i = 0; i < r.count; ++i)
                          d[i * r.stride[0]] = static_cast<D>(s[i * r.stride[1]]);
                      });
    });
  });
}

}  // namespace globe::kernels
