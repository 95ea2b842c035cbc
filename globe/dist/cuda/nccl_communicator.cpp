// GPU tensors' collectives over NCCL (group_communicator.h says when). Not yet run on a GPU: this
// machine has none; it compiles, and the CPU suite runs the host half (numbering, fingerprints).
//
// One NCCL communicator per group, made at the group's first GPU collective: the members first
// tell each other (over MPI) their host, GPU and whether they may use NCCL; if two share a GPU
// (NCCL before 2.30 refuses that) or one may not (GLOBE_NCCL=0), every member keeps the group
// host-staged. Else member 0's NCCL id goes to the others over MPI.
// Each collective runs on a communication stream of its own, after the compute stream's work (an
// event), and the compute stream waits for it (another event): the host never waits for the GPU.
// A collective takes its number from the MPI communicator (one count per group, as a rank that
// leaves early reports it), and its fingerprint is reduced over MPI beside it. Deadlines: every
// call first looks at the collectives in flight; one that NCCL reports failed
// (ncclCommGetAsyncError) or that outlived GLOBE_TIMEOUT aborts the communicator (ncclCommAbort)
// and is an error with the MPI communicator's words. While the host waits elsewhere (a copy behind
// a stuck stream), a watchdog thread does the same a second later and ends the process, having no
// program to throw to.
#include "globe/dist/group_communicator.h"
#include "globe/dist/staged_communicator.h"

#if GLOBE_WITH_NCCL
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "globe/device/cuda/cuda_check.h"
#include "globe/device/stream.h"
#include "globe/dist/runtime.h"

namespace globe::dist {

namespace {

constexpr const char* kPointToPointWhy =
    "point-to-point transfers carry tags, which NCCL lacks (this group's collectives use NCCL)";

void check_nccl(ncclResult_t rc, const char* op, const char* call) {
  GLOBE_CHECK(rc == ncclSuccess || rc == ncclInProgress, "[", op, "] NCCL error: ", ncclGetErrorString(rc), " (",
              call, ")");
}
#define GLOBE_NCCL(call, op) check_nccl((call), op, #call)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int64: return ncclInt64;
  }
  return ncclChar;
}

std::string nccl_version() {
  int v = 0;
  ncclGetVersion(&v);
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

int64_t hash_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return int64_t(h >> 1);
}

// Element `at` of contiguous `t`, in device memory.
void* at(const Tensor& t, int64_t at) { return static_cast<char*>(t.device_data()) + at * int64_t(itemsize(t.dtype())); }

std::vector<int64_t> starts_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> s(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) s[i] = s[i - 1] + counts[i - 1];
  return s;
}

bool all_equal(const std::vector<int64_t>& counts) {
  for (int64_t c : counts)
    if (c != counts[0]) return false;
  return true;
}

// Runs `calls` between ncclGroupStart and ncclGroupEnd (one launch for all of them).
ncclResult_t grouped(const char* op, const std::function<void()>& calls) {
  GLOBE_NCCL(ncclGroupStart(), op);
  calls();
  return ncclGroupEnd();
}

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi)
      : mpi_(mpi.get()), host_(std::make_unique<HostStagedCommunicator>(std::move(mpi), kPointToPointWhy)) {}
  ~NcclCommunicator() override;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const std::vector<int>& world_ranks() const override { return mpi_->world_ranks(); }
  uint64_t collectives_entered() const override { return mpi_->collectives_entered(); }

  void all_reduce_sum(const Tensor& t) override {
    if (!on_nccl(t, "all_reduce")) return host_->all_reduce_sum(t);
    run("all_reduce", {t}, [&](ncclComm_t c, cudaStream_t s) {
      return ncclAllReduce(at(t, 0), at(t, 0), size_t(t.numel()), nccl_type(t.dtype()), ncclSum, c, s);
    });
  }
  // Started as the blocking one: it is ordered on the device already, and the host never waits.
  Request start_all_reduce_sum(const Tensor& t) override {
    if (!on_nccl(t, "all_reduce")) return host_->start_all_reduce_sum(t);
    all_reduce_sum(t);
    return Request(std::make_shared<InStreamOrder>(*this));
  }
  void all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) override;
  void reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                    const std::vector<int64_t>& recv_counts) override;
  void exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) override;
  void broadcast(const Tensor& t, int root) override {
    if (!on_nccl(t, "broadcast")) return host_->broadcast(t, root);
    run("broadcast", {t}, [&](ncclComm_t c, cudaStream_t s) {
      return ncclBroadcast(at(t, 0), at(t, 0), size_t(t.numel()), nccl_type(t.dtype()), root, c, s);
    });
  }
  Request isend(const Tensor& t, int peer, int tag) override { return host_->isend(t, peer, tag); }
  Request irecv(const Tensor& t, int peer, int tag) override { return host_->irecv(t, peer, tag); }
  void barrier() override { host_->barrier(); }
  void check_consistency(const std::string& what) override { host_->check_consistency(what); }

 private:
  // A started all-reduce: complete in the device's stream order; waiting checks for errors only.
  class InStreamOrder final : public Request::Impl {
   public:
    explicit InStreamOrder(NcclCommunicator& c) : c_(c) {}
    bool test() override { return true; }
    void wait() override { c_.reap(); }

   private:
    NcclCommunicator& c_;
  };

  struct InFlight {
    uint64_t seq;
    const char* op;
    Clock::time_point deadline;
    std::shared_ptr<Event> done;
    std::vector<Tensor> keep;  // alive until the collective has run
  };
  enum class Path { undecided, nccl, staged };

  // Whether t's collective goes over NCCL (deciding the group's path at its first GPU tensor).
  bool on_nccl(const Tensor& t, const char* op);
  void decide(const Device& device);
  void init_nccl(const Device& device);
  // Enqueues `call` on the communication stream between the two events, under a fingerprint check.
  void run(const char* op, std::vector<Tensor> keep, const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& call);
  // Waits (with the deadline) until NCCL has taken the last call of this non-blocking communicator.
  void settle(const char* op, uint64_t seq);
  // Drops the collectives that have run; throws for one that failed or outlived its deadline.
  void reap();
  [[noreturn]] void fail(const std::string& message);
  void watchdog();

  MpiCommunicator* mpi_;                            // owned by host_
  std::unique_ptr<HostStagedCommunicator> host_;    // host tensors, point-to-point, staged collectives
  Path path_ = Path::undecided;
  Device device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;                                // inflight_, between the program and the watchdog
  std::deque<InFlight> inflight_;
  std::atomic<bool> aborted_{false};
  std::string abort_message_;
  std::thread watchdog_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

NcclCommunicator::~NcclCommunicator() {
  if (watchdog_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    watchdog_.join();
  }
  if (comm_ == nullptr) return;
  bool settled = true;
  for (const InFlight& f : inflight_) settled = settled && f.done->done();
  // A collective still in flight (the program failed around it) cannot be waited for: abort.
  if (aborted_ || !settled) {
    if (!aborted_) ncclCommAbort(comm_);
  } else {
    ncclCommDestroy(comm_);
  }
  cudaStreamDestroy(stream_);
}

bool NcclCommunicator::on_nccl(const Tensor& t, const char* op) {
  if (t.device().is_cpu()) return false;
  if (path_ == Path::undecided) decide(t.device());
  if (path_ == Path::staged) return false;
  GLOBE_CHECK(t.device() == device_, "[", op, "] the NCCL communicator of ranks [", mpi_->watch().members(),
              "] runs on ", device_.str(), " (this rank's GPU), but the tensor is on ", t.device().str(),
              ": a rank's tensors of one placement live on one GPU");
  return true;
}

// Every member says (host, GPU, may use NCCL); all compute the same path from the same list.
void NcclCommunicator::decide(const Device& device) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  char bus[64] = {0};
  GLOBE_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device.index), "nccl");
  const char* env = std::getenv("GLOBE_NCCL");
  const bool allowed = !(env && std::string(env) == "0");
  const int p = size();
  Tensor mine = Tensor::uninitialized({3}, DType::int64), all = Tensor::uninitialized({3 * p}, DType::int64);
  int64_t* m = mine.data<int64_t>();
  m[0] = hash_of(host);
  m[1] = hash_of(bus);
  m[2] = allowed;
  mpi_->all_gather_v(mine, all, std::vector<int64_t>(size_t(p), 3));
  const int64_t* a = all.data<int64_t>();
  std::string why;
  for (int i = 0; i < p && why.empty(); ++i) {
    if (!a[3 * i + 2]) why = "rank " + std::to_string(world_ranks()[size_t(i)]) + " has GLOBE_NCCL=0";
    for (int j = 0; j < i && why.empty(); ++j)
      if (a[3 * i] == a[3 * j] && a[3 * i + 1] == a[3 * j + 1])
        why = "ranks " + std::to_string(world_ranks()[size_t(j)]) + " and " + std::to_string(world_ranks()[size_t(i)]) +
              " share one GPU, which NCCL " + nccl_version() + " refuses (2.30 allows it)";
  }
  if (!why.empty()) {
    path_ = Path::staged;
    host_->set_why(why);
    return;
  }
  init_nccl(device);
}

void NcclCommunicator::init_nccl(const Device& device) {
  ncclUniqueId id;
  Tensor id_t = Tensor::uninitialized({int64_t((sizeof id + 7) / 8)}, DType::int64);
  if (rank() == 0) {
    GLOBE_NCCL(ncclGetUniqueId(&id), "nccl_init");
    std::memcpy(id_t.raw_data(), &id, sizeof id);
  }
  mpi_->broadcast(id_t, 0);
  std::memcpy(&id, id_t.raw_data(), sizeof id);
  GLOBE_CUDA_CHECK(cudaSetDevice(device.index), "nccl_init");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // creation returns at once, so that it can be waited for with the deadline
  const uint64_t seq = mpi_->begin_collective();
  GLOBE_NCCL(ncclCommInitRankConfig(&comm_, size(), id, rank(), &config), "nccl_init");
  device_ = device;
  settle("nccl_init", seq);
  GLOBE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "nccl_init");
  path_ = Path::nccl;
  if (rank() == 0)
    std::fprintf(stderr, "[globe] ranks %s: tensors on %s cross ranks over NCCL %s\n",
                 mpi_->watch().members().c_str(), device.str().c_str(), nccl_version().c_str());
  watchdog_ = std::thread([this] { watchdog(); });
}

void NcclCommunicator::settle(const char* op, uint64_t seq) {
  ncclResult_t state = ncclInProgress;
  mpi_->watch().wait(
      [&] {
        ncclCommGetAsyncError(comm_, &state);
        return state != ncclInProgress;
      },
      op, seq, [&] {
        ncclCommAbort(comm_);
        aborted_ = true;
      });
  if (state != ncclSuccess) {
    ncclCommAbort(comm_);
    aborted_ = true;
    fail(detail::concat("[", op, "] collective #", seq, " on ranks ", mpi_->watch().members(),
                        ": NCCL failed: ", ncclGetErrorString(state)));
  }
}

void NcclCommunicator::run(const char* op, std::vector<Tensor> keep,
                           const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& call) {
  reap();
  const uint64_t seq = mpi_->begin_collective();
  MpiCommunicator::Side side = mpi_->start_side(fingerprints());
  const Stream compute = compute_stream(device_), comm{device_, stream_};  // makes device_ current
  Event ready(device_);
  ready.record(compute);
  ready.wait(comm);
  check_nccl(call(comm_, stream_), op, "the collective");
  settle(op, seq);
  auto done = std::make_shared<Event>(device_);
  done->record(comm);
  done->wait(compute);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inflight_.push_back(InFlight{seq, op, deadline_from_now(), done, std::move(keep)});
  }
  mpi_->finish_side(side, op, /*collective_pending=*/true, seq);
}

void NcclCommunicator::reap() {
  if (aborted_) fail(abort_message_.empty() ? "[nccl] this group's NCCL communicator was aborted" : abort_message_);
  if (comm_ == nullptr) return;
  const char* late_op = nullptr;  // the oldest collective in flight, when it outlived its deadline
  uint64_t late_seq = 0;
  ncclResult_t state = ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!inflight_.empty() && inflight_.front().done->done()) inflight_.pop_front();
    if (!inflight_.empty() && Clock::now() > inflight_.front().deadline)
      late_op = inflight_.front().op, late_seq = inflight_.front().seq;
    ncclCommGetAsyncError(comm_, &state);
  }
  if (state != ncclSuccess && state != ncclInProgress) {
    ncclCommAbort(comm_);
    aborted_ = true;
    fail(detail::concat("[nccl] a collective on ranks ", mpi_->watch().members(), " failed: ", ncclGetErrorString(state)));
  }
  if (late_op != nullptr) {
    ncclCommAbort(comm_);
    aborted_ = true;
    fail(mpi_->watch().timed_out(late_op, late_seq));
  }
}

void NcclCommunicator::fail(const std::string& message) {
  mark_broken("a NCCL collective was abandoned");
  GLOBE_FAIL(message);
}

// Once a second: a collective NCCL reports failed, or one a second past its deadline that the
// program has not noticed (it waits on the host for the stuck stream), aborts the communicator
// and ends the process with the reason. MPI is not touched here (it serves one thread).
void NcclCommunicator::watchdog() {
  GLOBE_CUDA_CHECK(cudaSetDevice(device_.index), "nccl_watchdog");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
    while (!inflight_.empty() && inflight_.front().done->done()) inflight_.pop_front();
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm_, &state);
    const bool failed = state != ncclSuccess && state != ncclInProgress;
    const bool late = !inflight_.empty() && Clock::now() > inflight_.front().deadline + std::chrono::seconds(1);
    if (!failed && !late) continue;
    const std::string why =
        failed ? detail::concat("NCCL failed: ", ncclGetErrorString(state))
               : detail::concat("collective #", inflight_.front().seq, " (", inflight_.front().op, ") did not finish on ",
                                device_.str(), " within ", timeout_seconds(), " s (GLOBE_TIMEOUT sets the limit)");
    ncclCommAbort(comm_);
    aborted_ = true;
    std::fprintf(stderr, "[globe] rank %d: the NCCL communicator of ranks %s: %s; this rank stops\n", world_rank(),
                 mpi_->watch().members().c_str(), why.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

void NcclCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  if (!on_nccl(out, "all_gather")) return host_->all_gather_v(local, out, counts);
  GLOBE_CHECK(int(counts.size()) == size() && local.numel() == counts[size_t(rank())], "[all_gather] counts do not ",
              "match: local ", describe(local), " for ", counts.size(), " members");
  const ncclDataType_t type = nccl_type(out.dtype());
  run("all_gather", {local, out}, [&](ncclComm_t c, cudaStream_t s) {
    if (all_equal(counts)) return ncclAllGather(at(local, 0), at(out, 0), size_t(counts[0]), type, c, s);
    // Uneven pieces: each member's is broadcast from it, all in one group.
    const std::vector<int64_t> start = starts_of(counts);
    return grouped("all_gather", [&] {
      for (int r = 0; r < size(); ++r)
        if (counts[size_t(r)] > 0)
          GLOBE_NCCL(ncclBroadcast(r == rank() ? at(local, 0) : nullptr, at(out, start[size_t(r)]),
                                   size_t(counts[size_t(r)]), type, r, c, s),
                     "all_gather");
    });
  });
}

void NcclCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  if (!on_nccl(in, "reduce_scatter")) return host_->reduce_scatter_v(in, out, counts);
  GLOBE_CHECK(int(counts.size()) == size() && out.numel() == counts[size_t(rank())], "[reduce_scatter] counts do not ",
              "match: out ", describe(out), " for ", counts.size(), " members");
  const ncclDataType_t type = nccl_type(in.dtype());
  run("reduce_scatter", {in, out}, [&](ncclComm_t c, cudaStream_t s) {
    if (all_equal(counts)) return ncclReduceScatter(at(in, 0), at(out, 0), size_t(counts[0]), type, ncclSum, c, s);
    // Uneven chunks: chunk r is reduced onto member r, all in one group.
    const std::vector<int64_t> start = starts_of(counts);
    return grouped("reduce_scatter", [&] {
      for (int r = 0; r < size(); ++r)
        if (counts[size_t(r)] > 0)
          GLOBE_NCCL(ncclReduce(at(in, start[size_t(r)]), r == rank() ? at(out, 0) : nullptr, size_t(counts[size_t(r)]),
                                type, ncclSum, r, c, s),
                     "reduce_scatter");
    });
  });
}

void NcclCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                                    const std::vector<int64_t>& recv_counts) {
  if (!on_nccl(send, "all_to_all")) return host_->all_to_all_v(send, send_counts, recv, recv_counts);
  const ncclDataType_t type = nccl_type(send.dtype());
  const std::vector<int64_t> ss = starts_of(send_counts), rs = starts_of(recv_counts);
  run("all_to_all", {send, recv}, [&](ncclComm_t c, cudaStream_t s) {
    return grouped("all_to_all", [&] {
      for (int r = 0; r < size(); ++r) {
        const size_t i = size_t(r);
        if (send_counts[i] > 0) GLOBE_NCCL(ncclSend(at(send, ss[i]), size_t(send_counts[i]), type, r, c, s), "all_to_all");
        if (recv_counts[i] > 0) GLOBE_NCCL(ncclRecv(at(recv, rs[i]), size_t(recv_counts[i]), type, r, c, s), "all_to_all");
      }
    });
  });
}

// A piece of the wrong size is not detected here as it is over MPI (NCCL receives no count): the
// pieces' sizes follow from the layouts every member computes alike.
void NcclCommunicator::exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) {
  const int p = size();
  GLOBE_CHECK(int(send.size()) == p && int(recv.size()) == p, "[exchange] ", send.size(), " send and ", recv.size(),
              " receive tensors for ", p, " members");
  const Tensor* any = nullptr;  // a piece that crosses, to choose the path by
  for (int s = 0; s < p && !any; ++s)
    if (s != rank() && send[size_t(s)].defined()) any = &send[size_t(s)];
  if (!any || !on_nccl(*any, "exchange")) return host_->exchange(send, recv);
  std::vector<Tensor> keep;
  for (int s = 0; s < p; ++s)
    if (s != rank()) keep.insert(keep.end(), {send[size_t(s)], recv[size_t(s)]});  // undefined ones too: harmless
  run("exchange", keep, [&](ncclComm_t c, cudaStream_t st) {
    return grouped("exchange", [&] {
      for (int k = 1; k < p; ++k) {
        const int s = (rank() + k) % p;
        const Tensor &out = send[size_t(s)], &in = recv[size_t(s)];
        if (out.defined() && out.numel() > 0)
          GLOBE_NCCL(ncclSend(at(out, 0), size_t(out.numel()), nccl_type(out.dtype()), s, c, st), "exchange");
        if (in.defined() && in.numel() > 0) GLOBE_NCCL(ncclRecv(at(in, 0), size_t(in.numel()), nccl_type(in.dtype()), s, c, st), "exchange");
      }
    });
  });
}

}  // namespace

std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi) {
  return std::make_unique<NcclCommunicator>(std::move(mpi));
}

}  // namespace globe::dist

#else  // a CUDA build where CMake found no NCCL

namespace globe::dist {

std::unique_ptr<Communicator> make_group_communicator(std::unique_ptr<MpiCommunicator> mpi) {
  return std::make_unique<HostStagedCommunicator>(std::move(mpi), "this build has no NCCL (CMake did not find it)");
}

}  // namespace globe::dist

#endif
