#include "launcher_process.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace launch_test {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string bin_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw std::runtime_error("readlink /proc/self/exe failed");
  std::string exe(buf, static_cast<std::size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

namespace {
// bin_dir()/globe-launch followed by `args`: the command every helper here runs.
std::vector<std::string> launcher_command(const std::vector<std::string>& args) {
  std::vector<std::string> command = {bin_dir() + "/globe-launch"};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}
}  // namespace

LauncherProcess::LauncherProcess(const std::vector<std::string>& args,
                                 const std::vector<std::string>& extra_env) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<std::string> argv_s = launcher_command(args);
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  start_s_ = now_s();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    for (const char* name : {"GLOBE_LAUNCH_NO_PREFIX", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
      ::unsetenv(name);
    for (const auto& kv : extra_env) {
      const auto eq = kv.find('=');
      ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, STDIN_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(121);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

LauncherProcess::~LauncherProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

RunResult LauncherProcess::wait(double deadline_s, std::size_t close_stdout_after) {
  RunResult r;
  const double deadline = start_s_ + deadline_s;
  bool out_open = true, err_open = true;
  char buf[8192];
  // Read until both streams end: the launcher (and everything it started) has exited.
  while (out_open || err_open) {
    const double left = deadline - now_s();
    if (left <= 0) {
      r.hung = true;
      ::kill(pid_, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out_open ? out_fd_ : -1, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
        if (i == 0 && r.out.size() >= close_stdout_after) {
          ::close(out_fd_);
          out_fd_ = -1;
          out_open = false;
        }
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  int status = 0;
  // The streams can end before exit (or stay open in a leaked rank); bound the wait as well.
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (now_s() > deadline) {
      r.hung = true;
      ::kill(pid_, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = now_s() - start_s_;
  pid_ = -1;
  r.exit_code = WIFEXITED(status) && !r.hung ? WEXITSTATUS(status) : -1;
  return r;
}

RunResult run_on_tty_and_press_ctrl_c(const std::vector<std::string>& args,
                                      const std::function<bool()>& ready, double deadline_s) {
  RunResult r;
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[128];
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0 ||
      ::ptsname_r(master, name, sizeof(name)) != 0) {
    throw std::runtime_error("cannot open a pseudo-terminal");
  }
  std::vector<std::string> argv_s = launcher_command(args);
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const double start = now_s();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setsid();  // new session; opening the terminal makes it our controlling terminal
    const int slave = ::open(name, O_RDWR);
    for (int fd = 0; fd < 3; ++fd) ::dup2(slave, fd);
    for (const char* v : {"GLOBE_LAUNCH_NO_PREFIX", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
      ::unsetenv(v);
    ::execv(argv[0], argv.data());
    ::_exit(121);
  }
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  bool pressed = false;
  char buf[4096];
  int status = 0;
  for (;;) {
    ssize_t n;
    while ((n = ::read(master, buf, sizeof(buf))) > 0) r.out.append(buf, static_cast<size_t>(n));
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (now_s() - start > deadline_s) {
      r.hung = true;
      ::kill(pid, SIGKILL);
    } else if (!pressed && ready()) {
      const char ctrl_c = 3;  // VINTR: the terminal sends SIGINT to its foreground process group
      pressed = ::write(master, &ctrl_c, 1) == 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.seconds = now_s() - start;
  r.exit_code = WIFEXITED(status) && !r.hung ? WEXITSTATUS(status) : -1;
  // What the launcher wrote just before exiting may still be on its way through the terminal;
  // read until the terminal reports that no writer is left (EIO), for at most a second.
  for (const double until = now_s() + 1; now_s() < until;) {
    const ssize_t n = ::read(master, buf, sizeof(buf));
    if (n > 0) {
      r.out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } else {
      break;
    }
  }
  ::close(master);
  return r;
}

RunResult run_launcher(const std::vector<std::string>& args,
                       const std::vector<std::string>& extra_env, double deadline_s) {
  LauncherProcess p(args, extra_env);
  return p.wait(deadline_s);
}

TempDir::TempDir() {
  std::string tmpl = "/tmp/test_launch.XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<pid_t> read_pids(const std::string& dir, int n) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const std::string text = read_file(dir + "/pid." + std::to_string(r));
    pids.push_back(text.empty() ? -1 : static_cast<pid_t>(std::atoi(text.c_str())));
  }
  return pids;
}

bool fixture_alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  // A zombie has already stopped running (no init may reap it in a container), and a reused pid
  // belongs to some other program: neither counts as a leftover rank.
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
  if (stat[close_paren + 2] == 'Z') return false;
  return read_file("/proc/" + std::to_string(pid) + "/cmdline").find("launch_fixture") !=
         std::string::npos;
}

pid_t parent_of(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close_paren = stat.rfind(')');  // the command name may contain spaces
  if (close_paren == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  if (std::sscanf(stat.c_str() + close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

std::vector<pid_t> still_alive_after(const std::vector<pid_t>& pids, double seconds) {
  const double deadline = now_s() + seconds;
  std::vector<pid_t> alive;
  do {
    alive.clear();
    for (pid_t p : pids)
      if (fixture_alive(p)) alive.push_back(p);
    if (alive.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (now_s() < deadline);
  return alive;
}

bool wait_for_pid_files(const std::string& dir, int n, double seconds) {
  const double deadline = now_s() + seconds;
  for (;;) {
    bool all = true;
    for (pid_t p : read_pids(dir, n)) all = all && p > 0;
    if (all) return true;
    if (now_s() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + (r.hung ? " (hung)" : "") + " after " + std::to_string(r.seconds) +
         " s\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

bool every_rank_reported(const std::string& err, const std::string& program, const std::string& message, int nproc) {
  std::string alike;  // "0, 1, 3" from the launcher's summary, if it has one
  const std::string head = "globe-launch: ranks ";
  if (const size_t at = err.find(head); at != std::string::npos)
    alike = ", " + err.substr(at + head.size(), err.find(" raised the same error", at) - at - head.size()) + ",";
  bool shown = false;
  for (int r = 0; r < nproc; ++r) {
    const bool own = err.find(program + ": error on rank " + std::to_string(r) + ": " + message) != std::string::npos;
    shown = shown || own;
    if (!own && alike.find(", " + std::to_string(r) + ",") == std::string::npos) return false;
  }
  return shown;
}

}  // namespace launch_test
