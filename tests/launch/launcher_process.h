// Test helpers: run build/bin/globe-launch as a child process and capture what it did.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace launch_test {

// The directory of the running test binary (build/bin), where globe-launch and the fixtures are.
std::string bin_dir();

// What a finished launcher did.
struct RunResult {
  int exit_code = -1;  // -1 if it died by a signal or was killed for running too long
  bool hung = false;   // true if the test's own deadline killed it
  std::string out;     // its stdout
  std::string err;     // its stderr
  double seconds = 0;  // wall time from start to exit
};

// A running globe-launch. Its output is collected by wait().
class LauncherProcess {
 public:
  // Starts bin_dir()/globe-launch ARGS with extra environment entries ("NAME=VALUE") added.
  // The variables the launcher reads or defaults (GLOBE_LAUNCH_NO_PREFIX, OMP_NUM_THREADS,
  // OPENBLAS_NUM_THREADS) are removed first, so the tests do not depend on the caller's shell.
  explicit LauncherProcess(const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env = {});
  ~LauncherProcess();
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Collects output until exit; SIGKILLs the launcher after `deadline_s` so no test can hang.
  // With `close_stdout_after`, the read end of its stdout is closed once that many bytes came,
  // as `| head` does; stderr is still read to its end (everything the launcher started is gone).
  RunResult wait(double deadline_s = 60, std::size_t close_stdout_after = std::size_t(-1));

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  double start_s_ = 0;
};

// Runs globe-launch ARGS as the foreground job of a new terminal session (a pseudo-terminal),
// waits until `ready()` is true, then types Ctrl-C on that terminal, as a user would, and
// collects the terminal's output (stdout and stderr together) into `out`.
RunResult run_on_tty_and_press_ctrl_c(const std::vector<std::string>& args,
                                      const std::function<bool()>& ready, double deadline_s = 60);

// Exit code, time, stdout and stderr, for assertion messages.
std::string describe(const RunResult& r);

// Whether every rank of `nproc` reported `message` on stderr as "PROGRAM: error on rank R: ...":
// by its own line, or, where the ranks failed alike and one line stands for all
// (globe/dist/error_report.h), by the launcher's "ranks 0, 1, ... raised the same error".
bool every_rank_reported(const std::string& err, const std::string& program, const std::string& message, int nproc);

// Starts, waits, returns.
RunResult run_launcher(const std::vector<std::string>& args,
                       const std::vector<std::string>& extra_env = {}, double deadline_s = 60);

// A fresh directory under /tmp, removed with everything in it by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The pids written by the fixture into DIR/pid.R, for R in [0, n); -1 where a file is missing.
std::vector<pid_t> read_pids(const std::string& dir, int n);

// True while `pid` is a live (not zombie) launch_fixture process.
bool fixture_alive(pid_t pid);

// The parent pid of `pid` (from /proc), or -1.
pid_t parent_of(pid_t pid);

// Waits up to `seconds` for every pid to be gone; returns those still alive.
std::vector<pid_t> still_alive_after(const std::vector<pid_t>& pids, double seconds);

// Waits up to `seconds` until DIR holds pid files for ranks [0, n).
bool wait_for_pid_files(const std::string& dir, int n, double seconds);

// Whole file contents ("" if missing).
std::string read_file(const std::string& path);

// Usable cores as the launcher counts them (the affinity mask).
int usable_cores();

// Seconds on a monotonic clock.
double now_s();

}  // namespace launch_test
