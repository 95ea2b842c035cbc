#include "rank_child.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.h"
#include "output_relay.h"

namespace globe_launch {
namespace {

// Signals that mpirun (or a user) may send to a rank; each is passed on to the program.
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_program_pid = 0;
volatile sig_atomic_t g_stop_signal = 0;  // set when we were asked to stop (TERM/INT/HUP)
int g_sigchld_write_fd = -1;

// After the program exited, how long its streams may keep us waiting (see the poll loop).
constexpr double kMaxDrainS = 1.0;

void forward_signal(int sig) {
  const int saved = errno;
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) g_stop_signal = sig;
  const pid_t pid = g_program_pid;
  if (pid > 0) ::kill(pid, sig);
  errno = saved;
}

// Self-pipe: wakes the poll() loop when the program exits, without a race against poll().
void on_sigchld(int) {
  const int saved = errno;
  const char byte = 0;
  [[maybe_unused]] ssize_t n = ::write(g_sigchld_write_fd, &byte, 1);
  errno = saved;
}

struct ChildArgs {
  bool no_prefix = false;
  std::string logdir;
  std::string run_dir;
  std::string output_channel;  // the parent's OutputServer address; empty: write to our own fds
  std::vector<char*> program;  // null-terminated for execvp
};

bool parse_child_args(int argc, char** argv, ChildArgs& a) {
  int i = 2;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    } else if (arg == "--no-prefix") {
      a.no_prefix = true;
    } else if (arg == "--logdir" && i + 1 < argc) {
      a.logdir = argv[++i];
    } else if (arg == "--run-dir" && i + 1 < argc) {
      a.run_dir = argv[++i];
    } else if (arg == "--output-channel" && i + 1 < argc) {
      a.output_channel = argv[++i];
    } else {
      return false;
    }
  }
  for (; i < argc; ++i) a.program.push_back(argv[i]);
  a.program.push_back(nullptr);
  return a.program.size() > 1;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // The affinity mask respects cpusets/taskset; mpirun runs us with --bind-to none.
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// The program's stdout. mpirun hands each rank a pseudo-terminal, so programs run under plain
// mpirun see a tty and line-buffer their stdout; we give the program a pty too (when we have
// one), otherwise output would sit in a 4 KiB stdio buffer until exit or a crash lost it.
bool open_pty(int& read_fd, int& write_fd) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return false;
  char name[128];
  if (::grantpt(master) != 0 || ::unlockpt(master) != 0 ||
      ::ptsname_r(master, name, sizeof(name)) != 0) {
    ::close(master);
    return false;
  }
  const int slave = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) {
    ::close(master);
    return false;
  }
  termios t{};
  if (::tcgetattr(slave, &t) == 0) {
    ::cfmakeraw(&t);  // no echo, no "\n" -> "\r\n", no signals from control characters
    ::tcsetattr(slave, TCSANOW, &t);
  }
  read_fd = master;
  write_fd = slave;
  return true;
}

bool open_pipe(int& read_fd, int& write_fd) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  read_fd = p[0];
  write_fd = p[1];
  return true;
}

// Reads once from a ready stream. Returns whether it got data; clears `open` at the end of the
// stream (EIO is how a pty says so).
bool pump(int fd, OutputRelay& relay, bool& open) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      relay.feed(buf, static_cast<std::size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || errno != EAGAIN) open = false;
    return false;
  }
}

// Kills what the program left running in our process group (`cmd &` in a script, data-loader
// workers...), as torchrun does, so nothing of a rank outlives it. mpirun makes each rank a
// process-group leader; when we are not one (started some other way) the group is not ours.
void kill_stragglers() {
  const pid_t self = ::getpid();
  if (::getpgrp() != self) return;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == self) continue;
    char line[1024] = {};
    if (FILE* f = std::fopen(("/proc/" + std::string(e->d_name) + "/stat").c_str(), "r")) {
      if (std::fgets(line, sizeof(line), f) == nullptr) line[0] = '\0';
      std::fclose(f);
    }
    const char* after_name = std::strrchr(line, ')');  // the name itself may contain ')'
    int ppid = 0, pgrp = 0;
    if (after_name != nullptr && std::sscanf(after_name + 1, " %*c %d %d", &ppid, &pgrp) == 2 &&
        pgrp == self) {
      ::kill(pid, SIGKILL);
    }
  }
  ::closedir(proc);
}

[[noreturn]] void exec_program(const ChildArgs& a, pid_t parent, int out_fd, int err_fd,
                               const sigset_t& old_mask) {
  // If this per-rank process dies (e.g. SIGKILLed by mpirun), the program must die too.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // parent died before prctl took effect
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  for (int sig : kForwarded) ::signal(sig, SIG_DFL);
  ::signal(SIGCHLD, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);  // ignored dispositions would survive exec
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  ::execvp(a.program[0], a.program.data());
  const int e = errno;
  const std::string msg =
      std::string("globe-launch: cannot run '") + a.program[0] + "': " + std::strerror(e) + "\n";
  write_all(STDERR_FILENO, msg);
  ::_exit(e == ENOENT ? 127 : 126);
}

}  // namespace

int run_rank_child(int argc, char** argv) {
  ChildArgs a;
  if (!parse_child_args(argc, argv, a)) {
    std::fprintf(stderr, "globe-launch: bad internal per-rank arguments\n");
    return 2;
  }
  // Die with mpirun (or orted on a remote node): then our program dies too (see exec_program),
  // so a killed mpirun can never leave ranks behind.
  const pid_t mpirun_pid = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != mpirun_pid) return 1;

  const int rank = env_int("OMPI_COMM_WORLD_RANK", 0);
  const int size = env_int("OMPI_COMM_WORLD_SIZE", 1);
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", rank);
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", size);
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(size).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(local_size).c_str(), 1);
  // Where the program files its error so that ranks failing alike print it once
  // (globe/dist/error_report.h; same_error_summary() reads it back).
  if (!a.run_dir.empty()) ::setenv("GLOBE_RUN_DIR", a.run_dir.c_str(), 1);
  // Ranks on a node share its cores; without this each BLAS/OpenMP pool would take all of them.
  const std::string threads = std::to_string(std::max(1, usable_cores() / std::max(1, local_size)));
  ::setenv("OMP_NUM_THREADS", threads.c_str(), 0);
  ::setenv("OPENBLAS_NUM_THREADS", threads.c_str(), 0);

  int log_fd = -1;
  if (!a.logdir.empty()) {
    const std::string path = a.logdir + "/rank." + std::to_string(rank) + ".log";
    if (make_dirs(a.logdir))
      // A restart (--max-restarts) adds to the log of the earlier starts.
      log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (env_int("GLOBE_RESTART_COUNT", 0) > 0 ? 0 : O_TRUNC),
                      0644);
    if (log_fd < 0)
      std::fprintf(stderr, "[globe-launch] rank %d: cannot write %s: %s\n", rank, path.c_str(),
                   std::strerror(errno));
  }

  int out_r = -1, out_w = -1, err_r = -1, err_w = -1, chld[2] = {-1, -1};
  const bool pty = ::isatty(STDOUT_FILENO) && open_pty(out_r, out_w);
  if ((!pty && !open_pipe(out_r, out_w)) || !open_pipe(err_r, err_w) ||
      ::pipe2(chld, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("globe-launch: pipe");
    return 1;
  }
  g_sigchld_write_fd = chld[1];
  ::signal(SIGPIPE, SIG_IGN);  // if mpirun's side goes away, fail writes instead of dying

  // Block the forwarded signals across fork so none arrives before g_program_pid is known.
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigaddset(&block, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &block, &old_mask);
  struct sigaction sa {};
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = forward_signal;
  for (int sig : kForwarded) ::sigaction(sig, &sa, nullptr);
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &sa, nullptr);

  const pid_t self = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("globe-launch: fork");
    return 1;
  }
  if (pid == 0) exec_program(a, self, out_w, err_w, old_mask);
  g_program_pid = pid;
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  ::close(out_w);
  ::close(err_w);
  set_nonblocking(out_r);
  set_nonblocking(err_r);

  const std::string prefix = a.no_prefix ? "" : "[rank" + std::to_string(rank) + "] ";
  std::optional<OutputLink> link;
  if (!a.output_channel.empty()) {
    std::string error;
    link = OutputLink::connect(a.output_channel, rank, error);
    if (!link)
      std::fprintf(stderr, "[globe-launch] rank %d: %s; its lines may break under load\n", rank, error.c_str());
  }
  OutputLink* const link_ptr = link ? &*link : nullptr;
  OutputRelay out_relay(STDOUT_FILENO, prefix, log_fd, link_ptr);
  OutputRelay err_relay(STDERR_FILENO, prefix, log_fd, link_ptr);
  bool out_open = true, err_open = true, exited = false, failed = false;
  int status = 0;
  FailureRecord rec;
  rec.rank = rank;
  auto on_exit = [&] {
    exited = true;
    g_program_pid = 0;  // reaped: its pid may be reused, so no more forwarding to it
    if (WIFSIGNALED(status)) rec.signal = WTERMSIG(status);
    if (WIFEXITED(status)) rec.exit_code = WEXITSTATUS(status);
    failed = rec.signal != 0 || rec.exit_code != 0;
    // Record at once, before draining output: a peer that notices our death (broken MPI
    // connection) must not get its own failure on record first. A rank we were told to stop
    // is a consequence, not a cause, so it does not compete for "first".
    if (failed && g_stop_signal == 0 && !a.run_dir.empty()) record_failure(a.run_dir, rec);
  };
  double drain_until = 0;
  for (;;) {
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      on_exit();
      drain_until = now_s() + kMaxDrainS;
    }
    if (exited && ((!out_open && !err_open) || now_s() > drain_until)) break;
    pollfd fds[3];
    nfds_t n = 0;
    int out_idx = -1, err_idx = -1;
    if (out_open) out_idx = static_cast<int>(n), fds[n++] = {out_r, POLLIN, 0};
    if (err_open) err_idx = static_cast<int>(n), fds[n++] = {err_r, POLLIN, 0};
    if (!exited) fds[n++] = {chld[0], POLLIN, 0};
    // After the program exited, something it started may still hold its streams open; stop
    // after 100 ms of silence instead of waiting for an end of stream that may never come.
    const int ready = ::poll(fds, n, exited ? 100 : -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    if (out_idx >= 0 && fds[out_idx].revents != 0) pump(out_r, out_relay, out_open);
    if (err_idx >= 0 && fds[err_idx].revents != 0) pump(err_r, err_relay, err_open);
    if (!exited && fds[n - 1].revents != 0) {
      char drain[64];
      while (::read(chld[0], drain, sizeof(drain)) > 0) {
      }
    }
  }
  if (!exited) {  // only after a poll() error: wait rather than leave the program behind
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    on_exit();
  }
  kill_stragglers();
  while (out_open && pump(out_r, out_relay, out_open)) {  // what is left, without waiting
  }
  while (err_open && pump(err_r, err_relay, err_open)) {
  }
  out_relay.finish();
  err_relay.finish();
  if (log_fd >= 0) ::close(log_fd);
  if (!a.run_dir.empty()) record_end(a.run_dir, rank);
  if (!failed) return 0;
  if (g_stop_signal == 0) {
    const std::string msg =
        "[globe-launch] rank " + std::to_string(rank) + " failed: " + rec.describe() + "\n";
    if (link_ptr == nullptr || !link_ptr->send(STDERR_FILENO, msg.data(), msg.size()))
      write_all(STDERR_FILENO, msg);
  }
  return rec.launcher_exit_code();
}

}  // namespace globe_launch
