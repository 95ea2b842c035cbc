#include "parent.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "node_group.h"
#include "output_channel.h"
#include "trace_merge.h"

extern char** environ;

namespace globe_launch {
namespace {

// Signals the launcher handles synchronously (sigtimedwait) while mpirun runs.
constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};
// After asking mpirun to stop, give it this long before SIGKILL. Killing mpirun is safe: every
// per-rank process dies with it (PR_SET_PDEATHSIG), and every program with its per-rank process.
constexpr double kStopGraceS = 5.0;
// Once every rank has ended, or one has failed (mpirun then stops the others), mpirun gets this
// long to exit; then it is killed. Open MPI 4.1's mpirun can deadlock in its own teardown
// (PMIx_server_finalize, when a rank waited in MPI_Finalize's fence while the job was aborted);
// the job is over by then, and its status is the ranks'.
constexpr double kTeardownGraceS = 5.0;
// How often the launcher looks whether every rank has ended.
constexpr double kEndPollS = 0.2;
constexpr double kNever = std::numeric_limits<double>::infinity();

std::string absolute_path(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char buf[4096];
  if (::getcwd(buf, sizeof(buf)) == nullptr) return p;
  return std::string(buf) + "/" + p;
}

std::vector<std::string> mpirun_argv(const LaunchOptions& o, const std::string& run_dir,
                                     const std::string& logdir, const std::string& output_channel) {
  std::vector<std::string> v = {o.mpirun, "--oversubscribe", "--bind-to", "none"};
  if (!o.hosts.empty()) {
    v.insert(v.end(), {"--host", o.hosts, "-np", std::to_string(*o.np)});
  } else if (!o.hostfile.empty()) {
    v.insert(v.end(), {"--hostfile", o.hostfile});
    if (o.np) v.insert(v.end(), {"-np", std::to_string(*o.np)});
    if (o.nproc_per_node_given) v.insert(v.end(), {"--npernode", std::to_string(o.nproc_per_node)});
  } else {
    v.insert(v.end(), {"-np", std::to_string(o.nproc_per_node)});
  }
  // Our defaults give way to the user's choice, on the command line or in the environment
  // (mpirun also refuses a parameter given twice).
  auto user_set = [&o](const std::string& key) {
    return std::getenv(("OMPI_MCA_" + key).c_str()) != nullptr ||
           std::any_of(o.mca.begin(), o.mca.end(), [&](const auto& kv) { return kv.first == key; });
  };
  // Without this mpirun waits ~1 s between SIGTERM and SIGKILL when it stops the other ranks.
  if (!user_set("odls_base_sigkill_timeout"))
    v.insert(v.end(), {"--mca", "odls_base_sigkill_timeout", "0"});
  // ob1 halves start-up by skipping UCX probing (docs/design.md, Platform notes).
  if (!user_set("pml")) v.insert(v.end(), {"--mca", "pml", "ob1"});
  // A program may end without MPI_Finalize on purpose (Globe skips it after a collective timed
  // out, as finalizing would wait for the ranks that never came). By default mpirun then stops
  // the other ranks and exits 1 whatever the program returned; with this, each rank ends as its
  // program decides and the job's status is theirs.
  if (!user_set("orte_allowed_exit_without_sync"))
    v.insert(v.end(), {"--mca", "orte_allowed_exit_without_sync", "1"});
  // Remote hosts are reached with ssh: an unreachable one fails in seconds (ssh alone waits for
  // the TCP timeout, minutes), and one that asks for a password fails instead of waiting for it.
  if ((!o.hosts.empty() || !o.hostfile.empty()) && !user_set("plm_rsh_agent") && !user_set("plm_rsh_args"))
    v.insert(v.end(), {"--mca", "plm_rsh_args", "-o ConnectTimeout=10 -o BatchMode=yes"});
  for (const auto& [key, value] : o.mca) v.insert(v.end(), {"--mca", key, value});
  // mpirun copies the whole environment to local ranks, but remote ranks only get what -x names.
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (name == "PATH" || name == "LD_LIBRARY_PATH" || name == "OMP_NUM_THREADS" ||
        name == "OPENBLAS_NUM_THREADS" || name.rfind("GLOBE_", 0) == 0) {
      v.insert(v.end(), {"-x", name});
    }
  }
  for (const auto& var : o.export_env) v.insert(v.end(), {"-x", var});

  v.insert(v.end(), {self_exe_path(), kRankChildFlag, "--run-dir", run_dir});
  if (!output_channel.empty()) v.insert(v.end(), {"--output-channel", output_channel});
  if (o.no_prefix) v.emplace_back("--no-prefix");
  if (!logdir.empty()) v.insert(v.end(), {"--logdir", logdir});
  v.emplace_back("--");
  v.insert(v.end(), o.program.begin(), o.program.end());
  return v;
}

// How one start of the job ended: the launcher's exit code, and whether --max-restarts may start
// it again (a rank failed, or mpirun did; not a signal to globe-launch nor --timeout).
struct JobEnd {
  int exit_code;
  bool restartable;
};

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

// One start of every rank through mpirun, to its end.
JobEnd run_job(const LaunchOptions& o, const std::string& logdir, double timeout_at) {
  // Block the handled signals first, so a Ctrl-C from here on is always handled by the loop
  // below (and the run directory always removed).
  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int sig : kHandled) sigaddset(&handled, sig);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);

  // The run directory is where ranks record failures (see record_failure()).
  const char* tmp = std::getenv("TMPDIR");
  std::string run_dir =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/globe-launch.XXXXXX";
  if (::mkdtemp(run_dir.data()) == nullptr) {
    say("cannot create a run directory in " + run_dir + ": " + std::strerror(errno));
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return {1, false};
  }

  // A reader that goes away (`globe-launch ... | head`) must not kill the launcher by SIGPIPE:
  // mpirun and the ranks would be left without the launcher that stops them and reaps them, still
  // holding the caller's stderr open. Writes to a closed stdout fail instead, and the output is
  // dropped while the job runs to its end.
  ::signal(SIGPIPE, SIG_IGN);

  // The ranks' output comes back over our own channel, so that lines stay whole (output_channel.h).
  // Started with the handled signals blocked: its thread must never take them.
  std::string channel_error;
  // Ranks on other hosts connect back by the name or address those hosts know this one by.
  const std::string host_for_ranks =
      o.nnodes > 1 ? o.master_addr : (!o.hosts.empty() || !o.hostfile.empty()) ? host_name() : "";
  std::unique_ptr<OutputServer> output = OutputServer::listen(host_for_ranks, run_dir, channel_error);
  if (output && !output->make_local_pipes(channel_error)) output.reset();
  if (output) {
    output->start();
  } else {
    say(channel_error + "; ranks write through mpirun, and lines may break under load");
  }
  const std::vector<std::string> args = mpirun_argv(o, run_dir, logdir, output ? output->address() : "");
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  // Containers and CI run as root; mpirun refuses root without these.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);

  const pid_t self = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    output.reset();
    say(std::string("fork: ") + std::strerror(errno));
    remove_flat_dir(run_dir);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return {1, false};
  }
  if (pid == 0) {
    // If the launcher is SIGKILLed, mpirun gets SIGTERM and stops the job.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != self) ::_exit(1);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::signal(SIGPIPE, SIG_DFL);  // ignored dispositions would survive exec
    if (output) {  // mpirun's own messages go through the output thread, in order (output_channel.h)
      ::dup2(output->local_pipe_writer(1), STDOUT_FILENO);
      ::dup2(output->local_pipe_writer(2), STDERR_FILENO);
    }
    ::execvp(argv[0], argv.data());
    write_all(STDERR_FILENO,
              std::string("globe-launch: cannot run mpirun: ") + std::strerror(errno) + "\n");
    ::_exit(127);
  }
  if (output) output->close_local_writers();  // mpirun holds them: its exit ends the pipes

  double kill_at = kNever;
  int stop_signal = 0;
  bool timed_out = false;
  bool teardown_hung = false;
  int status = 0;
  // Ranks whose end (or first failure) the run directory shows: all of them when they run on this host.
  const int local_ranks = o.hosts.empty() && o.hostfile.empty() ? o.nproc_per_node : 0;
  double all_ended_at = kNever;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno == ECHILD)) break;
    const double t = now_s();
    if (local_ranks > 0 && all_ended_at == kNever &&
        (count_ended(run_dir) >= local_ranks || read_first_failure(run_dir)))
      all_ended_at = t;
    if (!teardown_hung && t >= all_ended_at + kTeardownGraceS) {
      teardown_hung = true;
      ::kill(pid, SIGKILL);
    }
    if (!timed_out && stop_signal == 0 && t >= timeout_at) {
      timed_out = true;
      ::kill(pid, SIGTERM);  // mpirun stops every rank and exits
      kill_at = t + kStopGraceS;
    }
    if (t >= kill_at) {
      ::kill(pid, SIGKILL);
      kill_at = kNever;
    }
    double wake = kill_at;
    if (!timed_out && stop_signal == 0) wake = std::min(wake, timeout_at);
    if (local_ranks > 0 && !teardown_hung)
      wake = std::min(wake, all_ended_at == kNever ? t + kEndPollS : all_ended_at + kTeardownGraceS);
    siginfo_t info{};
    int sig;
    if (wake == kNever) {
      sig = ::sigwaitinfo(&handled, &info);
    } else {
      const double left = std::max(0.0, wake - t) + 0.001;
      timespec ts{static_cast<time_t>(left), static_cast<long>((left - std::floor(left)) * 1e9)};
      sig = ::sigtimedwait(&handled, &info, &ts);
    }
    if (sig <= 0 || sig == SIGCHLD) continue;  // timeout, EINTR, or mpirun changed state
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      if (stop_signal == 0) stop_signal = sig;
      kill_at = std::min(kill_at, now_s() + kStopGraceS);
      // A Ctrl-C typed at the terminal (si_code SI_KERNEL) reached mpirun directly, being in our
      // process group; sending it again would count as mpirun's second Ctrl-C, on which it quits
      // at once instead of stopping its ranks in order.
      if (info.si_code != SI_KERNEL) ::kill(pid, sig == SIGHUP ? SIGTERM : sig);
    } else {
      ::kill(pid, sig);  // SIGUSR1/2: mpirun passes them on to every rank
    }
  }
  // Every rank has ended; what they wrote may still be on its way. Our own messages come after it.
  if (output) output->finish(kStopGraceS);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  const auto failure = read_first_failure(run_dir);
  const auto same_error = same_error_summary(run_dir);
  remove_flat_dir(run_dir);
  if (stop_signal != 0) {
    say(std::string("got SIG") + sigabbrev_np(stop_signal) + "; stopped all ranks");
    return {128 + stop_signal, false};
  }
  if (timed_out) {
    say("job timed out after " + format_seconds(o.timeout_s) + " s (--timeout); stopped all ranks");
    return {124, false};
  }
  if (failure) {
    if (same_error) say(*same_error);
    say("rank " + std::to_string(failure->rank) + " failed first: " + failure->describe());
    return {failure->launcher_exit_code(), true};
  }
  if (teardown_hung) return {0, false};  // every rank ended well; only mpirun's teardown hung
  if (WIFSIGNALED(status)) {
    say("mpirun died by " + describe_signal(WTERMSIG(status)));
    return {128 + WTERMSIG(status), true};
  }
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (rc != 0) {
    // Typically MPI_Abort (mpirun kills the aborting rank's wrapper before it can record
    // anything) or an error of mpirun's own (bad hostfile, unreachable host).
    say("mpirun exited with code " + std::to_string(rc) +
        " before any rank recorded a failure (a rank's MPI_Abort, or mpirun's own error: see "
        "its messages above)");
  }
  return {rc, rc != 0};
}

// Every start of the job, to the end of the last one; the launcher's exit code.
int run_starts(const LaunchOptions& o) {
  if (const auto bad = check_executable(o.program[0])) {
    say("cannot run '" + o.program[0] + "': " + bad->why);
    return bad->exit_code;
  }
  if (const auto bad = check_executable(o.mpirun)) {
    say("cannot run mpirun '" + o.mpirun + "': " + bad->why + "; install openmpi-bin or pass --mpirun PATH");
    return 127;
  }
  std::string logdir;
  if (!o.logdir.empty()) {
    logdir = absolute_path(o.logdir);  // ranks may start in another directory on other hosts
    if (!make_dirs(logdir)) {
      say("cannot create log directory '" + logdir + "': " + std::strerror(errno));
      return 1;
    }
  }

  std::string trace_dir;
  if (!o.trace_dir.empty()) {
    trace_dir = absolute_path(o.trace_dir);
    if (!make_dirs(trace_dir)) {
      say("cannot create trace directory '" + trace_dir + "': " + std::strerror(errno));
      return 1;
    }
    ::setenv("GLOBE_TRACE_DIR", trace_dir.c_str(), 1);  // a GLOBE_ variable: every rank gets it
  }

  const double timeout_at = o.timeout_s > 0 ? now_s() + o.timeout_s : kNever;
  for (int restart = 0;; ++restart) {
    // Each start sees its number; a rank's log (--logdir) is appended to after the first.
    ::setenv("GLOBE_RESTART_COUNT", std::to_string(restart).c_str(), 1);
    const JobEnd end = run_job(o, logdir, timeout_at);
    if (!end.restartable || restart >= o.max_restarts) {
      if (!trace_dir.empty()) {
        std::string said;
        if (merge_traces(trace_dir, said)) say(said);
        else say("--trace: " + said);
      }
      return end.exit_code;
    }
    say("restarting every rank (restart " + std::to_string(restart + 1) + " of " + std::to_string(o.max_restarts) +
        ", --max-restarts)");
  }
}

}  // namespace

int run_parent(const LaunchOptions& given) {
  if (given.nnodes == 1) return run_starts(given);
  if (given.node_rank > 0) return run_follower(given);
  // Node 0 of several: once every node has joined, the job runs as over --hosts, the other nodes
  // reached through their launchers instead of ssh (node_group.h).
  std::string error;
  const std::unique_ptr<NodeGroup> nodes = NodeGroup::gather(given, error);
  if (!nodes) {
    say(error);
    return 1;
  }
  LaunchOptions o = given;
  o.hosts = nodes->hosts();
  o.np = o.nnodes * o.nproc_per_node;
  for (const auto& kv : nodes->mca())
    if (std::none_of(o.mca.begin(), o.mca.end(), [&](const auto& m) { return m.first == kv.first; }))
      o.mca.push_back(kv);
  nodes->start();
  const int code = run_starts(o);
  nodes->finish(code);
  return code;
}

}  // namespace globe_launch
