// Small helpers shared by globe-launch's parent and per-rank modes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace globe_launch {

// Name of the hidden first argument that selects the per-rank mode (mpirun starts
// `globe-launch --_rank-child ... -- PROGRAM ARGS` once per rank).
inline constexpr const char* kRankChildFlag = "--_rank-child";

// Writes all of [data, data+len) to fd, retrying on EINTR and short writes. False on error.
bool write_all(int fd, const char* data, std::size_t len);
inline bool write_all(int fd, const std::string& s) {
  return write_all(fd, s.data(), s.size());
}

// The launcher's own message to the user: "globe-launch: MSG" on stderr.
void say(const std::string& msg);

// Seconds on a monotonic clock.
double now_s();

// "signal 11 (SIGSEGV)".
std::string describe_signal(int sig);

// How a rank ended, as recorded in the run directory by the per-rank child.
struct FailureRecord {
  int rank = -1;
  int exit_code = 0;  // meaningful when signal == 0
  int signal = 0;     // non-zero when the program died by a signal
  // "exit code 3" or "signal 11 (SIGSEGV)".
  std::string describe() const;
  // The launcher's exit status for this failure: the exit code, or 128 + signal.
  int launcher_exit_code() const;
};

// Records `rec` as DIR/failure.R and, if no rank got there before, as DIR/first_failure.
// The record is written to a temporary file and then link()ed into place, so a reader never sees
// a half-written file even if this process is killed midway, and only one rank wins.
// Returns true if this rank's record became first_failure.
bool record_failure(const std::string& run_dir, const FailureRecord& rec);

// Marks rank `rank` as ended (DIR/ended.R), whatever its status, and counts the marks: the parent
// knows when every local rank has ended even if mpirun does not return.
void record_end(const std::string& run_dir, int rank);
int count_ended(const std::string& run_dir);

// Reads DIR/first_failure if present and well formed.
std::optional<FailureRecord> read_first_failure(const std::string& run_dir);

// When more than one rank filed the same error text as the first one shown (DIR/error.R and
// DIR/first_error, written by the program: globe/dist/error_report.h), the line that says so:
// "ranks 0, 1, 2, 3 raised the same error; it is shown once, from rank 0". Nothing otherwise.
std::optional<std::string> same_error_summary(const std::string& run_dir);

// Why `name` cannot be run, looked up as execvp does (a name with a slash as is, otherwise in
// PATH): nothing when it names a regular, executable file.
struct Unrunnable {
  int exit_code;    // the shell's: 127 not found, 126 found but not runnable
  std::string why;  // "no such file", "is not executable (chmod +x?)", "is a directory", ...
};
std::optional<Unrunnable> check_executable(const std::string& name);

// This machine's host name (gethostname), "localhost" if it has none.
std::string host_name();

// The absolute path of the running binary (/proc/self/exe).
std::string self_exe_path();

// mkdir -p; true if the directory exists afterwards.
bool make_dirs(const std::string& path);

// Removes a flat directory: its plain files, then the directory itself.
void remove_flat_dir(const std::string& path);

}  // namespace globe_launch
