#include "common.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

namespace globe_launch {

bool write_all(int fd, const char* data, std::size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

void say(const std::string& msg) { write_all(STDERR_FILENO, "globe-launch: " + msg + "\n"); }

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0' ? name : "localhost";
}

std::string describe_signal(int sig) {
  std::string text = "signal " + std::to_string(sig);
  if (const char* abbrev = sigabbrev_np(sig)) text += std::string(" (SIG") + abbrev + ")";
  return text;
}

std::string FailureRecord::describe() const {
  return signal != 0 ? describe_signal(signal) : "exit code " + std::to_string(exit_code);
}

int FailureRecord::launcher_exit_code() const {
  if (signal != 0) return 128 + signal;
  return exit_code != 0 ? exit_code : 1;
}

bool record_failure(const std::string& run_dir, const FailureRecord& rec) {
  const std::string r = std::to_string(rec.rank);
  const std::string tmp = run_dir + "/.tmp." + r + "." + std::to_string(::getpid());
  std::ostringstream body;
  body << "rank " << rec.rank << "\nexit_code " << rec.exit_code << "\nsignal " << rec.signal
       << "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;  // e.g. a remote node without the run directory: nothing to record
  const bool ok = write_all(fd, body.str());
  ::close(fd);
  bool first = false;
  if (ok) {
    // link() fails with EEXIST when another rank was first: an atomic "create if absent".
    first = ::link(tmp.c_str(), (run_dir + "/first_failure").c_str()) == 0;
    ::rename(tmp.c_str(), (run_dir + "/failure." + r).c_str());
  } else {
    ::unlink(tmp.c_str());
  }
  return first;
}

void record_end(const std::string& run_dir, int rank) {
  const int fd = ::open((run_dir + "/ended." + std::to_string(rank)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);  // a remote node has no run directory: nothing to mark
}

int count_ended(const std::string& run_dir) {
  DIR* d = ::opendir(run_dir.c_str());
  if (d == nullptr) return 0;
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (std::strncmp(e->d_name, "ended.", 6) == 0) ++n;
  ::closedir(d);
  return n;
}

std::optional<FailureRecord> read_first_failure(const std::string& run_dir) {
  FILE* f = std::fopen((run_dir + "/first_failure").c_str(), "r");
  if (f == nullptr) return std::nullopt;
  FailureRecord rec;
  const int n =
      std::fscanf(f, "rank %d exit_code %d signal %d", &rec.rank, &rec.exit_code, &rec.signal);
  std::fclose(f);
  if (n != 3) return std::nullopt;
  return rec;
}

namespace {
// A file's whole content; nothing when it cannot be read.
std::optional<std::string> read_whole(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  std::string body;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) body.append(buf, n);
  std::fclose(f);
  return body;
}

// "rank R\n<text>" split into R and the text.
std::optional<std::pair<int, std::string>> parse_error_file(const std::string& body) {
  int rank = -1;
  const size_t eol = body.find('\n');
  if (eol == std::string::npos || std::sscanf(body.c_str(), "rank %d", &rank) != 1) return std::nullopt;
  return std::make_pair(rank, body.substr(eol + 1));
}
}  // namespace

std::optional<std::string> same_error_summary(const std::string& run_dir) {
  const auto first_body = read_whole(run_dir + "/first_error");
  const auto first = first_body ? parse_error_file(*first_body) : std::nullopt;
  if (!first) return std::nullopt;
  std::vector<int> alike;
  DIR* d = ::opendir(run_dir.c_str());
  if (d == nullptr) return std::nullopt;
  while (const dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "error.", 6) != 0) continue;
    const auto body = read_whole(run_dir + "/" + e->d_name);
    const auto filed = body ? parse_error_file(*body) : std::nullopt;
    if (filed && filed->second == first->second) alike.push_back(filed->first);
  }
  ::closedir(d);
  if (alike.size() < 2) return std::nullopt;
  std::sort(alike.begin(), alike.end());
  std::string ranks;
  for (const int r : alike) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return "ranks " + ranks + " raised the same error; it is shown once, from rank " + std::to_string(first->first);
}

namespace {
constexpr const char* kNoSuchFile = "no such file";

// What is wrong with running `path`: "" when nothing.
std::string fault_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT ? kNoSuchFile : std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(path.c_str(), X_OK) != 0) return "is not executable (chmod +x?)";
  return "";
}
}  // namespace

std::optional<Unrunnable> check_executable(const std::string& name) {
  if (name.empty()) return Unrunnable{127, "empty program name"};
  if (name.find('/') != std::string::npos) {
    const std::string fault = fault_of(name);
    if (fault.empty()) return std::nullopt;
    return Unrunnable{fault == kNoSuchFile ? 127 : 126, fault};
  }
  const char* path_env = std::getenv("PATH");
  // execvp's default search path when PATH is unset.
  std::string path = path_env != nullptr ? path_env : "/bin:/usr/bin";
  std::optional<Unrunnable> first_fault;  // of a file found in PATH but not runnable
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), F_OK) == 0) {
      const std::string fault = fault_of(candidate);
      if (fault.empty()) return std::nullopt;
      if (!first_fault) first_fault = Unrunnable{126, "found as " + candidate + ", which " + fault};
    }
    start = end + 1;
  }
  if (first_fault) return first_fault;
  return Unrunnable{127, "not found in PATH"};
}

std::string self_exe_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "globe-launch";
  return std::string(buf, static_cast<std::size_t>(n));
}

bool make_dirs(const std::string& path) {
  std::string prefix;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (!prefix.empty()) ::mkdir(prefix.c_str(), 0755);  // EEXIST is fine; checked below
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void remove_flat_dir(const std::string& path) {
  if (DIR* d = ::opendir(path.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        ::unlink((path + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path.c_str());
}

}  // namespace globe_launch
