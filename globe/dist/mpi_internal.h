// What the MPI communicator's sources share (mpi_communicator.{h,cpp}, mpi_stamps.cpp,
// mpi_ring.cpp, and the NCCL communicator through mpi_communicator.h): MPI's names for Globe's
// types and counts, the sizes that choose a collective's form, small inline buffers. Not part of
// the installed API.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstring>
#include <mutex>
#include <vector>

#include "globe/core/tensor.h"
#include "globe/kernels/host_arrays.h"

namespace globe::dist::mpi {

inline MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int64: return MPI_INT64_T;
    case DType::bfloat16:
    case DType::float16: return MPI_UINT16_T;
    case DType::boolean: return MPI_UINT8_T;  // moved, never summed (a bool tensor is never partial)
    case DType::int32: return MPI_INT32_T;
    case DType::int8: return MPI_INT8_T;
    case DType::uint8: return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

// The sum of `t`'s elements across members: MPI_SUM, or for bfloat16 and float16 (which MPI has no type for)
// Globe's own operation, each sum taken in float32 and rounded once (mpi_communicator.cpp).
MPI_Op mpi_sum(DType t);

inline int as_count(int64_t n, const char* op) {
  GLOBE_CHECK(n >= 0 && n <= INT_MAX, "[", op, "] ", n, " elements exceed MPI's int count");
  return int(n);
}

inline void* ptr(const Tensor& t, const char* op) {
  GLOBE_CHECK(!t.is_global() && t.is_contiguous(), "[", op, "] needs a contiguous local tensor, got ",
              describe(t));
  return t.raw_data();
}

// A run of T that lives where it was made (MPI holds its address while a transfer is in flight):
// inline up to N elements (a collective of a few members and bytes allocates nothing), else on the
// heap. resize() keeps nothing and initialises nothing inline.
template <class T, size_t N>
class Small {
 public:
  Small() = default;
  Small(const Small&) = delete;
  Small& operator=(const Small&) = delete;
  void resize(size_t n) {
    if (n > N) heap_.resize(n);
    data_ = n > N ? heap_.data() : inline_;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  // Gives up a heap block without freeing it: MPI may still read it (a send abandoned in flight).
  // Kept reachable, so that leak checkers do not report it.
  void abandon_heap() {
    if (data_ == inline_) return;
    static std::mutex mu;
    static auto* abandoned = new std::vector<std::vector<T>>;
    const std::lock_guard<std::mutex> lock(mu);
    abandoned->push_back(std::move(heap_));
    data_ = inline_;
  }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  alignas(16) T inline_[N];
  std::vector<T> heap_;
  T* data_ = inline_;
};

// memcpy that accepts what an empty tensor has (a null pointer with no bytes).
inline void copy_bytes(void* dst, const void* src, int64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, size_t(bytes));
}

// dst = term(0) + term(1) + ... + term(p - 1) over n elements, added in that order on every member,
// so that every member's sum has the same bits. term(0) may be dst itself.
template <class Term>
void sum_in_member_order(DType dt, void* dst, int p, int64_t n, Term term) {
  if (n == 0) return;
  if (term(0) != dst) std::memcpy(dst, term(0), size_t(n) * itemsize(dt));
  for (int k = 1; k < p; ++k) kernels::accumulate_array(dt, dst, term(k), n);
}

// Counts and displacements in MPI's int form.
struct Layout {
  std::vector<int> counts, displs;
};
inline Layout layout(const std::vector<int64_t>& counts, const char* op) {
  Layout l;
  int64_t at = 0;
  for (int64_t c : counts) {
    l.counts.push_back(as_count(c, op));
    l.displs.push_back(as_count(at, op));
    at += c;
  }
  return l;
}

constexpr int kCheckBytes = 256;   // a consistency check's message: seq (8) + text
constexpr int kRingTag = 0x51;
constexpr int kDivergeTag = 0x5d;  // on the check context: "my op history", after fingerprints disagreed
// Up to this many bytes (fingerprints on) a collective's data travels in its stamps, to each member
// the piece it needs (copying the data costs less than a second exchange beside it); above, the
// stamps travel beside the collective.
constexpr int64_t kStampedMaxBytes = 64 << 10;
constexpr int64_t kRingMinBytes = 256 << 10;  // below this Open MPI's all-reduce is as fast
// Point-to-point collectives on the ring context tag their messages by sequence number, in two
// ranges: ring all-reduce steps and exchanges. Stamps, on their own context, by sequence number
// alone.
constexpr int kRingTags = 8192;  // MPI_TAG_UB is at least 32767
constexpr int kRingTagBase = 1024, kExchangeTagBase = kRingTagBase + kRingTags;

}  // namespace globe::dist::mpi
