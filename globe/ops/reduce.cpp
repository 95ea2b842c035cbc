// Reductions (sum, mean, max, argmax) and indexing (gather, scatter_add).
#include <algorithm>
#include <numeric>

#include "globe/kernels/device_kernels.h"
#include "globe/kernels/tree_sum.h"
#include "globe/ops/op.h"
#include "globe/ops/ops.h"
#include "globe/ops/sbp_rules.h"

namespace globe {

namespace {

// Normalised, sorted, unique dims; all dims when `dims` is empty.
std::vector<int64_t> reduce_dims(const std::vector<int64_t>& dims, const Shape& shape, const char* op) {
  const int64_t nd = int64_t(shape.size());
  std::vector<int64_t> out;
  if (dims.empty()) {
    out.resize(nd);
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t d : dims) out.push_back(normalize_dim(d, shape, op));
  std::sort(out.begin(), out.end());
  GLOBE_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), "[", op, "] dim repeated in ",
              shape_str(dims));
  return out;
}

Shape keepdim_shape(const Shape& s, const std::vector<int64_t>& dims) {
  Shape k = s;
  for (int64_t d : dims) k[d] = 1;
  return k;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  if (keepdim) return keepdim_shape(s, dims);
  Shape r;
  for (size_t i = 0; i < s.size(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), int64_t(i))) r.push_back(s[i]);
  return r;
}

class Sum final : public Op {
 public:
  Sum(std::vector<int64_t> dims, bool keepdim) : dims_(std::move(dims)), keepdim_(keepdim) {}
  std::string name() const override { return "sum"; }
  // Summing over a split dim leaves partial sums; over other dims the split survives (shifted).
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    const auto dims = reduce_dims(dims_, in[0].shape, "sum");
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i < int64_t(in[0].shape.size()); ++i) {
      Sbp out = sbp::partial_sum;
      if (!std::binary_search(dims.begin(), dims.end(), i))
        out = sbp::split(keepdim_ ? i : i - int64_t(std::lower_bound(dims.begin(), dims.end(), i) - dims.begin()));
      s.push_back({{sbp::split(i)}, out});
    }
    sbp_rules::add_all_partial(s, 1);
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    return {reduced_shape(in[0].shape, reduce_dims(dims_, in[0].shape, "sum"), keepdim_),
            in[0].dtype};
  }
  bool tree_partials() const override { return true; }
  std::vector<PieceDims> piece_dims(const std::vector<TensorMeta>& in) const override {
    std::vector<PieceDims> runs;
    for (int64_t dim : reduce_dims(dims_, in[0].shape, "sum")) {
      if (!runs.empty() && runs.back().last + 1 == dim) runs.back().last = dim;
      else runs.push_back({0, dim, dim});
    }
    return runs;
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    const auto dims = reduce_dims(dims_, in[0].shape(), "sum");
    const Shape keep = keepdim_shape(in[0].shape(), dims);
    const auto& k = kernels::kernels_for(in[0]);
    Tensor r;
    if (deterministic() && !dims.empty() && dims.back() - dims.front() + 1 == int64_t(dims.size()) && numel_of(keep) > 0 &&
        in[0].numel() > 0) {
      // One run of consecutive dims (sum() hands this mode one at a time), summed as one dim of
      // their flattened index: one sum per leaf, added in the leaves' tree.
      r = kernels::leaf_sum(in[0], dims.front(), args.leaf_length("sum", "summed dim", 0, dims.front(), in[0], dims.back()),
                            dims.back());
    } else {
      r = k.sum_to_keepdim(in[0], keep);
    }
    return Tensor::view_of(r, args.out.shape, contiguous_strides(args.out.shape), 0);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    const auto dims = reduce_dims(dims_, in[0].shape(), "sum");
    return {expand(reshape(g, keepdim_shape(in[0].shape(), dims)), in[0].shape())};
  }

 private:
  std::vector<int64_t> dims_;
  bool keepdim_;
};

class Argmax final : public Op {
 public:
  Argmax(int64_t dim, bool keepdim) : dim_(dim), keepdim_(keepdim) {}  // dim normalised
  std::string name() const override { return "argmax"; }
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 1, int64_t(in[0].shape.size()), dim_, /*drops_except=*/!keepdim_);
    return s;
  }
  bool differentiable() const override { return false; }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    GLOBE_CHECK(in[0].shape[dim_] > 0, "[argmax] dim ", dim_, " of shape ", shape_str(in[0].shape), " is empty");
    return {reduced_shape(in[0].shape, {dim_}, keepdim_), kInt64};
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    Tensor r = kernels::kernels_for(in[0]).argmax_keepdim(in[0], dim_);
    return Tensor::view_of(r, args.out.shape, contiguous_strides(args.out.shape), 0);
  }

 private:
  int64_t dim_;
  bool keepdim_;
};

void check_index_shape(const char* op, const Shape& a, int64_t dim, const TensorMeta& index) {
  GLOBE_CHECK(index.dtype == kInt64, "[", op, "] index must be int64, got ", dtype_name(index.dtype));
  bool ok = index.shape.size() == a.size();
  for (size_t i = 0; ok && i < a.size(); ++i) ok = int64_t(i) == dim || index.shape[i] == a[i];
  GLOBE_CHECK(ok, "[", op, "] index of shape ", shape_str(index.shape), " does not fit ",
              shape_str(a), " along dim ", dim);
}

class ScatterAdd;

class Gather final : public Op {
 public:
  explicit Gather(int64_t dim) : dim_(dim) {}  // dim normalised
  std::string name() const override { return "gather"; }
  // Blocks of both along another dim line up; indices split along `dim` read a whole table.
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>& in, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    sbp_rules::add_same_split(s, 2, int64_t(in[0].shape.size()), dim_);
    s.push_back({{sbp::broadcast, sbp::split(dim_)}, sbp::split(dim_)});
    sbp_rules::add_partial_at(s, 2, 0);
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    check_index_shape("gather", in[0].shape, dim_, in[1]);
    return {in[1].shape, in[0].dtype};
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs&) const override {
    return kernels::kernels_for(in[0]).gather(in[0], dim_, in[1]);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {scatter_add(in[0].shape(), dim_, in[1], g), Tensor()};
  }

 private:
  int64_t dim_;
};

// inputs: index, src.
class ScatterAdd final : public Op {
 public:
  ScatterAdd(Shape shape, int64_t dim) : shape_(std::move(shape)), dim_(dim) {}  // dim normalised
  std::string name() const override { return "scatter_add"; }
  // Blocks along another dim land in the same block of the output; blocks along `dim` land
  // anywhere, so each rank's result is a summand.
  std::vector<SbpSignature> sbp_signatures(const std::vector<TensorMeta>&, const SbpContext&) const override {
    std::vector<SbpSignature> s;
    for (int64_t i = 0; i < int64_t(shape_.size()); ++i)
      s.push_back({{sbp::split(i), sbp::split(i)}, i == dim_ ? sbp::partial_sum : sbp::split(i)});
    sbp_rules::add_partial_at(s, 2, 1);
    return s;
  }
  TensorMeta infer(const std::vector<TensorMeta>& in) const override {
    check_index_shape("scatter_add", shape_, dim_, in[0]);
    GLOBE_CHECK(in[1].shape == in[0].shape, "[scatter_add] src ", shape_str(in[1].shape),
                " and index ", shape_str(in[0].shape), " shapes differ");
    return {shape_, in[1].dtype};
  }
  Tensor compute(const std::vector<Tensor>& in, const ComputeArgs& args) const override {
    return kernels::kernels_for(in[1]).scatter_add(args.out.shape, dim_, in[0], in[1]);
  }
  std::vector<Tensor> vjp(const std::vector<Tensor>& in, const Tensor&, const Tensor& g,
                          const std::vector<bool>&) const override {
    return {Tensor(), gather(g, dim_, in[0])};
  }

 private:
  Shape shape_;
  int64_t dim_;
};

}  // namespace

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  // A bool tensor counts its true elements in int64, and the narrow integers add in int64, as
  // torch's sum does.
  if (a.defined() && !is_floating(a.dtype()) && a.dtype() != kInt64) return sum(to_dtype(a, kInt64), dims, keepdim);
  const auto rd = a.defined() ? reduce_dims(dims, a.shape(), "sum") : dims;
  if (!deterministic() || rd.empty() || rd.back() - rd.front() + 1 == int64_t(rd.size()))
    return apply_op<Sum>({a}, dims, keepdim);
  // Deterministic mode: one run of consecutive dims at a time, the last first, each summed as one
  // dim of its flattened index in its leaves' tree.
  Tensor s = a;
  for (size_t end = rd.size(); end > 0;) {
    size_t begin = end - 1;
    while (begin > 0 && rd[begin - 1] + 1 == rd[begin]) --begin;
    s = apply_op<Sum>({s}, std::vector<int64_t>(rd.begin() + long(begin), rd.begin() + long(end)), true);
    end = begin;
  }
  return keepdim ? s : reshape(s, reduced_shape(a.shape(), rd, false));
}

Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  GLOBE_CHECK(!a.defined() || is_floating(a.dtype()), "[mean] expects a floating tensor, got ", describe(a),
              ": cast it first (to_dtype(t, kFloat32); Python t.float())");
  int64_t count = 1;
  for (int64_t d : reduce_dims(dims, a.shape(), "mean")) count *= a.shape()[d];
  GLOBE_CHECK(count > 0, "[mean] over an empty extent of shape ", shape_str(a.shape()));
  return mul(sum(a, dims, keepdim), 1.0 / double(count));
}

Tensor max(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  // Move reduced dims last, fold them into one, take the max there via argmax + gather (so the
  // gradient flows to the chosen element only, as in torch's max(dim)).
  const auto rd = reduce_dims(dims, a.shape(), "max");
  std::vector<int64_t> order;
  Shape folded;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (!std::binary_search(rd.begin(), rd.end(), d)) {
      order.push_back(d);
      folded.push_back(a.shape()[d]);
    }
  int64_t r = 1;
  for (int64_t d : rd) {
    order.push_back(d);
    r *= a.shape()[d];
  }
  GLOBE_CHECK(r > 0, "[max] over an empty extent of shape ", shape_str(a.shape()));
  folded.push_back(r);
  Tensor x = reshape(permute(a, order), folded);
  Tensor picked = gather(x, -1, argmax(x, -1, true));
  return reshape(picked, reduced_shape(a.shape(), rd, keepdim));
}

Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  return apply_op<Argmax>({a}, dim_of(a, dim, "argmax"), keepdim);
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  GLOBE_CHECK(shape.size() <= a.shape().size(), "[sum_to] cannot reduce ", shape_str(a.shape()),
              " to ", shape_str(shape));
  const size_t lead = a.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < a.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && a.shape()[i] != 1)) dims.push_back(int64_t(i));
  Tensor s = dims.empty() ? a : sum(a, dims, true);
  return reshape(s, shape);
}

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  return apply_op<Gather>({a, index}, dim_of(a, dim, "gather"));
}

Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  return apply_op<ScatterAdd>({index, src}, shape, normalize_dim(dim, shape, "scatter_add"));
}

}  // namespace globe
