// The CUDA table's entries (kernels/device_kernels.h describes each), for the CUDA table's own
// sources.
#pragma once

#include "globe/kernels/device_kernels.h"

namespace globe::kernels::cuda {

// elementwise.cu
Tensor unary(UnaryKind kind, const Tensor& a);
Tensor binary(BinaryKind kind, const Tensor& a, const Tensor& b, const Shape& out);
Tensor swiglu_backward(const Tensor& g, const Tensor& gate, const Tensor& up);
Tensor scalar(ScalarKind kind, const Tensor& a, double s);
void copy_into(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, double value);
Tensor clamp(const Tensor& a, double lo, double hi);
Tensor clamp_backward(const Tensor& g, const Tensor& x, double lo, double hi);
Tensor compare(CompareKind kind, const Tensor& a, const Tensor& b, const Shape& shape);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& shape);
// reduce.cu
Tensor sum_to_keepdim(const Tensor& a, const Shape& keep_shape);
Tensor leaf_tree_sum(const Tensor& x, int64_t leaf);
// index.cu
Tensor argmax_keepdim(const Tensor& a, int64_t dim);
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);
// matmul.cpp
Tensor matmul(const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& bias);
// fixed_order_gemm.cu
void fixed_order_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, int64_t leaf);
// nn.cu: the rows of the neural-network functions (kernels/cpu/nn.h describes each)
Tensor softmax(const Tensor& a, int64_t dim, bool log);
Tensor softmax_backward_last(const Tensor& y, const Tensor& g, double scale);
Tensor causal_softmax_last(const Tensor& x, double scale, int64_t row0);
Tensor normalize_last(const Tensor& x, double eps, bool centered, const Tensor& weight, const Tensor& bias);
Tensor normalize_last_backward(const Tensor& g, const Tensor& x, double eps, bool centered, const Tensor& weight);
Tensor normalize_last_weight_grad(const Tensor& g, const Tensor& x, double eps, bool centered);
Tensor rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, bool inverse);
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t first, int64_t vocab);
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t vocab);
// pick.cu
Tensor causal_fill(const Tensor& x, double value, int64_t r0, int64_t c0);
Tensor pick(const Tensor& x, const Tensor& index, int64_t c0, int64_t classes);
Tensor pick_backward(const Tensor& grad, const Tensor& index, const Shape& out_shape, int64_t c0);
// optim.cu
void sgd_update(const Tensor& p, const Tensor& g, const Tensor& momentum_buffer, const SgdStep& step);
void adam_update(const Tensor& p, const Tensor& g, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const AdamStep& step);
double sum_of_squares(const Tensor& a);
// random.cu (kernels/cpu/random_fill.h)
void random_fill(RandomKind kind, const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                 const RandomParams& params);
// attention.cu (kernels/cpu/attention.h)
Tensor causal_attention(const Tensor& qkv, double scale, Tensor* probs);
Tensor causal_attention_backward(const Tensor& qkv, const Tensor& gy, double scale, const Tensor& probs);

}  // namespace globe::kernels::cuda
