// The CUDA table's random fills (kernels/cpu/random_fill.h describes each): one thread per element of
// the block, which maps its local index to its logical index in the whole tensor (the block of
// `logical` starting at `start`, out contiguous) and draws it with core/philox.h, the functions the
// CPU calls. uniform, randint and dropout masks equal the CPU's bit for bit (integer Philox, exact
// float conversions, and uniform's low + scale * u rounded as the CPU rounds it, never an FMA);
// normals go through log and cos in double, where CUDA's and glibc's may differ by an ulp of double,
// so a normal can differ from the CPU's, rarely, by one float ulp (docs/design.md §16).
#include <cuda_runtime.h>

#include <type_traits>

#include "globe/core/philox.h"
#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/cuda/strided.cuh"

namespace globe::kernels::cuda {

namespace {

// What a thread needs besides its index: the stream and the kind's constants, computed on the host
// as the CPU's kernels compute them.
struct RandomArgs {
  RandomKind kind;
  uint64_t seed, call;
  double low, scale;  // uniform: low + scale * u
  double p;           // dropout_mask: 0 where u < p
  int64_t int_low;    // randint: int_low + bits % range
  uint64_t range;
};

template <class T>
__global__ void random_kernel(int64_t n, Indexer<1> ix, RandomArgs a, T keep, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int64_t logical;
  ix.offsets_of(i, &logical);
  const philox::Words b = philox::block_at(a.seed, a.call, uint64_t(logical));
  if constexpr (std::is_integral_v<T>) {
    out[i] = a.int_low + int64_t(philox::bits_of(b) % a.range);
  } else {
    switch (a.kind) {
      case RandomKind::normal: out[i] = T(philox::normal_of(b)); break;
      // The CPU's double(low + scale * u), each step rounded: no contraction into an FMA.
      case RandomKind::uniform: out[i] = T(__dadd_rn(a.low, __dmul_rn(a.scale, double(philox::uniform_of(b))))); break;
      case RandomKind::dropout_mask: out[i] = philox::uniform_of(b) >= a.p ? keep : T(0); break;
      case RandomKind::randint: break;  // int64 only, above
    }
  }
}

}  // namespace

void random_fill(RandomKind kind, const Tensor& out, const RandomStream& s, const Shape& logical, const Shape& start,
                 const RandomParams& params) {
  const char* op = random_name(kind);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    GLOBE_CHECK(out.is_contiguous() && out.dim() == static_cast<int64_t>(logical.size()), "[random] block ",
                shape_str(out.shape()), " does not fit logical shape ", shape_str(logical));
    GLOBE_CHECK(out.dim() <= kMaxDims, "[", op, "] CUDA kernels take at most ", kMaxDims, " dims, got ",
                shape_str(out.shape()));
    // The local index's coordinates in the block, walked through the logical tensor's strides
    // from the block's start: its logical index (kernels/cpu/random_fill.cpp's for_each_logical).
    Indexer<1> ix;
    ix.dims = int(out.dim());
    const Shape lstrides = contiguous_strides(logical);
    for (int d = 0; d < ix.dims; ++d) {
      ix.shape[d] = out.shape()[size_t(d)];
      ix.strides[0][d] = lstrides[size_t(d)];
      ix.offsets[0] += start[size_t(d)] * lstrides[size_t(d)];
    }
    RandomArgs a{kind, s.seed, s.call, params.low, params.high - params.low, params.p, params.int_low,
                 uint64_t(params.int_high - params.int_low)};
    const T keep = kind == RandomKind::dropout_mask ? T(1.0 / (1.0 - params.p)) : T(0);
    const int64_t n = out.numel();
    if (n == 0) return;
    random_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(out)>>>(n, ix, a, keep, ptr<T>(out));
    GLOBE_CUDA_CHECK(cudaGetLastError(), op);
  };
  if (kind == RandomKind::randint) {
    GLOBE_CHECK(out.dtype() == kInt64, "[randint] expects an int64 tensor, got ", dtype_name(out.dtype()));
    run(int64_t{});
  } else {
    visit_floating(out.dtype(), op, run);
  }
}

}  // namespace globe::kernels::cuda
