// The MPI communicator's collectives for large tensors: a ring all-reduce and reduce-scatter
// (point-to-point steps with the neighbours, at point-to-point speed), and the all-reduce that
// chooses its form by size (in its stamps, Open MPI's, or the ring).
#include <algorithm>
#include <cstring>

#include "globe/core/sbp.h"
#include "globe/dist/fingerprint.h"
#include "globe/dist/mpi_communicator.h"
#include "globe/dist/mpi_internal.h"
#include "globe/dist/runtime.h"
#include "globe/kernels/host_arrays.h"

namespace globe::dist {

using namespace mpi;


// Ring reduce-scatter with the given (uneven, possibly empty) chunks: at step s a member sends
// its partial sum of chunk (rank - s - 1) to the right and receives the left neighbour's partial
// sum of chunk (rank - s - 2), adding its own part; after p - 1 steps the chunk received is its
// own, complete. `in` is only read. On 16 MiB float32 over 2 ranks Open MPI 4.1's reduce-scatter
// reaches ~2.5 GB/s here (its non-blocking one, libnbc's, is a reduce to one rank followed by a
// scatter); this ring reaches 5-6 GB/s (bench/RESULTS.md, "Boxing").
void MpiCommunicator::ring_reduce_scatter(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  const int p = size(), right = (rank_ + 1) % p, left = (rank_ + p - 1) % p;
  const DType dt = in.dtype();
  GLOBE_CHECK(out.dtype() == dt, "[reduce_scatter] dtypes differ: ", describe(in), " into ", describe(out));
  const size_t item = itemsize(dt);
  const char* src = static_cast<const char*>(ptr(in, "reduce_scatter"));
  char* dst = static_cast<char*>(ptr(out, "reduce_scatter"));
  std::vector<int64_t> start(p, 0);
  int64_t largest = 0;
  for (int c = 0; c < p; ++c) {
    start[c] = c ? start[c - 1] + counts[c - 1] : 0;
    largest = std::max(largest, counts[c]);
  }
  auto wrap = [p](int c) { return (c % p + p) % p; };
  // Partial sums travel in `acc`; what arrives lands in `scratch` (both chunk-sized).
  Tensor acc = Tensor::uninitialized({largest}, dt), scratch = Tensor::uninitialized({largest}, dt);
  const char* sending = src + start[wrap(rank_ - 1)] * item;
  for (int step = 0; step < p - 1; ++step) {
    const int send_c = wrap(rank_ - step - 1), recv_c = wrap(rank_ - step - 2);
    MPI_Request reqs[2];
    check_mpi(MPI_Irecv(scratch.raw_data(), as_count(counts[recv_c], "reduce_scatter"), mpi_type(dt), left, kRingTag,
                        ring_comm_, &reqs[0]),
              "reduce_scatter");
    check_mpi(MPI_Isend(sending, as_count(counts[send_c], "reduce_scatter"), mpi_type(dt), right, kRingTag, ring_comm_,
                        &reqs[1]),
              "reduce_scatter");
    wait_both(reqs, "reduce_scatter");
    // The last chunk received is this member's: its sum goes straight into `out`.
    void* sum = step == p - 2 ? static_cast<void*>(dst) : acc.raw_data();
    kernels::add_arrays(dt, sum, scratch.raw_data(), src + start[recv_c] * item, counts[recv_c]);
    sending = static_cast<const char*>(acc.raw_data());
  }
}

// An all-reduce in flight, in one of three forms by size. With fingerprints on, while the data
// sent to every other member stays within kStampedMaxBytes, it travels in the collective's stamps
// (mpi_stamps.cpp), and each member adds the members' terms in member order. Up to kRingMinBytes, Open MPI's
// MPI_Iallreduce runs in place beside the stamps; up to kStampedMaxBytes over a power-of-two
// number of members, recursive doubling instead: log2(p) exchanges with the
// partner rank ^ 2^k, each adding what arrives (libnbc builds a schedule per call, ~4,000
// instructions of a 4-byte all-reduce's ~6,500; every member adds the same pairs, so all get the
// same bits). Above kRingMinBytes, a ring (reduce-scatter, then all-gather, around the members)
// beside the stamps: on these machines Open MPI's own large all-reduce reaches a fraction of
// point-to-point bandwidth (docs/design.md, Platform notes), while the ring moves 2 (p-1)/p of the
// bytes at point-to-point speed. Ring chunks follow the balanced split, so any element count
// works. Each ring step is one non-blocking exchange with the neighbours, tagged by the
// collective's sequence number so that several all-reduces (a bucket in flight, a blocking one
// beside it) never take each other's messages. test() finishes whatever steps have arrived and
// posts the next; wait() runs them to the end under the deadline.
class MpiCommunicator::AllReduce final : public Request::Impl {
 public:
  AllReduce(MpiCommunicator& c, const Tensor& t) : c_(c), t_(t), seq_(++c.seq_), n_(t.numel()) {
    data_ = static_cast<char*>(ptr(t, "all_reduce"));
    const int64_t item = int64_t(itemsize(t.dtype())), bytes = n_ * item;
    if (bytes >= kRingMinBytes && n_ >= c.size()) {
      kind_ = Kind::ring;
      c.start_side(stamps_, fingerprints(), "all_reduce");
      scratch_ = Tensor::uninitialized({split_range(t.numel(), c.size(), 0).length}, t.dtype());
      steps_ = 2 * (c.size() - 1);
      post_ring_step();
    } else if (fingerprints() && bytes * (c.size() - 1) <= kStampedMaxBytes) {  // sent to every member
      kind_ = Kind::stamped;
      stamps_.lay_out(c, "all_reduce", seq_, {n_, nullptr, item}, {n_, nullptr, item});
      copy_bytes(stamps_.to(0), data_, bytes);
      stamps_.post();
    } else {
      kind_ = Kind::plain;
      c.start_side(stamps_, fingerprints(), "all_reduce");
      start_small(data_, n_);
    }
  }
  ~AllReduce() override {
    if (done_) return;
    // Abandoned while unwinding an error: point-to-point steps are cancelled (stamps cancel their
    // own); Open MPI's collective cannot be, so MPI must not be finalised with one pending.
    if (stepwise()) cancel_pending(reqs_, 2);
    else if (kind_ == Kind::plain && !data_done_) mark_broken("an all-reduce in flight was abandoned");
  }
  bool test() override { return advance(false); }
  void wait() override { advance(true); }

 private:
  enum class Kind { stamped, plain, ring };

  Range chunk(int c) const { return split_range(n_, c_.size(), (c % c_.size() + c_.size()) % c_.size()); }

  // Ring or doubling: point-to-point steps, posted one after another.
  bool stepwise() const { return kind_ == Kind::ring || small_ != nullptr; }

  // A small all-reduce in place over `n` elements at `buf`: by doubling, or Open MPI's.
  void start_small(char* buf, int64_t n) {
    const int p = c_.size();
    const int64_t bytes = n * int64_t(itemsize(t_.dtype()));
    if (p > 1 && (p & (p - 1)) == 0 && bytes <= kStampedMaxBytes) {
      small_ = buf;
      small_n_ = n;
      small_in_.resize(size_t(bytes));
      for (int q = p; q > 1; q /= 2) ++steps_;
      post_doubling_step();
      return;
    }
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, buf, as_count(n, "all_reduce"), mpi_type(t_.dtype()), mpi_sum(t_.dtype()),
                             c_.comm_, &reqs_[0]),
              "all_reduce");
  }
  void post_doubling_step() {
    const int partner = c_.rank_ ^ (1 << step_), tag = kRingTagBase + int(seq_ % kRingTags);
    const int count = as_count(small_n_, "all_reduce");
    check_mpi(MPI_Irecv(small_in_.data(), count, mpi_type(t_.dtype()), partner, tag, c_.ring_comm_, &reqs_[0]),
              "all_reduce");
    check_mpi(MPI_Isend(small_, count, mpi_type(t_.dtype()), partner, tag, c_.ring_comm_, &reqs_[1]), "all_reduce");
  }

  // Step s < p-1 (reduce-scatter): send chunk rank-s, receive chunk rank-s-1 into scratch and
  // add it; after p-1 steps chunk rank+1 is summed here. Then (all-gather) step p-1+g sends chunk
  // rank+1-g and receives chunk rank-g in place.
  void post_ring_step() {
    const int p = c_.size(), me = c_.rank_, right = (me + 1) % p, left = (me + p - 1) % p;
    const int g = step_ - (p - 1);
    const Range s = chunk(g < 0 ? me - step_ : me + 1 - g), r = chunk(g < 0 ? me - step_ - 1 : me - g);
    const size_t item = itemsize(t_.dtype());
    void* into = g < 0 ? scratch_.raw_data() : data_ + r.start * item;
    const int tag = kRingTagBase + int(seq_ % kRingTags);
    check_mpi(MPI_Irecv(into, as_count(r.length, "all_reduce"), mpi_type(t_.dtype()), left, tag, c_.ring_comm_,
                        &reqs_[0]),
              "all_reduce");
    check_mpi(MPI_Isend(data_ + s.start * item, as_count(s.length, "all_reduce"), mpi_type(t_.dtype()), right, tag,
                        c_.ring_comm_, &reqs_[1]),
              "all_reduce");
  }

  void finish_ring_step() {
    if (step_ >= c_.size() - 1) return;  // all-gather: received in place
    const Range r = chunk(c_.rank_ - step_ - 1);
    kernels::accumulate_array(t_.dtype(), data_ + r.start * itemsize(t_.dtype()), scratch_.raw_data(), r.length);
  }

  // Whether the exchange in flight (the MPI all-reduce, or the ring's step) has arrived.
  bool arrived(bool block) {
    if (kind_ == Kind::stamped) return block || stamps_.test();  // advance() finishes them
    if (block) {
      stamps_.finish(true);  // first: with a member in another collective the data never arrives
      c_.wait_both(reqs_, "all_reduce", seq_);
      return true;
    }
    int done = 0;
    MPI_Testall(2, reqs_, &done, MPI_STATUSES_IGNORE);
    return done;
  }

  bool advance(bool block) {
    while (!data_done_) {
      if (!arrived(block)) return false;
      if (kind_ == Kind::ring) {
        finish_ring_step();
        if (++step_ < steps_) {
          post_ring_step();
          continue;
        }
      } else if (small_ != nullptr) {
        kernels::accumulate_array(t_.dtype(), small_, small_in_.data(), small_n_);
        if (++step_ < steps_) {
          post_doubling_step();
          continue;
        }
      }
      data_done_ = true;
    }
    if (done_) return true;
    if (!block && !stamps_.test()) return false;
    done_ = true;
    stamps_.finish(false);
    if (kind_ == Kind::stamped) {
      const int me = c_.rank_;
      sum_in_member_order(t_.dtype(), data_, c_.size(), n_,
                          [&](int k) { return k == 0 && me == 0 ? data_ : stamps_.from(k); });
    }
    return true;
  }

  MpiCommunicator& c_;
  Tensor t_, scratch_;
  const uint64_t seq_;
  const int64_t n_;  // elements
  char* data_ = nullptr;
  Kind kind_ = Kind::plain;
  Stamps stamps_;          // beside the data (ring, Open MPI's), or carrying it (stamped)
  char* small_ = nullptr;  // doubling: the buffer reduced in place, its elements, and the
  int64_t small_n_ = 0;    // partner's copy of it as it arrives
  Small<char, 64> small_in_;
  MPI_Request reqs_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int step_ = 0, steps_ = 0;
  bool data_done_ = false, done_ = false;
};

void MpiCommunicator::all_reduce_sum(const Tensor& t) { AllReduce(*this, t).wait(); }

Request MpiCommunicator::start_all_reduce_sum(const Tensor& t) {
  return Request(std::make_shared<AllReduce>(*this, t));
}

}  // namespace globe::dist
