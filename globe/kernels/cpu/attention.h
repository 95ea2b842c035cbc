// Fused causal self-attention on packed q, k, v (the qkv-packed form of FlashAttention), on BLAS.
#pragma once

#include "globe/core/tensor.h"

namespace globe::kernels {

// qkv [3, ..., T, D] (any strides; q = qkv[0], k = qkv[1], v = qkv[2]) -> y [..., T, D] with, per
// batch entry, y = P v, P = softmax over the keys up to each query of q k^T * scale. y is laid out
// in q's memory order (for q a view of [B, T, H, D] memory as [B, H, T, D], y is too, so its
// transpose back is contiguous). With `probs`, P [..., T, T] (contiguous) is returned there.
Tensor causal_attention(const Tensor& qkv, double scale, Tensor* probs = nullptr);

// Its backward: dqkv [3, ..., T, D], laid out in qkv's memory order, from gy [..., T, D]. `probs`:
// the forward's P for this qkv when defined, else P is recomputed.
Tensor causal_attention_backward(const Tensor& qkv, const Tensor& gy, double scale, const Tensor& probs);

}  // namespace globe::kernels
