// Files for checkpoints: writes that are atomic and reads that are exact.
//
//   io::AtomicFile out("model.safetensors", "save");
//   out.write(bytes, n, "tensor 'fc.weight'");
//   out.commit();   // fsync, rename over model.safetensors, fsync the directory
//
// Until commit() the bytes live in a temporary file beside the target ("<path>.tmp.<pid>.<n>"),
// so a crash or an error never leaves a half-written file under the final name, and an existing
// file there stays intact. Errors are globe::Error naming the op and the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace globe::io {

class AtomicFile {
 public:
  // Creates the temporary file. `op` prefixes errors ("[save] ...").
  AtomicFile(std::string path, std::string op);
  // Without commit(): removes the temporary file.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends n bytes; `what` names the data in errors (e.g. "tensor 'fc.weight'").
  void write(const void* data, size_t n, const std::string& what);
  // fsync, close, rename onto the target, fsync the directory. Once only.
  void commit();
  // Removes the temporary file now (what the destructor does when commit() was not called).
  void abandon() noexcept;

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return written_; }

 private:
  std::string path_, tmp_, op_;
  int fd_ = -1;
  uint64_t written_ = 0;
  int64_t fail_after_ = -1;  // injected full disk (see set_write_fault_after)
  bool committed_ = false;
};

// A file opened for exact positional reads.
class ReadFile {
 public:
  // Throws "[op] cannot open 'path': <reason>".
  ReadFile(std::string path, std::string op);
  ~ReadFile();
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly n bytes at `offset` (pread until done); a short read is an error naming `what`.
  void read_at(uint64_t offset, void* dst, size_t n, const std::string& what) const;
  // Asks the kernel to start reading [offset, offset + n) into the page cache in the background
  // (posix_fadvise WILLNEED); a hint, which a failure only leaves unused.
  void prefetch(uint64_t offset, size_t n) const;

 private:
  std::string path_, op_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Fault injection for tests and drills (a full disk): every AtomicFile opened after this call
// fails with ENOSPC once it has written `bytes` bytes; -1 switches it off. When never called, the
// environment variable GLOBE_IO_FAIL_WRITE_AFTER=<bytes> does the same.
void set_write_fault_after(int64_t bytes);

// Bytes ReadFile has read in this process so far: lets tests check that a rank reads only its part.
uint64_t bytes_read_total();

// Creates `dir` and its parents if missing (mkdir -p); throws "[op] cannot create directory ...".
void make_directories(const std::string& dir, const std::string& op);

// fsyncs a directory so a rename or an unlink in it is durable.
void sync_directory(const std::string& dir, const std::string& op);

}  // namespace globe::io
