// GPU tensors' collectives over NCCL (group_communicator.h says when). Not yet run on a GPU: this
// machine has none; it compiles, and the CPU suite runs the host half (numbering, fingerprints).
//
// One NCCL communicator per group, made at the group's first GPU collective: the members first
// tell each other (over MPI) their machine, GPU and whether they may use NCCL; if two share a GPU
// (NCCL refuses that before 2.30, and after unless NCCL_MULTI_RANK_GPU_ENABLE=1) or one may not
// (GLOBE_NCCL=0), every member keeps the group host-staged. Else member 0's NCCL id goes to the
// others over MPI.
// A collective takes its number from the MPI communicator (one count per group, as a rank that
// leaves early reports it) and checks its fingerprint over MPI first, so ranks that diverged
// throw before any kernel is queued. It runs on a communication stream of its own after the
// compute stream's work (an event); the compute stream waits for its end (another event) at once,
// or, for a started all-reduce (a gradient bucket), when the request is waited for, so backward's
// remaining kernels overlap with it. The host never waits for the GPU. Deadlines: every call
// first looks at the collectives in flight; one that NCCL reports failed (ncclCommGetAsyncError)
// or that outlived GLOBE_TIMEOUT aborts the communicator (ncclCommAbort) and is an error naming
// it. While the host waits elsewhere (a copy behind a stuck stream), a watchdog thread does the
// same a second later and ends the process, having no program to throw to.
#include "globe/dist/group_communicator.h"
#include "globe/dist/mpi_communicator.h"
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

DeviceType cuda_type() {
  static const DeviceType kind = parse_device_type("cuda");
  return kind;
}

constexpr const char* kPointToPointWhy = "point-to-point transfers carry tags, which NCCL lacks";

bool ok(ncclResult_t rc) { return rc == ncclSuccess || rc == ncclInProgress; }

void check_nccl(ncclResult_t rc, const char* op, const char* call) {
  GLOBE_CHECK(ok(rc), "[", op, "] NCCL error: ", ncclGetErrorString(rc), " (", call, ")");
}
#define GLOBE_NCCL(call, op) check_nccl((call), op, #call)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::int64: return ncclInt64;
    case DType::bfloat16: return ncclBfloat16;
    case DType::float16: return ncclFloat16;
    case DType::boolean:
    case DType::uint8: return ncclUint8;
    case DType::int32: return ncclInt32;
    case DType::int8: return ncclInt8;
  }
  return ncclChar;
}

int nccl_version_code() {
  int v = 0;
  ncclGetVersion(&v);
  return v;
}

std::string nccl_version() {
  const int v = nccl_version_code();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

int64_t hash_of(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return int64_t(h >> 1);
}

// This machine, as NCCL tells machines apart: the host name and this boot's id (two machines may
// share a name).
std::string host_identity() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string id = host;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    char boot[64] = {0};
    if (std::fgets(boot, sizeof boot, f)) id += boot;
    std::fclose(f);
  }
  return id;
}

// Element `i` of `t`, in device memory; NCCL reads and writes dense local buffers only.
void* at(const Tensor& t, int64_t i) {
  GLOBE_CHECK(!t.is_global() && t.is_contiguous(), "[nccl] needs a contiguous local tensor, got ", describe(t));
  return static_cast<char*>(t.device_data()) + i * int64_t(itemsize(t.dtype()));
}

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

// The first failure among a group's calls (they return their result and never throw, so that
// ncclGroupEnd always closes the group).
struct FirstError {
  ncclResult_t rc = ncclSuccess;
  void operator()(ncclResult_t r) {
    if (ok(rc)) rc = r;
  }
};

// Runs `calls` between ncclGroupStart and ncclGroupEnd (one launch for all of them).
ncclResult_t grouped(const std::function<void(FirstError&)>& calls) {
  FirstError first;
  first(ncclGroupStart());
  if (!ok(first.rc)) return first.rc;
  calls(first);
  const ncclResult_t end = ncclGroupEnd();
  return ok(first.rc) ? end : first.rc;
}

// A CUDA event owned by an in-flight collective: marks its end on the communication stream.
class DoneEvent {
 public:
  DoneEvent() { GLOBE_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), "nccl"); }
  ~DoneEvent() { cudaEventDestroy(e_); }
  DoneEvent(const DoneEvent&) = delete;
  DoneEvent& operator=(const DoneEvent&) = delete;
  cudaEvent_t get() const { return e_; }
  // Never throws (the watchdog and the destructor ask): an error counts as not done.
  bool done() const { return cudaEventQuery(e_) == cudaSuccess; }

 private:
  cudaEvent_t e_ = nullptr;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi)
      : mpi_(mpi.get()), host_(std::make_unique<HostStagedCommunicator>(std::move(mpi), kPointToPointWhy, cuda_type())) {}
  ~NcclCommunicator() override;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const std::vector<int>& world_ranks() const override { return mpi_->world_ranks(); }
  uint64_t collectives_entered() const override { return mpi_->collectives_entered(); }

  void all_reduce_sum(const Tensor& t) override {
    if (!on_nccl(t, "all_reduce")) return host_->all_reduce_sum(t);
    order_compute_after(run_all_reduce(t));
  }
  // The compute stream waits for it only when the request is waited for: kernels queued in between
  // (the rest of backward) overlap with the reduction, as the contract allows (t is not touched).
  Request start_all_reduce_sum(const Tensor& t) override {
    if (!on_nccl(t, "all_reduce")) return host_->start_all_reduce_sum(t);
    return Request(std::make_shared<Started>(*this, run_all_reduce(t)));
  }
  void all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) override;
  // On the GPU the gather is queued on the NCCL stream and the compute stream waits for it (the
  // default: at once); host tensors take the MPI communicator's started one.
  Request start_all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) override {
    if (!on_nccl(out, "all_gather")) return host_->start_all_gather_v(local, out, counts);
    return Communicator::start_all_gather_v(local, out, counts);
  }
  void reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) override;
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                    const std::vector<int64_t>& recv_counts) override;
  void exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) override;
  void broadcast(const Tensor& t, int root) override {
    if (!on_nccl(t, "broadcast")) return host_->broadcast(t, root);
    order_compute_after(run("broadcast", {t}, [&](ncclComm_t c, cudaStream_t s) {
      return ncclBroadcast(at(t, 0), at(t, 0), size_t(t.numel()), nccl_type(t.dtype()), root, c, s);
    }));
  }
  Request isend(const Tensor& t, int peer, int tag) override { return host_->isend(t, peer, tag); }
  Request irecv(const Tensor& t, int peer, int tag) override { return host_->irecv(t, peer, tag); }
  void barrier() override { host_->barrier(); }
  void check_consistency(const std::string& what) override { host_->check_consistency(what); }

 private:
  // A started all-reduce: done once its event has passed; waiting orders the compute stream after it.
  class Started final : public Request::Impl {
   public:
    Started(NcclCommunicator& c, std::shared_ptr<DoneEvent> done) : c_(c), done_(std::move(done)) {}
    bool test() override {
      c_.reap();
      return done_->done();
    }
    void wait() override {
      c_.reap();
      c_.order_compute_after(done_);
    }

   private:
    NcclCommunicator& c_;
    std::shared_ptr<DoneEvent> done_;
  };

  struct InFlight {
    uint64_t seq;
    const char* op;
    Clock::time_point deadline;
    std::shared_ptr<DoneEvent> done;
    std::vector<Tensor> keep;  // alive until the collective has run (popped by reap, on this thread)
  };
  enum class Path { undecided, nccl, staged };

  // Whether t's collective goes over NCCL (deciding the group's path at its first GPU tensor).
  bool on_nccl(const Tensor& t, const char* op);
  void decide(const Device& device);
  void init_nccl(const Device& device);
  std::shared_ptr<DoneEvent> run_all_reduce(const Tensor& t) {
    return run("all_reduce", {t}, [&](ncclComm_t c, cudaStream_t s) {
      return ncclAllReduce(at(t, 0), at(t, 0), size_t(t.numel()), nccl_type(t.dtype()), ncclSum, c, s);
    });
  }
  // Checks the fingerprint, then enqueues `call` on the communication stream after the compute
  // stream's work; returns the event that marks its end.
  std::shared_ptr<DoneEvent> run(const char* op, std::vector<Tensor> keep,
                                 const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& call);
  // Later kernels on the compute stream run after `done` (on the device; the host goes on).
  void order_compute_after(const std::shared_ptr<DoneEvent>& done) {
    GLOBE_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute_stream(device_).handle), done->get(), 0),
                     "nccl");
  }
  // Waits (with the deadline) until NCCL has taken the last call of this non-blocking communicator.
  void settle(const char* op, uint64_t seq);
  // Drops the collectives that have run; throws for one that failed or outlived its deadline.
  void reap();
  // Aborts the NCCL communicator once (the program's thread or the watchdog, whichever is first).
  bool abort_comm();
  [[noreturn]] void fail(const std::string& message);
  void watchdog();
  std::string members() const { return mpi_->watch().members(); }

  MpiCommunicator* mpi_;                            // owned by host_
  std::unique_ptr<HostStagedCommunicator> host_;    // host tensors, point-to-point, staged collectives
  Path path_ = Path::undecided;
  Device device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::mutex mutex_;  // inflight_ and the abort, between the program's thread and the watchdog
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
  if (!aborted_) {
    // The host runs ahead of the GPU: the last collectives may still be running, and a peer may
    // still need this rank's part. Let them finish (within the deadline) before destroying.
    const Clock::time_point deadline = deadline_from_now();
    auto all_done = [&] {
      for (const InFlight& f : inflight_)
        if (!f.done->done()) return false;
      return true;
    };
    while (!all_done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (all_done()) ncclCommDestroy(comm_);
    else abort_comm();
  }
  inflight_.clear();
  cudaStreamDestroy(stream_);
}

bool NcclCommunicator::on_nccl(const Tensor& t, const char* op) {
  if (t.device().type != cuda_type()) return false;  // the host's, or another kind's: host-staged
  if (path_ == Path::undecided) decide(t.device());
  if (path_ == Path::staged) return false;
  GLOBE_CHECK(t.device() == device_, "[", op, "] the NCCL communicator of ranks ", members(), " runs on ",
              device_.str(), " (this rank's GPU), but the tensor is on ", t.device().str(),
              ": a rank's tensors of one placement live on one GPU");
  return true;
}

// Every member says (machine, GPU, may use NCCL); all compute the same path from the same list.
void NcclCommunicator::decide(const Device& device) {
  char bus[64] = {0};
  GLOBE_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device.index), "nccl");
  const char* env = std::getenv("GLOBE_NCCL");
  const char* multi = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  // NCCL refuses two ranks on one GPU before 2.30, and from 2.30 unless asked.
  const bool may_share = nccl_version_code() >= 23000 && multi && std::string(multi) == "1";
  const int p = size();
  Tensor mine = Tensor::uninitialized({3}, DType::int64), all = Tensor::uninitialized({3 * p}, DType::int64);
  int64_t* m = mine.data<int64_t>();
  m[0] = hash_of(host_identity());
  m[1] = hash_of(bus);
  m[2] = (env && std::string(env) == "0" ? 0 : 1) | (may_share ? 2 : 0);
  mpi_->all_gather_v(mine, all, std::vector<int64_t>(size_t(p), 3));
  const int64_t* a = all.data<int64_t>();
  std::string why;
  for (int i = 0; i < p && why.empty(); ++i) {
    if (!(a[3 * i + 2] & 1)) why = "rank " + std::to_string(world_ranks()[size_t(i)]) + " has GLOBE_NCCL=0";
    for (int j = 0; j < i && why.empty(); ++j)
      if (a[3 * i] == a[3 * j] && a[3 * i + 1] == a[3 * j + 1] && !(a[3 * i + 2] & a[3 * j + 2] & 2))
        why = "ranks " + std::to_string(world_ranks()[size_t(j)]) + " and " + std::to_string(world_ranks()[size_t(i)]) +
              " share one GPU, which NCCL " + nccl_version() +
              " refuses (NCCL 2.30 and later allow it with NCCL_MULTI_RANK_GPU_ENABLE=1)";
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
  device_ = device;
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, size(), id, rank(), &config);
  if (!ok(rc)) {
    if (comm_ != nullptr) abort_comm();
    fail(detail::concat("[nccl_init] creating the NCCL communicator of ranks ", members(), " on ", device.str(),
                        ": ", ncclGetErrorString(rc)));
  }
  settle("nccl_init", seq);
  GLOBE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "nccl_init");
  path_ = Path::nccl;
  if (rank() == 0)
    std::fprintf(stderr, "[globe] ranks %s: tensors on %s cross ranks over NCCL %s\n", members().c_str(),
                 device.str().c_str(), nccl_version().c_str());
  watchdog_ = std::thread([this] { watchdog(); });
}

void NcclCommunicator::settle(const char* op, uint64_t seq) {
  ncclResult_t state = ncclInProgress;
  mpi_->watch().wait(
      [&] {
        ncclCommGetAsyncError(comm_, &state);
        return state != ncclInProgress;
      },
      op, seq, [&] { abort_comm(); });
  if (state != ncclSuccess) {
    const std::string detail = ncclGetLastError(comm_);
    abort_comm();
    fail(detail::concat("[", op, "] collective #", seq, " on ranks ", members(), ": NCCL failed: ",
                        ncclGetErrorString(state), detail.empty() ? "" : " (" + detail + ")"));
  }
}

std::shared_ptr<DoneEvent> NcclCommunicator::run(const char* op, std::vector<Tensor> keep,
                                                 const std::function<ncclResult_t(ncclComm_t, cudaStream_t)>& call) {
  reap();
  const uint64_t seq = mpi_->begin_collective();
  // The fingerprint first: ranks that diverged throw before any kernel is queued.
  MpiCommunicator::Stamps side;
  mpi_->start_side(side, fingerprints(), op);
  side.finish(/*pending=*/false);
  const cudaStream_t compute = static_cast<cudaStream_t>(compute_stream(device_).handle);  // device_ current
  DoneEvent ready;
  GLOBE_CUDA_CHECK(cudaEventRecord(ready.get(), compute), op);
  GLOBE_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready.get(), 0), op);
  if (const ncclResult_t rc = call(comm_, stream_); !ok(rc)) {
    const std::string detail = ncclGetLastError(comm_);
    abort_comm();
    fail(detail::concat("[", op, "] collective #", seq, " on ranks ", members(), ": NCCL error: ",
                        ncclGetErrorString(rc), detail.empty() ? "" : " (" + detail + ")"));
  }
  settle(op, seq);
  auto done = std::make_shared<DoneEvent>();
  GLOBE_CUDA_CHECK(cudaEventRecord(done->get(), stream_), op);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inflight_.push_back(InFlight{seq, op, deadline_from_now(), done, std::move(keep)});
  }
  return done;
}

void NcclCommunicator::reap() {
  if (aborted_) fail(abort_message_.empty() ? "[nccl] this group's NCCL communicator was aborted" : abort_message_);
  if (comm_ == nullptr) return;
  const char* late_op = nullptr;  // the oldest collective in flight, when it outlived its deadline
  uint64_t late_seq = 0;
  ncclResult_t state = ncclSuccess;
  std::deque<InFlight> finished;  // destroyed after the lock: tensors' destructors take other locks
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!inflight_.empty() && inflight_.front().done->done()) {
      finished.push_back(std::move(inflight_.front()));
      inflight_.pop_front();
    }
    if (!inflight_.empty() && Clock::now() > inflight_.front().deadline)
      late_op = inflight_.front().op, late_seq = inflight_.front().seq;
    ncclCommGetAsyncError(comm_, &state);
  }
  if (!ok(state)) {
    const std::string detail = ncclGetLastError(comm_);
    abort_comm();
    fail(detail::concat("[nccl] a collective on ranks ", members(), " failed: ", ncclGetErrorString(state),
                        detail.empty() ? "" : " (" + detail + ")"));
  }
  if (late_op != nullptr) {
    abort_comm();
    if (std::string gone = mpi_->watch().member_gone(late_op, late_seq); !gone.empty()) fail(gone);
    // The members are blocked behind their GPUs, not in a roll call: say what is known.
    fail(detail::concat("[", late_op, "] collective #", late_seq, " on ranks ", members(), " did not complete on ",
                        device_.str(), " within ", timeout_seconds(), " s",
                        fingerprints() ? " although every member entered it (its fingerprint was checked)"
                                       : " (a member may not have entered it)",
                        " (GLOBE_TIMEOUT sets the limit)"));
  }
}

bool NcclCommunicator::abort_comm() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.exchange(true)) return false;
  ncclCommAbort(comm_);
  return true;
}

void NcclCommunicator::fail(const std::string& message) {
  if (abort_message_.empty()) abort_message_ = message;
  mark_broken("a NCCL collective was abandoned");
  GLOBE_FAIL(message);
}

// Once a second: a collective NCCL reports failed, or one a second past its deadline that the
// program has not noticed (it waits on the host for the stuck stream), aborts the communicator
// and ends the process with the reason. It only reads the list (reap() pops it, on the program's
// thread) and never touches MPI (it serves one thread).
void NcclCommunicator::watchdog() {
  try {
    GLOBE_CUDA_CHECK(cudaSetDevice(device_.index), "nccl_watchdog");
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      if (aborted_) return;  // the program's thread aborted it and reports why
      const InFlight* oldest = nullptr;
      for (const InFlight& f : inflight_)
        if (!f.done->done()) {
          oldest = &f;
          break;
        }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      const bool failed = !ok(state);
      const bool late = oldest != nullptr && Clock::now() > oldest->deadline + std::chrono::seconds(1);
      if (!failed && !late) continue;
      const std::string why =
          failed ? detail::concat("NCCL failed: ", ncclGetErrorString(state))
                 : detail::concat("collective #", oldest->seq, " (", oldest->op, ") did not complete on ", device_.str(),
                                  " within ", timeout_seconds(), " s (GLOBE_TIMEOUT sets the limit)");
      aborted_ = true;
      ncclCommAbort(comm_);
      std::fprintf(stderr, "[globe] rank %d: the NCCL communicator of ranks %s: %s; this rank stops\n", world_rank(),
                   members().c_str(), why.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[globe] rank %d: NCCL watchdog: %s; this rank stops\n", world_rank(), e.what());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

void NcclCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  if (!on_nccl(out, "all_gather")) return host_->all_gather_v(local, out, counts);
  GLOBE_CHECK(int(counts.size()) == size() && local.numel() == counts[size_t(rank())] && local.dtype() == out.dtype(),
              "[all_gather] counts or dtypes do not match: local ", describe(local), " into ", describe(out), " for ",
              counts.size(), " members");
  const ncclDataType_t type = nccl_type(out.dtype());
  order_compute_after(run("all_gather", {local, out}, [&](ncclComm_t c, cudaStream_t s) {
    if (all_equal(counts)) return ncclAllGather(at(local, 0), at(out, 0), size_t(counts[0]), type, c, s);
    // Uneven pieces: each member's is broadcast from it, all in one group.
    const std::vector<int64_t> start = starts_of(counts);
    return grouped([&](FirstError& first) {
      for (int r = 0; r < size(); ++r)
        if (counts[size_t(r)] > 0)
          first(ncclBroadcast(r == rank() ? at(local, 0) : nullptr, at(out, start[size_t(r)]), size_t(counts[size_t(r)]),
                              type, r, c, s));
    });
  }));
}

void NcclCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  if (!on_nccl(in, "reduce_scatter")) return host_->reduce_scatter_v(in, out, counts);
  GLOBE_CHECK(int(counts.size()) == size() && out.numel() == counts[size_t(rank())] && in.dtype() == out.dtype(),
              "[reduce_scatter] counts or dtypes do not match: ", describe(in), " into ", describe(out), " for ",
              counts.size(), " members");
  const ncclDataType_t type = nccl_type(in.dtype());
  order_compute_after(run("reduce_scatter", {in, out}, [&](ncclComm_t c, cudaStream_t s) {
    if (all_equal(counts)) return ncclReduceScatter(at(in, 0), at(out, 0), size_t(counts[0]), type, ncclSum, c, s);
    // Uneven chunks: chunk r is reduced onto member r, all in one group.
    const std::vector<int64_t> start = starts_of(counts);
    return grouped([&](FirstError& first) {
      for (int r = 0; r < size(); ++r)
        if (counts[size_t(r)] > 0)
          first(ncclReduce(at(in, start[size_t(r)]), r == rank() ? at(out, 0) : nullptr, size_t(counts[size_t(r)]),
                           type, ncclSum, r, c, s));
    });
  }));
}

void NcclCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                                    const std::vector<int64_t>& recv_counts) {
  if (!on_nccl(send, "all_to_all")) return host_->all_to_all_v(send, send_counts, recv, recv_counts);
  GLOBE_CHECK(int(send_counts.size()) == size() && int(recv_counts.size()) == size() && send.dtype() == recv.dtype(),
              "[all_to_all] counts or dtypes do not match: ", describe(send), " and ", describe(recv), " for ",
              size(), " members");
  const ncclDataType_t type = nccl_type(send.dtype());
  const std::vector<int64_t> ss = starts_of(send_counts), rs = starts_of(recv_counts);
  order_compute_after(run("all_to_all", {send, recv}, [&](ncclComm_t c, cudaStream_t s) {
    return grouped([&](FirstError& first) {
      for (int r = 0; r < size(); ++r) {
        const size_t i = size_t(r);
        if (send_counts[i] > 0) first(ncclSend(at(send, ss[i]), size_t(send_counts[i]), type, r, c, s));
        if (recv_counts[i] > 0) first(ncclRecv(at(recv, rs[i]), size_t(recv_counts[i]), type, r, c, s));
      }
    });
  }));
}

// A piece of the wrong size is not detected here as it is over MPI (NCCL receives no count): the
// pieces' sizes follow from the layouts every member computes alike.
void NcclCommunicator::exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) {
  const int p = size();
  // Every piece that crosses is a tensor (0 elements for nothing, as over MPI), so every member has
  // one to choose the path by and takes part in the group's decision (decide() is collective): a
  // member that skipped it would leave the others waiting.
  check_exchange_pieces(send, recv, p, rank());
  if (p == 1 || !on_nccl(send[size_t((rank() + 1) % p)], "exchange")) return host_->exchange(send, recv);
  std::vector<Tensor> keep;
  for (int s = 0; s < p; ++s)
    if (s != rank()) keep.insert(keep.end(), {send[size_t(s)], recv[size_t(s)]});
  order_compute_after(run("exchange", keep, [&](ncclComm_t c, cudaStream_t st) {
    return grouped([&](FirstError& first) {
      for (int k = 1; k < p; ++k) {
        const int s = (rank() + k) % p;
        const Tensor &out = send[size_t(s)], &in = recv[size_t(s)];
        if (out.numel() > 0) first(ncclSend(at(out, 0), size_t(out.numel()), nccl_type(out.dtype()), s, c, st));
        if (in.numel() > 0) first(ncclRecv(at(in, 0), size_t(in.numel()), nccl_type(in.dtype()), s, c, st));
      }
    });
  }));
}

}  // namespace

namespace cuda {
GroupCommunicatorFactory group_communicator_factory() {
  return [](std::unique_ptr<MpiCommunicator> mpi) -> std::unique_ptr<Communicator> {
    return std::make_unique<NcclCommunicator>(std::move(mpi));
  };
}
}  // namespace cuda

}  // namespace globe::dist

#else  // a CUDA build where CMake found no NCCL

namespace globe::dist::cuda {

GroupCommunicatorFactory group_communicator_factory() {
  return [](std::unique_ptr<MpiCommunicator> mpi) -> std::unique_ptr<Communicator> {
    return std::make_unique<HostStagedCommunicator>(std::move(mpi), "this build has no NCCL (CMake did not find it)",
                                                    parse_device_type("cuda"));
  };
}

}  // namespace globe::dist::cuda

#endif
