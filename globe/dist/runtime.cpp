#include "globe/dist/runtime.h"

#include <mpi.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <thread>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "globe/dist/group_communicator.h"
#include "globe/dist/local_communicator.h"
#include "globe/dist/mpi_communicator.h"
#include "globe/dist/staged_communicator.h"
#include "globe/dist/traced_communicator.h"
#include "globe/base/trace.h"

namespace globe::dist {

namespace {

// The current WaitingFor text, for the signal handler (which may not allocate).
char g_waiting_line[512] = {0};
thread_local std::string t_waiting;

// A rank stopped (mpirun's SIGTERM after another rank failed) while it waits says what it waited
// for, then dies of the signal as it would have.
void report_wait_and_die(int sig) {
  if (g_waiting_line[0]) [[maybe_unused]] ssize_t n = ::write(2, g_waiting_line, std::strlen(g_waiting_line));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A rank dying of an uncaught exception tells the others before it goes (terminate_with_notice):
// a rank blocked in a wait then says what it waited for while it can still print (once the
// launcher stops the job, its output may be cut off).
MPI_Comm g_notice_comm = MPI_COMM_NULL;
constexpr int kNoticeTag = 0x6c0c0;
std::terminate_handler g_prev_terminate = nullptr;

// A notice is uint64 words: kind, the sender's rank, then for kLeft pairs of (communicator id,
// collectives entered on it).
enum NoticeKind : uint64_t { kFailed = 0, kLeft = 1 };

// Ranks that ended their program normally, as their notices said.
struct LeftRank {
  std::chrono::steady_clock::time_point heard;
  std::map<uint64_t, uint64_t> collectives;  // communicator id -> collectives entered
};
std::map<int, LeftRank> g_left;

// Every communicator's id: FNV-1a of its members' world ranks.
uint64_t group_id(const std::vector<int>& ranks) {
  uint64_t id = 1469598103934665603ull;
  for (int r : ranks) id = (id ^ uint64_t(r)) * 1099511628211ull;
  return id;
}

// Sends `notice` to every other rank; the requests, to test or free.
std::vector<MPI_Request> send_notice(std::vector<uint64_t>& notice) {
  int me = 0, n = 1;
  MPI_Comm_rank(g_notice_comm, &me);
  MPI_Comm_size(g_notice_comm, &n);
  std::vector<MPI_Request> reqs;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    reqs.emplace_back();
    MPI_Isend(notice.data(), int(notice.size()), MPI_UINT64_T, r, kNoticeTag, g_notice_comm, &reqs.back());
  }
  return reqs;
}

// Tells every other rank that this one is going (once), and gives them a moment to say what they
// were waiting for.
void notify_peers_of_failure() {
  static bool once = false;
  if (!once && g_notice_comm != MPI_COMM_NULL) {
    once = true;
    int me = 0;
    MPI_Comm_rank(g_notice_comm, &me);
    static std::vector<uint64_t> notice;
    notice = {kFailed, uint64_t(me)};
    std::vector<MPI_Request> reqs = send_notice(notice);
    // Long enough for a waiting rank to notice and print; short next to any launcher timeout.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
      int done = 0;
      if (!reqs.empty()) MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

void terminate_with_notice() {
  notify_peers_of_failure();
  if (g_prev_terminate) g_prev_terminate();
  std::abort();
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

// Started by mpirun / globe-launch / srun (PMI)?
bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}

// torchrun's way, RANK and WORLD_SIZE set by hand on plain processes, would give each process a
// world of its own, training apart without a word: refused, saying what to run instead.
void refuse_hand_set_world() {
  const char* rank = std::getenv("RANK");
  const char* size = std::getenv("WORLD_SIZE");
  const bool set = (rank && std::string(rank) != "0") || (size && std::string(size) != "1");
  if (!set) return;
  const std::string n = size ? size : "N";
  GLOBE_FAIL("RANK=", rank ? rank : "(unset)", " and WORLD_SIZE=", size ? size : "(unset)",
             " are set, but this process was not started by globe-launch (nor by mpirun or srun): Globe takes the "
             "ranks from its launcher, not from these variables, and this process would run alone, as a world of 1 "
             "rank. Start every rank with one command: globe-launch --nproc_per_node ",
             n, " PROGRAM (Python: python3 -m globe.launch --nproc_per_node ", n,
             " script.py); on several machines run it on each with --nnodes, --node_rank and --master_addr");
}

class Runtime {
 public:
  Runtime() {
    consistency_ = env_flag("GLOBE_CHECK_CONSISTENCY");
    if (const char* f = std::getenv("GLOBE_FINGERPRINTS")) fingerprints_ = std::string(f) != "0";
    if (const char* t = std::getenv("GLOBE_TIMEOUT")) timeout_ = std::atof(t);
    if (!launched_by_mpi()) {
      refuse_hand_set_world();
      return;
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
      owns_mpi_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // Errors come back as codes we turn into exceptions, not MPI aborts.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    globe::detail::set_error_rank(rank_);
    trace::set_rank(rank_);
    if (size_ > 1) {
      g_notice_comm = MPI_COMM_WORLD;  // its own tag; no collective needed to set it up
      g_prev_terminate = std::set_terminate(terminate_with_notice);
    }
    // Only where the program has no SIGTERM handler of its own.
    if (auto prev = std::signal(SIGTERM, report_wait_and_die); prev != SIG_DFL) std::signal(SIGTERM, prev);
  }
  ~Runtime() {
    if (!broken_) {
      try {
        finish_sends();
      } catch (const std::exception&) {
        broken_ = true;  // a receiver never came: finalising would wait for it forever
      }
    }
    if (!broken_ && g_notice_comm != MPI_COMM_NULL) notify_peers_of_leaving();
    sends_.clear();
    groups_.clear();  // free communicators before MPI goes away
    if (owns_mpi_ && !broken_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    } else if (owns_mpi_) {
      // Said, because a launcher may count a rank that skips MPI_Finalize as failed.
      std::fprintf(stderr,
                   "[globe] rank %d ends without MPI_Finalize: %s, and finalizing would wait for the ranks "
                   "that never came\n",
                   rank_, broken_why_.c_str());
    }
  }

  Communicator& group(const std::vector<int>& ranks) {
    auto it = groups_.find(ranks);
    if (it != groups_.end()) return *it->second;
    int me = -1;
    for (size_t i = 0; i < ranks.size(); ++i) {
      GLOBE_CHECK(ranks[i] >= 0 && ranks[i] < size_, "[group] rank ", ranks[i], " is outside the world of ",
                  size_, " ranks");
      if (ranks[i] == rank_) me = int(i);
    }
    GLOBE_CHECK(me >= 0, "[group] rank ", rank_, " asked for a communicator it is not a member of");
    std::unique_ptr<Communicator> comm;
    if (ranks.size() > 1) handshake(ranks, me);
    if (ranks.size() == 1) {
      comm = std::make_unique<HostStagedCommunicator>(std::make_unique<LocalCommunicator>(rank_), "");
    } else {
      MPI_Group world_group, sub_group;
      MPI_Comm_group(MPI_COMM_WORLD, &world_group);
      MPI_Group_incl(world_group, int(ranks.size()), ranks.data(), &sub_group);
      MPI_Comm sub;
      check_mpi(MPI_Comm_create_group(MPI_COMM_WORLD, sub_group, /*tag=*/0x6c0be, &sub), "comm_create");
      MPI_Group_free(&sub_group);
      MPI_Group_free(&world_group);
      MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
      comm = std::make_unique<TracedCommunicator>(make_group_communicator(std::make_unique<MpiCommunicator>(sub, ranks)));
    }
    return *groups_.emplace(ranks, std::move(comm)).first->second;
  }

  // Communicator creation blocks until every member calls it; first every member checks in with
  // every other over point-to-point, with the deadline, so a member that never comes (or creates
  // another group at this point) is an error naming it rather than a hang.
  void handshake(const std::vector<int>& ranks, int me) {
    const uint64_t id = group_id(ranks);
    std::vector<char> mine(sizeof id);
    std::memcpy(mine.data(), &id, sizeof id);
    const RollCall call = roll_call(MPI_COMM_WORLD, ranks, ranks, me, kGroupTag, mine, deadline_from_now());
    std::string list, other;
    for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
    for (size_t i = 0; i < ranks.size(); ++i)
      if (!call.heard[i].empty() && call.heard[i] != mine) other += (other.empty() ? "" : ", ") + std::to_string(ranks[i]);
    const bool left = call.missing.find("ended its program") != std::string::npos;
    if (!call.missing.empty()) {
      broken_ = true;  // abandoned sends: MPI_Finalize would wait for them
      if (left) broken_why_ = "a rank ended its program while this one waited for it";
    }
    GLOBE_CHECK(call.missing.empty(), "[group] creating the communicator of ranks [", list, "]: ranks [", call.missing,
                "] did not arrive",
                left ? std::string(". ") + kRanksRanDifferentCollectives : detail::concat(" within ", timeout_, " s (GLOBE_TIMEOUT sets the limit)"));
    GLOBE_CHECK(other.empty(), "[group] creating the communicator of ranks [", list, "]: ranks [", other,
                "] are creating a different one at this point (the ranks diverged)");
  }

  // This rank ends its program: a peer still waiting in a collective this rank never entered
  // fails at once (collectives_before_leaving). Small messages, sent eagerly: MPI_Finalize does
  // not wait for a peer to receive them.
  void notify_peers_of_leaving() {
    std::vector<uint64_t> notice = {kLeft, uint64_t(rank_)};
    for (const auto& [ranks, comm] : groups_) {
      if (ranks.size() > 1) notice.insert(notice.end(), {group_id(ranks), comm->collectives_entered()});
    }
    for (MPI_Request& r : send_notice(notice)) MPI_Wait(&r, MPI_STATUS_IGNORE);
  }

  void finish_sends() {
    while (!sends_.empty()) {
      sends_.front().wait();
      sends_.erase(sends_.begin());
    }
  }

  static constexpr int kGroupTag = 0x6c0bf;
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false;
  bool broken_ = false;
  std::string broken_why_ = "a collective timed out earlier";
  bool consistency_ = false;
  bool fingerprints_ = true;
  double timeout_ = 300.0;
  std::map<std::vector<int>, std::unique_ptr<Communicator>> groups_;
  std::vector<Request> sends_;  // in flight, oldest first (send_later)
};

Runtime& runtime() {
  static Runtime r;
  return r;
}

}  // namespace

void exit_after_failure(int code) {
  (void)runtime();  // the notice channel is set up with it
  notify_peers_of_failure();
  std::fflush(nullptr);
  std::_Exit(code);
}

int world_rank() { return runtime().rank_; }
int world_size() { return runtime().size_; }
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}
bool is_distributed() { return runtime().size_ > 1; }
Communicator& group(const std::vector<int>& ranks) { return runtime().group(ranks); }
double timeout_seconds() { return runtime().timeout_; }
bool consistency_checks() { return runtime().consistency_; }
void mark_broken(const char* why) {
  if (!runtime().broken_ && why) runtime().broken_why_ = why;
  runtime().broken_ = true;
}
void finish_sends() { runtime().finish_sends(); }

namespace {
// Makes `what` the current wait, and the line the SIGTERM handler prints ("" clears it).
void set_waiting(const std::string& what) {
  t_waiting = what;
  if (what.empty()) g_waiting_line[0] = 0;
  else std::snprintf(g_waiting_line, sizeof g_waiting_line, "[globe] rank %d was stopped while waiting for %s\n",
                     runtime().rank_, what.c_str());
}
}  // namespace

WaitingFor::WaitingFor(const std::string& what) : prev_(t_waiting) { set_waiting(what); }
WaitingFor::~WaitingFor() { set_waiting(prev_); }
std::string waiting_for() { return t_waiting; }

void check_failure_notice() {
  if (g_notice_comm == MPI_COMM_NULL) return;
  for (;;) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, g_notice_comm, &flag, &status);
    if (!flag) return;
    int words = 0;
    MPI_Get_count(&status, MPI_UINT64_T, &words);
    std::vector<uint64_t> notice(size_t(std::max(words, 2)), 0);
    MPI_Recv(notice.data(), words, MPI_UINT64_T, status.MPI_SOURCE, kNoticeTag, g_notice_comm, MPI_STATUS_IGNORE);
    const int from = int(notice[1]);
    if (notice[0] == kLeft) {
      LeftRank& left = g_left[from];
      left.heard = std::chrono::steady_clock::now();
      for (size_t i = 2; i + 1 < notice.size(); i += 2) left.collectives[notice[i]] = notice[i + 1];
      continue;
    }
    std::string line = "[globe] rank " + std::to_string(runtime().rank_) + " was stopped while waiting for " +
                       (t_waiting.empty() ? std::string("a transfer") : t_waiting) + ": rank " + std::to_string(from) +
                       " failed\n";
    [[maybe_unused]] ssize_t n = ::write(2, line.data(), line.size());
    g_waiting_line[0] = 0;  // said once
  }
}

std::optional<uint64_t> collectives_before_leaving(int rank, const std::vector<int>& ranks) {
  const auto it = g_left.find(rank);
  if (it == g_left.end()) return std::nullopt;
  const auto c = it->second.collectives.find(group_id(ranks));
  return c == it->second.collectives.end() ? 0 : c->second;
}

bool left_longer_than(int rank, double grace_s) {
  const auto it = g_left.find(rank);
  return it != g_left.end() &&
         std::chrono::steady_clock::now() - it->second.heard > std::chrono::milliseconds(int64_t(grace_s * 1000));
}

void send_later(Request send) {
  auto& sends = runtime().sends_;
  std::erase_if(sends, [](Request& r) { return r.test(); });
  if (!send.test()) sends.push_back(std::move(send));
}
void set_consistency_checks(bool on) { runtime().consistency_ = on; }
bool fingerprints() { return runtime().fingerprints_; }
void set_fingerprints(bool on) { runtime().fingerprints_ = on; }

}  // namespace globe::dist
