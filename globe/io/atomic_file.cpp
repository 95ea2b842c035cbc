#include "globe/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "globe/base/error.h"

namespace globe::io {

namespace {

std::atomic<int64_t> g_fault_after{-2};  // -2: not set, use the environment
std::atomic<uint64_t> g_tmp_counter{0};
std::atomic<uint64_t> g_bytes_read{0};

int64_t fault_after() {
  const int64_t v = g_fault_after.load();
  if (v != -2) return v;
  const char* env = std::getenv("GLOBE_IO_FAIL_WRITE_AFTER");
  return env && *env ? std::strtoll(env, nullptr, 10) : -1;
}

std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string reason(int err) {
  return std::strerror(err);
}

}  // namespace

void set_write_fault_after(int64_t bytes) {
  g_fault_after = bytes < 0 ? -1 : bytes;
}

uint64_t bytes_read_total() {
  return g_bytes_read.load();
}

AtomicFile::AtomicFile(std::string path, std::string op)
    : path_(std::move(path)), op_(std::move(op)), fail_after_(fault_after()) {
  GLOBE_CHECK(!path_.empty(), "[", op_, "] empty file name");
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_tmp_counter++);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    GLOBE_FAIL("[", op_, "] cannot create '", path_,
               "': cannot create a temporary file in directory '", directory_of(path_),
               "': ", reason(err));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) abandon();
}

void AtomicFile::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::write(const void* data, size_t n, const std::string& what) {
  GLOBE_CHECK(fd_ >= 0, "[", op_, "] '", path_, "': write after commit or failure");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t chunk = std::min<size_t>(n, size_t(1) << 30);
    ssize_t w;
    if (fail_after_ >= 0 && written_ + chunk > uint64_t(fail_after_)) {
      chunk = size_t(uint64_t(fail_after_) - std::min<uint64_t>(written_, uint64_t(fail_after_)));
      w = chunk > 0 ? ::write(fd_, p, chunk) : (errno = ENOSPC, -1);
    } else {
      w = ::write(fd_, p, chunk);
    }
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      abandon();
      GLOBE_FAIL("[", op_, "] cannot write '", path_, "' (", what, ", after ", written_,
                 " bytes): ", reason(err), "; nothing was written under that name");
    }
    p += w;
    n -= size_t(w);
    written_ += uint64_t(w);
  }
}

void AtomicFile::commit() {
  GLOBE_CHECK(fd_ >= 0 && !committed_, "[", op_, "] '", path_, "': commit after commit or failure");
  auto fail = [&](const char* step) {
    const int err = errno;
    abandon();
    GLOBE_FAIL("[", op_, "] cannot write '", path_, "' (", step, "): ", reason(err),
               "; nothing was written under that name");
  };
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close");
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename");
  tmp_.clear();
  committed_ = true;
  sync_directory(directory_of(path_), op_);
}

void sync_directory(const std::string& dir, const std::string& op) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  GLOBE_CHECK(fd >= 0, "[", op, "] cannot open directory '", dir, "' to sync it: ", reason(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory (EINVAL); their renames are as durable as they get.
  GLOBE_CHECK(rc == 0 || err == EINVAL || err == EROFS, "[", op, "] cannot sync directory '", dir,
              "': ", reason(err));
}

void make_directories(const std::string& dir, const std::string& op) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  GLOBE_CHECK(!ec && std::filesystem::is_directory(dir), "[", op, "] cannot create directory '",
              dir, "': ", ec ? ec.message() : "a file of that name exists");
}

ReadFile::ReadFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  GLOBE_CHECK(fd_ >= 0, "[", op_, "] cannot open '", path_, "': ", reason(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    GLOBE_FAIL("[", op_, "] cannot read '", path_,
               "': ", S_ISDIR(st.st_mode) ? "it is a directory" : reason(err));
  }
  size_ = uint64_t(st.st_size);
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadFile::prefetch(uint64_t offset, size_t n) const {
  if (n > 0) (void)::posix_fadvise(fd_, off_t(offset), off_t(n), POSIX_FADV_WILLNEED);
}

void ReadFile::read_at(uint64_t offset, void* dst, size_t n, const std::string& what) const {
  char* p = static_cast<char*>(dst);
  const uint64_t start = offset, end = offset + n;
  while (n > 0) {
    const size_t chunk = std::min<size_t>(n, size_t(1) << 30);
    const ssize_t r = ::pread(fd_, p, chunk, off_t(offset));
    if (r < 0 && errno == EINTR) continue;
    GLOBE_CHECK(r >= 0, "[", op_, "] cannot read '", path_, "' (", what, " at byte ", offset,
                "): ", reason(errno));
    GLOBE_CHECK(r > 0, "[", op_, "] '", path_, "' is truncated: ", what, " needs bytes [", start,
                ", ", end, ") but the file ends at ", offset);
    p += r;
    n -= size_t(r);
    offset += uint64_t(r);
    g_bytes_read += uint64_t(r);
  }
}

}  // namespace globe::io
