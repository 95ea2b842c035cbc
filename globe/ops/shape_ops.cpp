// Shape ops: views (reshape, permute, expand, narrow) and copies (cat, contiguous).
#include <algorithm>
#include <numeric>

#include "globe/kernels/device_kernels.h"
#include "globe/kernels/strides.h"
#include "globe/ops/hooks.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

// S(i) -> S(i) for every dim but `except` (-1: none), and P -> P: ops that act along one dim only.
std::vector<SbpSignature> split_except(int64_t ndim, int64_t except) {
  std::vector<SbpSignature> s;
  sbp_rules::add_same_split(s, 1, ndim, except);
  sbp_rules::add_all_partial(s, 1);
  return s;
}

class Reshape final : public Op {
 public:
  explicit Reshape(Shape shape) : shape_(std::move(shape)) {}
  std::string name() const override { return "reshape"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    Shape out = shape_;
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == -1) {
        GLOBE_CHECK(infer_at < 0, "[reshape] only one extent may be -1, got ", shape_str(shape_));
        infer_at = int64_t(i);
      } else {
        GLOBE_CHECK(out[i] >= 0, "[reshape] invalid target shape ", shape_str(shape_));
        known *= out[i];
      }
    }
    const int64_t n = numel_of(in[0].shape);
    if (infer_at >= 0) {
      GLOBE_CHECK(known > 0 && n % known == 0, "[reshape] cannot reshape ", shape_str(in[0].shape),
                  " into ", shape_str(shape_));
      out[infer_at] = n / known;
    }
    GLOBE_CHECK(numel_of(out) == n, "[reshape] cannot reshape ", shape_str(in[0].shape), " (",
                n, " elements) into ", shape_str(shape_));
    return {out, in[0].dtype};
  }
  // A split survives when the split dim starts at the same flat offset in both shapes and its
  // block boundaries agree: the same extent, or (merging / splitting dims) an extent the ranks
  // divide evenly.
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext& ctx) const override {
    const Shape& a = in[0].shape;
    const Shape b = infer(in).shape;
    std::vector<SbpSignature> s;
    int64_t pa = 1;
    for (size_t i = 0; i < a.size(); ++i) {
      int64_t pb = 1;
      for (size_t j = 0; j < b.size() && pb <= pa; ++j) {
        // Extent-1 dims of the output (an unsqueeze) hold no split: match past them.
        if (pb == pa && b[j] == 1 && a[i] != 1) continue;
        if (pb == pa && a[i] > 0 && b[j] > 0) {
          const bool same = a[i] == b[j];
          const bool merge = b[j] > a[i] && b[j] % a[i] == 0 && a[i] % ctx.placement_size == 0;
          const bool split = a[i] > b[j] && a[i] % b[j] == 0 && b[j] % ctx.placement_size == 0;
          if (same || merge || split) s.push_back({{sbp::split(int64_t(i))}, sbp::split(int64_t(j))});
          break;
        }
        pb *= b[j];
      }
      pa *= a[i];
    }
    sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    Tensor a = kernels::device_dense(in[0]);
    return Tensor::view_of(a, args.out.shape, contiguous_strides(args.out.shape), a.offset());
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {reshape(g, in[0].shape())};
  }

 private:
  Shape shape_;
};

class Permute final : public Op {
 public:
  explicit Permute(std::vector<int64_t> dims) : dims_(std::move(dims)) {}  // dims normalised
  std::string name() const override { return "permute"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    const int64_t nd = int64_t(in[0].shape.size());
    GLOBE_CHECK(int64_t(dims_.size()) == nd, "[permute] ", dims_.size(), " dims given for a tensor of ",
                "shape ", shape_str(in[0].shape));
    std::vector<bool> seen(nd, false);
    Shape out(nd);
    for (int64_t i = 0; i < nd; ++i) {
      const int64_t d = dims_[i];
      GLOBE_CHECK(!seen[d], "[permute] dim ", d, " repeated in ", shape_str(dims_));
      seen[d] = true;
      out[i] = in[0].shape[d];
    }
    return {out, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    const int64_t nd = int64_t(in[0].shape.size());
    for (int64_t j = 0; j < nd; ++j) s.push_back({{sbp::split(dims_[j])}, sbp::split(j)});
    sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor& a = in[0];
    Shape strides(a.dim());
    for (int64_t i = 0; i < a.dim(); ++i) strides[i] = a.strides()[dims_[i]];
    return Tensor::view_of(a, args.out.shape, strides, a.offset());
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    std::vector<int64_t> inverse(dims_.size());
    for (size_t i = 0; i < dims_.size(); ++i) inverse[dims_[i]] = int64_t(i);
    return {permute(g, inverse)};
  }

 private:
  std::vector<int64_t> dims_;
};

class Expand final : public Op {
 public:
  explicit Expand(Shape shape) : shape_(std::move(shape)) {}
  std::string name() const override { return "expand"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    const Shape& s = in[0].shape;
    GLOBE_CHECK(s.size() <= shape_.size(), "[expand] cannot expand ", shape_str(s), " to ",
                shape_str(shape_));
    const size_t lead = shape_.size() - s.size();
    for (size_t i = 0; i < s.size(); ++i)
      GLOBE_CHECK(s[i] == shape_[lead + i] || s[i] == 1, "[expand] cannot expand ", shape_str(s),
                  " to ", shape_str(shape_));
    return {shape_, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    const Shape& a = in[0].shape;
    const int64_t lead = int64_t(shape_.size() - a.size());
    for (int64_t i = 0; i < int64_t(a.size()); ++i)
      if (a[i] == shape_[lead + i]) s.push_back({{sbp::split(i)}, sbp::split(lead + i)});
    sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    return Tensor::view_of(in[0], args.out.shape, kernels::broadcast_strides(in[0], args.out.shape),
                           in[0].offset());
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {sum_to(g, in[0].shape())};
  }

 private:
  Shape shape_;
};

// Writes a gradient slice back into zeros of the full extent (backward of narrow). Only the parts
// outside the slice are zeroed: the slice itself is written once, by the copy.
class NarrowBackward final : public Op {
 public:
  NarrowBackward(int64_t dim, int64_t start, int64_t full) : dim_(dim), start_(start), full_(full) {}
  std::string name() const override { return "narrow_backward"; }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    Shape s = in[0].shape;
    s[dim_] = full_;
    return {s, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return split_except(int64_t(in[0].shape.size()), dim_);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    Tensor out = Tensor::uninitialized(args.out.shape, args.out.dtype, in[0].device());
    const Tensor zero = Tensor::empty({1}, args.out.dtype, in[0].device());
    const int64_t length = in[0].shape()[dim_], step = out.strides()[dim_];
    // [begin, begin + extent) along dim_: the gradient for the window, zeros before and after it
    auto part = [&](int64_t begin, int64_t extent) {
      Shape shape = out.shape();
      shape[dim_] = extent;
      return Tensor::view_of(out, shape, out.strides(), begin * step);
    };
    auto zeros_of = [&](const Tensor& t) { return Tensor::view_of(zero, t.shape(), Shape(t.dim(), 0), 0); };
    const Tensor before = part(0, start_), after = part(start_ + length, full_ - start_ - length);
    if (before.numel() > 0) kernels::device_copy(before, zeros_of(before));
    if (after.numel() > 0) kernels::device_copy(after, zeros_of(after));
    kernels::device_copy(part(start_, length), in[0]);
    return out;
  }

 private:
  int64_t dim_, start_, full_;
};

class Narrow final : public Op {
 public:
  Narrow(int64_t dim, int64_t start, int64_t length) : dim_(dim), start_(start), length_(length) {}  // dim normalised
  std::string name() const override { return "narrow"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    Shape s = in[0].shape;
    const int64_t d = dim_;
    GLOBE_CHECK(start_ >= 0 && length_ >= 0 && start_ + length_ <= s[d], "[narrow] range [", start_,
                ", ", start_ + length_, ") out of bounds for dim ", d, " of shape ", shape_str(s));
    s[d] = length_;
    return {s, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return split_except(int64_t(in[0].shape.size()), dim_);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const Tensor& a = in[0];
    return Tensor::view_of(a, args.out.shape, a.strides(), a.offset() + start_ * a.strides()[dim_]);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {apply_op<NarrowBackward>({g}, dim_, start_, in[0].shape()[dim_])};
  }

 private:
  int64_t dim_, start_, length_;
};

class Cat final : public Op {
 public:
  explicit Cat(int64_t dim) : dim_(dim) {}  // dim normalised
  std::string name() const override { return "cat"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(!in.empty(), "[cat] needs at least one tensor");
    Shape out = in[0].shape;
    const int64_t d = dim_;
    out[d] = 0;
    for (const TensorMeta& m : in) {
      bool ok = m.shape.size() == out.size() && m.dtype == in[0].dtype;
      for (size_t i = 0; ok && i < out.size(); ++i) ok = int64_t(i) == d || m.shape[i] == out[i];
      GLOBE_CHECK(ok, "[cat] along dim ", d, ": ", dtype_name(m.dtype), shape_str(m.shape),
                  " does not match ", dtype_name(in[0].dtype), shape_str(in[0].shape));
      out[d] += m.shape[d];
    }
    return {out, in[0].dtype};
  }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, in.size(), int64_t(in[0].shape.size()), dim_);
    sbp_rules::add_all_partial(s, in.size());
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    Tensor out = Tensor::uninitialized(args.out.shape, args.out.dtype, in[0].device());
    const int64_t d = dim_;
    int64_t at = 0;
    for (const Tensor& t : in) {
      kernels::device_copy(Tensor::view_of(out, t.shape(), out.strides(), at * out.strides()[d]), t);
      at += t.shape()[d];
    }
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>& needs) const override {
    const int64_t d = dim_;
    std::vector<Tensor> grads(in.size());
    int64_t at = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (needs[i]) grads[i] = narrow(g, d, at, in[i].shape()[d]);
      at += in[i].shape()[d];
    }
    return grads;
  }

 private:
  int64_t dim_;
};

class Contiguous final : public Op {
 public:
  std::string name() const override { return "contiguous"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[0]; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    return split_except(int64_t(in[0].shape.size()), -1);
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    Tensor out = Tensor::uninitialized(in[0].shape(), in[0].dtype(), in[0].device());
    kernels::device_copy(out, in[0]);
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {g};
  }
};

// The identity with a scaled gradient (scale_grad in ops.h).
class ScaleGrad final : public Op {
 public:
  explicit ScaleGrad(double factor) : factor_(factor) {}
  std::string name() const override { return "scale_grad"; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override { return in[0]; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()));
    sbp_rules::add_all_partial(s, 1);
    return s;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    Tensor out = Tensor::uninitialized(in[0].shape(), in[0].dtype(), in[0].device());
    kernels::device_copy(out, in[0]);
    return out;
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>&, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {mul(g, factor_)};
  }

 private:
  double factor_;
};

}  // namespace

Tensor scale_grad(const Tensor& a, double factor) { return apply_op<ScaleGrad>({a}, factor); }

Tensor reshape(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  return apply_op<Reshape>({a}, shape);
}

Tensor view(const Tensor& a, const Shape& shape) {
  GLOBE_CHECK(a.is_global() || a.is_contiguous(), "[view] needs a contiguous tensor, got ",
              describe(a), "; use reshape()");
  return reshape(a, shape);
}

Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim) {
  const int64_t nd = std::max<int64_t>(a.dim(), 1);
  const int64_t s = normalize_dim(start_dim, nd, "flatten"), e = normalize_dim(end_dim, nd, "flatten");
  if (a.dim() == 0) return reshape(a, {1});
  Shape out(a.shape().begin(), a.shape().begin() + s);
  out.push_back(numel_of(Shape(a.shape().begin() + s, a.shape().begin() + e + 1)));
  out.insert(out.end(), a.shape().begin() + e + 1, a.shape().end());
  return reshape(a, out);
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  Shape s = a.shape();
  s.insert(s.begin() + normalize_dim(dim, a.dim() + 1, "unsqueeze"), 1);
  return reshape(a, s);
}

Tensor squeeze(const Tensor& a, int64_t dim) {
  Shape s = a.shape();
  const int64_t d = normalize_dim(dim, a.shape(), "squeeze");
  GLOBE_CHECK(s[d] == 1, "[squeeze] dim ", d, " of shape ", shape_str(s), " is not 1");
  s.erase(s.begin() + d);
  return reshape(a, s);
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) {
  std::vector<int64_t> clean = dims;
  if (a.defined() && int64_t(dims.size()) == a.dim()) {  // a wrong count is infer's to report
    for (int64_t& d : clean) d = normalize_dim(d, a.shape(), "permute");
    std::vector<int64_t> identity(clean.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (clean == identity) return a;
  }
  return apply_op<Permute>({a}, clean);
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  std::vector<int64_t> dims(a.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[normalize_dim(dim0, a.shape(), "transpose")], dims[normalize_dim(dim1, a.shape(), "transpose")]);
  return permute(a, dims);
}

Tensor expand(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  return apply_op<Expand>({a}, shape);
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  return apply_op<Narrow>({a}, dim_of(a, dim, "narrow"), start, length);
}

Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end) {
  const int64_t n = a.size(dim);
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t s = clamp(start), e = std::max(clamp(end), s);
  return narrow(a, dim, s, e - s);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return apply_op<Cat>(tensors, tensors.empty() ? dim : dim_of(tensors[0], dim, "cat"));
}

void copy_(const Tensor& dst, const Tensor& src) {
  GLOBE_CHECK(dst.shape() == src.shape(), "[copy_] cannot copy ", describe(src), " into ", describe(dst));
  if (dst.is_global() || src.is_global()) {
    detail::ops_hooks.copy_global(dst, src);
    return;
  }
  kernels::device_copy(dst, dst.device() == src.device() ? src : kernels::copy_to_device(src, dst.device()));
}

Tensor contiguous(const Tensor& a) {
  if (a.is_global() || a.is_contiguous()) return a;
  return apply_op<Contiguous>({a});
}

}  // namespace globe
