// The hand-written limit for bench_mlp's step: the same MLP (Linear(H, H) - ReLU - Linear(H, H),
// MSE, SGD) as raw cblas_sgemm calls and plain loops over preallocated buffers, and with several
// ranks a blocking ring all-reduce of all gradients at once after the backward (reduce-scatter +
// all-gather over MPI_Sendrecv, the algorithm Globe's large all-reduce uses), no overlap. No
// framework can do less work for this step; bench_mlp --raw-ab N times it against Globe's.
// Two layouts of the activations, since OpenBLAS's speed depends on the transposes: rows ([batch,
// hidden], the GEMMs as written) and columns ([hidden, batch]: C^T = W x^T, the product Globe's
// Linear runs for few rows); the limit is the faster.
#pragma once

#include <cblas.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace bench {

class RawMlp {
 public:
  // Weights [out, in] as nn::Linear keeps them; `world` ranks each holding `batch` rows.
  RawMlp(int64_t hidden, int64_t batch, int world, float lr, bool columns)
      : h_(hidden), b_(batch), world_(world), lr_(lr), columns_(columns) {
    params_.assign(size_t(2 * (h_ * h_ + h_)), 0.0f);
    grads_.assign(params_.size(), 0.0f);
    for (size_t i = 0; i < params_.size(); ++i) params_[i] = float((i * 2654435761u) % 1000) * 2e-6f - 1e-3f;
    for (auto* v : {&hid_, &act_, &out_, &dout_, &dact_}) v->assign(size_t(b_ * h_), 0.0f);
    scratch_.assign(grads_.size() / size_t(world_) + 1, 0.0f);
  }

  // W1, b1, W2, b2 in one buffer, in that order (nn::Sequential's parameters() order): copy a
  // Globe model's values in to train the same numbers.
  float* params() { return params_.data(); }

  // One step on x, t ([batch, hidden] row-major); returns this rank's loss before the update.
  float step(const float* x, const float* t) {
    const int H = int(h_), B = int(b_);
    float *w1 = params_.data(), *b1 = w1 + h_ * h_, *w2 = b1 + h_, *b2 = w2 + h_ * h_;
    float *gw1 = grads_.data(), *gb1 = gw1 + h_ * h_, *gw2 = gb1 + h_, *gb2 = gw2 + h_ * h_;
    const float scale = 2.0f / float(b_ * world_ * h_);  // d(mean over the global batch)
    double loss = 0;
    if (!columns_) {
      // Forward: hid = x W1^T + b1, act = relu(hid), out = act W2^T + b2.
      linear(x, w1, b1, hid_.data());
      for (size_t i = 0; i < act_.size(); ++i) act_[i] = std::max(hid_[i], 0.0f);
      linear(act_.data(), w2, b2, out_.data());
      for (size_t i = 0; i < out_.size(); ++i) {
        const float d = out_[i] - t[i];
        loss += double(d) * d;
        dout_[i] = scale * d;
      }
      // Backward: gW2 = dout^T act, gb2 = column sums, dact = dout W2 masked by relu, gW1 = dact^T x.
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, H, B, 1.0f, dout_.data(), H, act_.data(), H, 0.0f, gw2, H);
      column_sums(dout_.data(), gb2);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, H, 1.0f, dout_.data(), H, w2, H, 0.0f, dact_.data(), H);
      for (size_t i = 0; i < dact_.size(); ++i)
        if (hid_[i] <= 0.0f) dact_[i] = 0.0f;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, H, B, 1.0f, dact_.data(), H, x, H, 0.0f, gw1, H);
      column_sums(dact_.data(), gb1);
    } else {
      // The same with every activation stored [H, B]: hid^T = W1 x^T + b1, out^T = W2 act^T + b2.
      for (int64_t c = 0; c < h_; ++c) std::fill(hid_.begin() + c * b_, hid_.begin() + (c + 1) * b_, b1[c]);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, H, B, H, 1.0f, w1, H, x, H, 1.0f, hid_.data(), B);
      for (size_t i = 0; i < act_.size(); ++i) act_[i] = std::max(hid_[i], 0.0f);
      for (int64_t c = 0; c < h_; ++c) std::fill(out_.begin() + c * b_, out_.begin() + (c + 1) * b_, b2[c]);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, B, H, 1.0f, w2, H, act_.data(), B, 1.0f, out_.data(), B);
      for (int64_t c = 0; c < h_; ++c)
        for (int64_t r = 0; r < b_; ++r) {
          const float d = out_[size_t(c * b_ + r)] - t[r * h_ + c];
          loss += double(d) * d;
          dout_[size_t(c * b_ + r)] = scale * d;
        }
      // gW2 = dout^T act = (dout^T)(act^T)^T, gb2 = row sums of dout^T, dact^T = W2^T dout^T masked,
      // gW1 = dact^T x.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, H, H, B, 1.0f, dout_.data(), B, act_.data(), B, 0.0f, gw2, H);
      row_sums(dout_.data(), gb2);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, B, H, 1.0f, w2, H, dout_.data(), B, 0.0f, dact_.data(), B);
      for (size_t i = 0; i < dact_.size(); ++i)
        if (hid_[i] <= 0.0f) dact_[i] = 0.0f;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, H, B, 1.0f, dact_.data(), B, x, H, 0.0f, gw1, H);
      row_sums(dact_.data(), gb1);
    }
    if (world_ > 1) ring_all_reduce(grads_.data(), int64_t(grads_.size()));
    for (size_t i = 0; i < params_.size(); ++i) params_[i] -= lr_ * grads_[i];
    return float(loss / double(out_.size()));
  }

 private:
  // y[B, H] = x[B, H] W^T + bias: the bias broadcast into y, then one GEMM adding onto it.
  void linear(const float* x, const float* w, const float* bias, float* y) const {
    for (int64_t r = 0; r < b_; ++r) std::copy(bias, bias + h_, y + r * h_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(b_), int(h_), int(h_), 1.0f, x, int(h_), w, int(h_), 1.0f,
                y, int(h_));
  }
  void column_sums(const float* g, float* out) const {  // g [B, H]
    std::fill(out, out + h_, 0.0f);
    for (int64_t r = 0; r < b_; ++r)
      for (int64_t c = 0; c < h_; ++c) out[c] += g[r * h_ + c];
  }
  void row_sums(const float* g, float* out) const {  // g [H, B]
    for (int64_t c = 0; c < h_; ++c) {
      float s = 0;
      for (int64_t r = 0; r < b_; ++r) s += g[c * b_ + r];
      out[c] = s;
    }
  }
  // In place over MPI_COMM_WORLD: p - 1 steps of reduce-scatter (each chunk sent once, added on
  // arrival), then p - 1 of all-gather.
  void ring_all_reduce(float* data, int64_t n) {
    const int p = world_;
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const int right = (me + 1) % p, left = (me + p - 1) % p;
    auto begin = [&](int c) { return n * c / p; };
    auto count = [&](int c) { return int(begin(c + 1) - begin(c)); };
    for (int s = 0; s < p - 1; ++s) {
      const int send = (me - s + p) % p, recv = (me - s - 1 + 2 * p) % p;
      MPI_Sendrecv(data + begin(send), count(send), MPI_FLOAT, right, 0, scratch_.data(), count(recv), MPI_FLOAT, left,
                   0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      float* dst = data + begin(recv);
      for (int i = 0; i < count(recv); ++i) dst[i] += scratch_[size_t(i)];
    }
    for (int s = 0; s < p - 1; ++s) {
      const int send = (me + 1 - s + p) % p, recv = (me - s + p) % p;
      MPI_Sendrecv(data + begin(send), count(send), MPI_FLOAT, right, 1, data + begin(recv), count(recv), MPI_FLOAT,
                   left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }

  int64_t h_, b_;
  int world_;
  float lr_;
  bool columns_;
  std::vector<float> params_, grads_, hid_, act_, out_, dout_, dact_, scratch_;
};

}  // namespace bench
