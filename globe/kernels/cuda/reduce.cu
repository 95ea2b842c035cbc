// The CUDA table's sum, accumulating float32 in float64 as the CPU does (the CPU's blocked order
// differs, so results agree within rounding of the final float32, not bit for bit).
//
// Each output element's reduced elements (count of them, walked in row-major order of the reduced
// dims) are cut into `splits` chunks of `chunk` elements. A worker sums one chunk of one output:
//   - a warp where the innermost reduced dim has stride 1 and is at least a warp wide ("rows"):
//     its lanes read consecutive elements, then add their partials in a fixed shuffle tree;
//   - a thread otherwise ("columns", a bias gradient's sum over rows): neighbouring threads take
//     neighbouring outputs, which lie next to each other in memory.
// With one chunk the worker writes the output; with more, each writes a partial and a second
// kernel adds an output's partials in chunk order. Chunks are sized from the shapes alone, so the
// result does not change from run to run, and enough chunks are made to fill the GPU when there
// are few outputs (the sum of a whole tensor, a bias gradient).
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "globe/core/deterministic.h"
#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/kernels/cuda/access.h"
#include "globe/kernels/cuda/kernels.h"
#include "globe/kernels/cuda/strided.cuh"
#include "globe/kernels/tree_order.h"

namespace globe::kernels::cuda {

namespace {

constexpr int kWarp = 32;
// The threads a launch should have to keep every multiprocessor busy (132 on an H200, 2048
// threads each; half of that is enough for a memory-bound loop).
constexpr int64_t kWantThreads = int64_t(1) << 17;

// The reduced dims of the input: their extents and strides, in the input's order.
struct Reduced {
  int dims = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t count = 1;
};

// Walks reduced elements in order from a starting index, without a division per step.
struct Walk {
  int64_t idx[kMaxDims];
  int64_t off = 0;

  __device__ Walk(const Reduced& r, int64_t j) {
    for (int d = r.dims - 1; d >= 0; --d) {
      idx[d] = j % r.shape[d];
      j /= r.shape[d];
      off += idx[d] * r.strides[d];
    }
  }
  // To the next element (the last dim fastest), over `dims` dims of r.
  __device__ void next(const Reduced& r, int dims) {
    for (int d = dims - 1; d >= 0; --d) {
      off += r.strides[d];
      if (++idx[d] < r.shape[d] || d == 0) return;
      off -= r.shape[d] * r.strides[d];
      idx[d] = 0;
    }
  }
};

// A thread per (output i, chunk s), over grid (outputs, chunks).
template <class T, class Acc, class Out>
__global__ void sum_columns(int64_t n, Indexer<1> kept, Reduced r, int64_t chunk, const T* a, Out* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t s = blockIdx.y, j0 = s * chunk, j1 = min(r.count, j0 + chunk);
  int64_t base[1];
  kept.offsets_of(i, base);
  Acc acc = Acc(0);
  if (j0 < j1) {
    Walk w(r, j0);
    for (int64_t j = j0; j < j1; ++j) {
      acc += Acc(a[base[0] + w.off]);
      w.next(r, r.dims);
    }
  }
  out[s * n + i] = Out(acc);
}

// A warp per (output i, chunk s): lane l takes the chunk's elements l, l + 32, ... The innermost
// reduced dim (stride 1, extent >= 32) is stepped by 32 with at most one carry into the outer dims.
template <class T, class Acc, class Out>
__global__ void sum_rows(int64_t n, Indexer<1> kept, Reduced r, int64_t chunk, const T* a, Out* out) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = int(threadIdx.x % kWarp);
  if (warp >= n) return;  // whole warps leave together: n is counted in warps
  const int64_t i = warp, s = blockIdx.y, j0 = s * chunk, j1 = min(r.count, j0 + chunk);
  int64_t base[1];
  kept.offsets_of(i, base);
  const int inner = r.dims - 1;
  const int64_t width = r.shape[inner];
  Acc acc = Acc(0);
  if (j0 + lane < j1) {
    Walk w(r, j0 + lane);
    for (int64_t j = j0 + lane; j < j1; j += kWarp) {
      acc += Acc(a[base[0] + w.off]);
      w.idx[inner] += kWarp;
      w.off += kWarp;
      if (w.idx[inner] >= width) {  // into the next row of the outer reduced dims
        w.idx[inner] -= width;
        w.off -= width;
        if (inner > 0) w.next(r, inner);
      }
    }
  }
  for (int step = kWarp / 2; step > 0; step /= 2) acc += __shfl_down_sync(0xffffffffu, acc, step);
  if (lane == 0) out[s * n + i] = Out(acc);
}

// out[i] = the sum over s of partial[s * n + i], in order of s.
template <class T, class Acc>
__global__ void add_partials(int64_t n, int64_t splits, const Acc* partial, T* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Acc acc = Acc(0);
  for (int64_t s = 0; s < splits; ++s) acc += partial[s * n + i];
  out[i] = T(acc);
}

}  // namespace

namespace {

constexpr int kLeafSlots = 64;  // tree_slots of any int64_t leaf count

// Deterministic mode's leaf sum: a thread per output element (o, i) of x [outer, length, inner],
// the CPU's order exactly (kernels/cpu/reduce.cpp's leaf_tree): each leaf's terms added in index
// order from 0 in T, the leaves in tree_order.h's tree (`rotated`: the test hook's order).
template <class T>
__global__ void leaf_tree_kernel(int64_t outer, int64_t length, int64_t inner, int64_t leaf, bool rotated, const T* x,
                                 T* out) {
  const int64_t id = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (id >= outer * inner) return;
  const int64_t o = id / inner, i = id % inner, leaves = length / leaf;
  const T* xo = x + o * length * inner + i;
  T slots[kLeafSlots];
  auto piece = [&](int64_t l, int s) {
    const int64_t first = (rotated ? (l + 1) % leaves : l) * leaf;
    T acc = T(0);
    for (int64_t q = first; q < first + leaf; ++q) acc += xo[q * inner];
    slots[s] = acc;
  };
  auto add = [&](int s) { slots[s] = slots[s] + slots[s + 1]; };
  tree_walk(0, leaves, 0, piece, add);
  out[id] = slots[0];
}

}  // namespace

Tensor leaf_tree_sum(const Tensor& x, int64_t leaf) {
  const int64_t outer = x.shape()[0], length = x.shape()[1], inner = x.shape()[2];
  Tensor out = Tensor::uninitialized({outer, 1, inner}, x.dtype(), x.device());
  const int64_t n = outer * inner;
  if (n == 0) return out;
  const bool rotated = globe::detail::leaves_rotated_for_test();
  auto stream = stream_of(x);
  switch (x.dtype()) {
    case DType::float32:
      leaf_tree_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(outer, length, inner, leaf, rotated, ptr<float>(x),
                                                                      ptr<float>(out));
      break;
    case DType::float64:
      leaf_tree_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(outer, length, inner, leaf, rotated,
                                                                       ptr<double>(x), ptr<double>(out));
      break;
    default: GLOBE_FAIL("[sum] deterministic mode's leaf sum takes float32 or float64, got ", dtype_name(x.dtype()));
  }
  GLOBE_CUDA_CHECK(cudaGetLastError(), "sum");
  return out;
}

Tensor sum_to_keepdim(const Tensor& a, const Shape& keep) {
  GLOBE_CHECK(a.dim() <= kMaxDims, "[sum] CUDA kernels take at most ", kMaxDims, " dims, got ", shape_str(a.shape()));
  Tensor out = Tensor::uninitialized(keep, a.dtype(), a.device());
  // The kept dims index the output; the input is read through its own strides there (0 where the
  // output is reduced, so the walk below starts at the block's first element).
  Indexer<1> kept;
  kept.dims = int(keep.size());
  Reduced reduced;
  for (int d = 0; d < kept.dims; ++d) {
    kept.shape[d] = keep[size_t(d)];
    const bool summed = keep[size_t(d)] == 1 && a.shape()[size_t(d)] != 1;
    kept.strides[0][d] = summed ? 0 : a.strides()[size_t(d)];
    if (summed) {
      reduced.shape[reduced.dims] = a.shape()[size_t(d)];
      reduced.strides[reduced.dims] = a.strides()[size_t(d)];
      reduced.count *= a.shape()[size_t(d)];
      ++reduced.dims;
    }
  }
  kept.offsets[0] = a.offset();
  const int64_t n = out.numel();
  if (n == 0) return out;
  const bool rows = reduced.dims > 0 && reduced.strides[reduced.dims - 1] == 1 && reduced.shape[reduced.dims - 1] >= kWarp;
  // Chunks: as many as fill the GPU, none shorter than a few loads per worker.
  const int64_t threads_per_split = rows ? n * kWarp : n;
  const int64_t min_chunk = rows ? 8 * kWarp : 16;
  int64_t splits = std::clamp<int64_t>((kWantThreads + threads_per_split - 1) / threads_per_split, 1,
                                       std::max<int64_t>(1, reduced.count / min_chunk));
  // At most 1024: the second kernel adds an output's partials in one thread.
  splits = std::min<int64_t>(splits, 1024);
  // At least 1: a summed dim of extent 0 leaves count 0, and every output 0.
  const int64_t chunk = std::max<int64_t>(1, (reduced.count + splits - 1) / splits);
  splits = std::max<int64_t>(1, (reduced.count + chunk - 1) / chunk);
  auto stream = stream_of(a);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
    const T* in = static_cast<const T*>(a.storage()->data);
    T* dst = static_cast<T*>(out.storage()->data);
    const dim3 grid(rows ? unsigned((n * kWarp + kThreads - 1) / kThreads) : blocks_for(n), unsigned(splits));
    if (splits == 1) {
      if (rows) sum_rows<T, Acc, T><<<grid, kThreads, 0, stream>>>(n, kept, reduced, chunk, in, dst);
      else sum_columns<T, Acc, T><<<grid, kThreads, 0, stream>>>(n, kept, reduced, chunk, in, dst);
      return;
    }
    // The partials live until the second kernel, queued behind the first on the same stream.
    const Tensor partial = Tensor::uninitialized({splits * n}, std::is_same_v<Acc, T> ? a.dtype() : kFloat64, a.device());
    Acc* p = static_cast<Acc*>(partial.storage()->data);
    if (rows) sum_rows<T, Acc, Acc><<<grid, kThreads, 0, stream>>>(n, kept, reduced, chunk, in, p);
    else sum_columns<T, Acc, Acc><<<grid, kThreads, 0, stream>>>(n, kept, reduced, chunk, in, p);
    add_partials<T, Acc><<<blocks_for(n), kThreads, 0, stream>>>(n, splits, p, dst);
  });
  GLOBE_CUDA_CHECK(cudaGetLastError(), "sum");
  return out;
}

}  // namespace globe::kernels::cuda
