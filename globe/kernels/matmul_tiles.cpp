// The CPU's fixed-shape GEMM tiles for deterministic mode (matmul.h, device_kernels.h).
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "globe/kernels/blas.h"
#include "globe/kernels/matmul.h"

namespace globe::kernels {

namespace {

// BLAS on one thread for this scope (its thread count is process-wide; Globe's kernels run on
// the one thread that called them, so nothing else multiplies meanwhile).
struct OneBlasThread {
  const int before = openblas_get_num_threads();
  OneBlasThread() {
    if (before != 1) openblas_set_num_threads(1);
  }
  ~OneBlasThread() {
    if (before != 1) openblas_set_num_threads(before);
  }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;
};

// Below this many multiply-adds in all, the tiles run on the calling thread alone.
constexpr int64_t kThreadedWork = int64_t(1) << 22;

template <class T>
void tiles(const Tensor& out, const Tensor& a, const Tensor& b, int64_t tile_n, int64_t tile_m) {
  const int64_t entries = out.shape()[0], n = out.shape()[1], m = out.shape()[2], k = a.shape()[2];
  const int64_t row_tiles = (n + tile_n - 1) / tile_n, col_tiles = (m + tile_m - 1) / tile_m;
  const int64_t count = entries * row_tiles * col_tiles;
  const T* pa = static_cast<const T*>(a.storage()->data) + a.offset();
  const T* pb = static_cast<const T*>(b.storage()->data) + b.offset();
  T* pc = static_cast<T*>(out.storage()->data) + out.offset();
  const int64_t lda = a.strides()[1], ldb = b.strides()[1];
  auto one = [&](int64_t t) {
    const int64_t e = t / (row_tiles * col_tiles), r = (t / col_tiles) % row_tiles * tile_n,
                  c = t % col_tiles * tile_m;
    gemm(CblasNoTrans, CblasNoTrans, std::min(tile_n, n - r), std::min(tile_m, m - c), k,
         pa + e * a.strides()[0] + r * lda, lda, pb + e * b.strides()[0] + c, ldb, pc + (e * n + r) * m + c, m);
  };
  const OneBlasThread single;
  const int64_t threads = std::min<int64_t>(single.before, count);
  if (threads <= 1 || entries * n * m * k < kThreadedWork) {
    for (int64_t t = 0; t < count; ++t) one(t);
    return;
  }
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t t; (t = next.fetch_add(1)) < count;) one(t);
  };
  std::vector<std::thread> helpers;
  for (int64_t i = 1; i < threads; ++i) helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
}

}  // namespace

void matmul_tiles(const Tensor& out, const Tensor& a, const Tensor& b, int64_t tile_n, int64_t tile_m) {
  switch (a.dtype()) {
    case DType::float32: return tiles<float>(out, a, b, tile_n, tile_m);
    case DType::float64: return tiles<double>(out, a, b, tile_n, tile_m);
    default: GLOBE_FAIL("[matmul] deterministic tiles take float32 or float64, got ", dtype_name(a.dtype()));
  }
}

}  // namespace globe::kernels
