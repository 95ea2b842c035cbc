#include "tokens.h"

#include "../example_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace llama {

TokenFile::TokenFile(const std::string& path, int width, int64_t row) : path_(path), width_(width), row_(row) {
  GLOBE_CHECK(width == 2 || width == 4, "[llama] token width ", width, ": 2 (uint16) or 4 (uint32) bytes");
  struct stat st {};
  GLOBE_CHECK(::stat(path.c_str(), &st) == 0, "[llama] cannot open token file '", path, "': ", std::strerror(errno));
  GLOBE_CHECK(st.st_size % width == 0, "[llama] token file '", path, "' has ", st.st_size,
              " bytes, not a whole number of ", width, "-byte tokens");
  rows_ = int64_t(st.st_size) / width / row;
  GLOBE_CHECK(rows_ > 0, "[llama] token file '", path, "' has ", st.st_size / width, " tokens, fewer than one row of ",
              row, " (--block + 1)");
}

globe::Tensor TokenFile::read(int64_t first, int64_t n, int shift, int64_t vocab) const {
  const int64_t T = row_ - 1;
  std::vector<int64_t> ids(size_t(n * T));
  std::vector<unsigned char> buf(size_t(row_ * width_));
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  GLOBE_CHECK(fd >= 0, "[llama] cannot open token file '", path_, "': ", std::strerror(errno));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t at = ((first + r) % rows_) * row_ * width_;
    const ssize_t got = ::pread(fd, buf.data(), buf.size(), off_t(at));
    if (got != ssize_t(buf.size())) {
      ::close(fd);
      GLOBE_FAIL("[llama] short read of token file '", path_, "' at byte ", at);
    }
    for (int64_t t = 0; t < T; ++t) {
      const unsigned char* p = buf.data() + (t + shift) * width_;
      const int64_t id = width_ == 2 ? int64_t(p[0] | p[1] << 8) : int64_t(uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24));
      if (id >= vocab) {
        ::close(fd);
        GLOBE_FAIL("[llama] token file '", path_, "' holds id ", id, " (row ", (first + r) % rows_, "), outside the vocabulary of ",
                   vocab);
      }
      ids[size_t(r * T + t)] = id;
    }
  }
  ::close(fd);
  return globe::from_vector(ids, {n, T});
}

globe::Tensor batch_on(const TokenFile& f, const globe::Placement& p, int64_t step, int64_t batch, int shift, int64_t vocab) {
  return example::batch_on(p, {batch, f.tokens_per_row()},
                           [&](int64_t first, int64_t n) { return f.read(step * batch + first, n, shift, vocab); });
}

}  // namespace llama
