// Globe's ops: free functions over Tensors, numpy broadcasting, each with a backward.
// Every function validates its inputs and throws "[op] ..." naming shapes and dtypes.
//
//   Tensor x = randn({4, 3});
//   Tensor y = relu(matmul(x, w) + b);   // shapes: [4,3] @ [3,5] + [5] -> [4,5]
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

// ---- creation (local tensors; the global overloads live in globe/global/) -----------------------
// On `device` (default the CPU): zeros({2, 3}, kFloat32, Device::parse("cuda:0")).
Tensor zeros(const Shape& shape, DType dtype = kFloat32, const Device& device = kCPU);
Tensor ones(const Shape& shape, DType dtype = kFloat32, const Device& device = kCPU);
Tensor full(const Shape& shape, double value, DType dtype = kFloat32, const Device& device = kCPU);
// 0, 1, ..., n-1 (or start, start+step, ... < end).
Tensor arange(int64_t n, DType dtype = kInt64);
Tensor arange(double start, double end, double step = 1.0, DType dtype = kFloat32);
// From row-major values; `values.size()` must equal the shape's element count.
Tensor from_vector(const std::vector<float>& values, const Shape& shape);
Tensor from_vector(const std::vector<double>& values, const Shape& shape);
Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape);
// Seeded, counter-based (see globe/core/random.h): standard normal / uniform [low, high). On a
// GPU: drawn there with the CPU's generator (core/philox.h), the same numbers as on the CPU
// (normals may differ, rarely, by one float ulp: docs/design.md §16).
Tensor randn(const Shape& shape, DType dtype = kFloat32, const Device& device = kCPU);
Tensor rand(const Shape& shape, DType dtype = kFloat32, const Device& device = kCPU);
Tensor uniform(const Shape& shape, double low, double high, DType dtype = kFloat32);
// int64 integers uniform in [low, high) (torch.randint).
Tensor randint(int64_t low, int64_t high, const Shape& shape);
// Checks randint's range, naming the op: high > low.
void check_randint_range(int64_t low, int64_t high);
// Same shape, dtype and (for a global tensor) placement and SBP; a partial_sum layout becomes
// broadcast for ones_like (ones summed over ranks would not be ones).
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);

// ---- elementwise, with broadcasting --------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor pow(const Tensor& a, double exponent);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor gelu(const Tensor& a);  // exact (erf) form, as torch's default
Tensor gelu_tanh(const Tensor& a);  // tanh approximation (GPT-2; torch's approximate='tanh')
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor to_dtype(const Tensor& a, DType dtype);
// The same values on `device` (a copy; `a` itself when it is there already); differentiable, the
// gradient going back to a's device. Local tensors: a global one changes device through its
// placement (to_global).
Tensor to(const Tensor& a, const Device& device);
// torch.clamp: each value limited to [min, max] (either bound may be left out); the gradient passes
// where min <= x <= max. abs: |x|, gradient sign(x) (0 at 0).
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max);
Tensor abs(const Tensor& a);
// Elementwise comparisons, torch's: a bool tensor of the broadcast shape (a tensor's operands
// promoted to one dtype as torch does: floating over int64 over bool; an integer tensor against a
// fractional scalar compares in float64). No gradient. Every layout but partial sums passes through.
// The operators are these too: `a == b` is eq(a, b), never identity (Tensor::same is).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double s);
Tensor ne(const Tensor& a, double s);
Tensor lt(const Tensor& a, double s);
Tensor le(const Tensor& a, double s);
Tensor gt(const Tensor& a, double s);
Tensor ge(const Tensor& a, double s);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double s);
Tensor operator!=(const Tensor& a, double s);
Tensor operator<(const Tensor& a, double s);
Tensor operator<=(const Tensor& a, double s);
Tensor operator>(const Tensor& a, double s);
Tensor operator>=(const Tensor& a, double s);
// torch.where: a where `cond` (bool, or int64 read as non-zero) holds, else b, all broadcast
// together; a and b of one dtype, either may be a scalar. The gradient goes to the chosen side.
// masked_fill: `value` where the mask (bool or int64, broadcast to a's shape) holds, a elsewhere;
// no gradient where filled. The logical ops read any dtype as non-zero = true and give bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor where(const Tensor& cond, double a, const Tensor& b);
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);
Tensor logical_not(const Tensor& a);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
// torch.equal: the same shape and every element equal. torch.allclose: |a - b| <= atol + rtol |b|
// everywhere (in float64; NaNs equal each other only with equal_nan). Whole-tensor answers, so
// collective for global tensors (as item()).
bool equal(const Tensor& a, const Tensor& b);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
// The identity whose gradient is scaled by `factor` (data parallelism over local losses: the
// average of the ranks' gradients, as DDP takes it). A copy, so the result is a tensor of its own.
Tensor scale_grad(const Tensor& a, double factor);
// A contiguous copy (or `a` itself when it is already contiguous).
Tensor contiguous(const Tensor& a);
// Writes src's values into dst in place (no autograd); shapes must match. For global tensors the
// value is re-laid out to dst's placement and SBP first; a local dst takes a global src's whole
// value (collective).
void copy_(const Tensor& dst, const Tensor& src);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double s);
Tensor operator+(double s, const Tensor& a);
Tensor operator-(const Tensor& a, double s);
Tensor operator-(double s, const Tensor& a);
Tensor operator*(const Tensor& a, double s);
Tensor operator*(double s, const Tensor& a);
Tensor operator/(const Tensor& a, double s);
Tensor operator/(double s, const Tensor& a);

// ---- matmul --------------------------------------------------------------------------------------
// [..., n, k] @ [..., k, m] -> [..., n, m]; batch dims broadcast; 2-D uses one BLAS gemm.
Tensor matmul(const Tensor& a, const Tensor& b);
// a @ b^T with b stored [..., m, k]: [..., n, k] x [..., m, k] -> [..., n, m], no transposing copy
// forward or backward (b's gradient comes out [..., m, k] too). A defined `bias` (broadcastable to
// [..., n, m]) is added in the GEMM's own output pass: one op, one pass over the output.
Tensor matmul_nt(const Tensor& a, const Tensor& b, const Tensor& bias = Tensor());
// x @ weight^T + bias, as torch.nn.functional.linear: x [..., in], weight [out, in], bias [out] or
// undefined -> [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- reductions ----------------------------------------------------------------------------------
// Over `dims` (all dims when empty).
Tensor sum(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor max(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Index of the largest element along `dim` (first on ties); int64, no gradient.
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim = false);
// Sums `a` down to `shape` (the inverse of broadcasting `shape` up to a.shape()).
Tensor sum_to(const Tensor& a, const Shape& shape);

// ---- shape and data movement ---------------------------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape);  // one extent may be -1
Tensor view(const Tensor& a, const Shape& shape);     // reshape that requires a contiguous input
Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unsqueeze(const Tensor& a, int64_t dim);
Tensor squeeze(const Tensor& a, int64_t dim);
Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);
Tensor expand(const Tensor& a, const Shape& shape);  // broadcast view
Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length);
// Elements [start, end) of `dim`, python-style negative indices allowed.
Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// out[i][j] = a[i][index[i][j]] along `dim` (torch.gather); index is int64 of out's shape.
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
// zeros(shape) with src added at index along dim (the adjoint of gather).
Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);

// ---- neural-network functions --------------------------------------------------------------------
Tensor softmax(const Tensor& a, int64_t dim);
// Attention's causal mask: x with x[..., i, j] = value wherever j > i (positions in the whole
// tensor, whatever the layout); the gradient is zero there.
Tensor causal_fill(const Tensor& x, double value);
// softmax(causal_fill(scores * scale, -inf), -1) as one op (Megatron's fused scale-mask-softmax):
// scores [..., T_q, T_k], row i attends to columns 0..i. One pass forward and one backward.
Tensor causal_softmax(const Tensor& scores, double scale = 1.0);
// Causal self-attention in one op on packed q, k, v (FlashAttention's qkv-packed form):
// qkv [3, ..., T, D] (q = qkv[0], k = qkv[1], v = qkv[2]; batch dims such as [B, H]) ->
// causal_softmax(q k^T, scale) v [..., T, D]. Its gradient is one [3, ..., T, D] tensor, so q, k
// and v cut from one projection get theirs without padding and summing three.
Tensor causal_attention(const Tensor& qkv, double scale);
// x [..., C], int64 index [...] -> x[..., index] (cross-entropy's target logit). On class-split x
// each rank contributes the entries it holds (a partial sum): the classes are never gathered.
Tensor pick(const Tensor& x, const Tensor& index);
Tensor log_softmax(const Tensor& a, int64_t dim);
// weight [V, D], indices int64 [...] -> [..., D].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Normalises over the trailing dims of `normalized_shape`; weight/bias optional (undefined).
Tensor layer_norm(const Tensor& a, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps = 1e-5);
// a / sqrt(mean(a^2 over the last dim) + eps) * weight: Llama's RMSNorm (torch's F.rms_norm over one
// dim). A 16-bit input is normalised in float32 and cast back before the weight multiplies it, as
// Hugging Face's LlamaRMSNorm does. One fused op forward and backward (layer_norm's, uncentred);
// `weight` may be undefined (no scale).
Tensor rms_norm(const Tensor& a, const Tensor& weight, double eps = 1e-6);
// Rotary position embedding (RoPE, as Llama applies it to queries and keys): x [..., T, D] with D
// even, cos and sin [T, D / 2] (the angles of each position, as flash-attn's apply_rotary_emb takes
// them); each row t of x as halves (a, b) becomes (a cos_t - b sin_t, b cos_t + a sin_t), which is
// Hugging Face's x * cat(cos, cos) + rotate_half(x) * cat(sin, sin). One fused op, its backward the
// inverse rotation; the result keeps x's memory order. x may be split along any dim but the last
// (along T with the tables split the same way).
Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin);
// a * sigmoid(a) (SiLU, Llama's MLP activation), one elementwise op forward and backward.
Tensor silu(const Tensor& a);
// silu(gate) * up (SwiGLU, Llama's MLP gate; broadcasting as mul): one pass forward, and one
// backward pass giving both gradients where gate and up have the output's shape.
Tensor swiglu(const Tensor& gate, const Tensor& up);
// Zeroes elements with probability p and scales the rest by 1/(1-p); identity when !training.
Tensor dropout(const Tensor& a, double p, bool training = true);
// How a loss reduces its per-element values (torch's reduction=): their mean (the default), their
// sum, or none (the per-element losses, shaped like the target).
enum class Reduction { mean, sum, none };
// "mean", "sum" or "none"; anything else is an error naming `op` and the three.
Reduction reduction_of(const std::string& name, const char* op);
// The mean squared error. Each loss has one name (no overloads), so it can be handed on as a
// function (`pipe.step(x, y, globe::cross_entropy)`); the *_with forms take the reduction.
Tensor mse_loss(const Tensor& input, const Tensor& target);
Tensor mse_loss_with(const Tensor& input, const Tensor& target, Reduction reduction);
// logits [..., C], target int64 [...] -> the mean negative log-likelihood of the targets. A target
// [..., 1] (OneFlow's [N, 1] labels) is taken as [...]; reduction none then keeps its shape.
Tensor cross_entropy(const Tensor& logits, const Tensor& target);
Tensor cross_entropy_with(const Tensor& logits, const Tensor& target, Reduction reduction);

}  // namespace globe
