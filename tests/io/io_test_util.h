// Helpers shared by the checkpoint tests: shared temporary directories, exact comparisons of whole
// values, small file utilities.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "globe/globe.h"
#include "globe/io/collective.h"

namespace globe::testing {

namespace fs = std::filesystem;

// A fresh directory every rank sees: rank 0 creates it under GLOBE_IO_TEST_TMP (the build tree) and
// broadcasts its name. Rank 0 removes it after every rank is done with it.
class SharedTempDir {
 public:
  SharedTempDir() {
    if (dist::world_rank() == 0) {
      fs::create_directories(GLOBE_IO_TEST_TMP);
      std::string templ = std::string(GLOBE_IO_TEST_TMP) + "/ckpt-XXXXXX";
      EXPECT_NE(::mkdtemp(templ.data()), nullptr) << std::strerror(errno);
      path_ = templ;
    }
    io::broadcast_string(path_, 0);
  }
  ~SharedTempDir() {
    io::agree_on_errors("");  // a barrier: nobody still reads
    if (dist::world_rank() == 0) fs::remove_all(path_);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole value of a tensor as a local tensor (collective for a global one).
inline Tensor whole(const Tensor& t) {
  if (!t.is_global()) return t;
  return t.to_global(Placement::all(), replicated(1)).to_local();
}

// Bit-exact equality of two values (dtype, shape and every byte).
inline void expect_bit_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  const Tensor g = contiguous(whole(got)), w = contiguous(whole(want));
  ASSERT_EQ(g.dtype(), w.dtype()) << what;
  ASSERT_EQ(g.shape(), w.shape()) << what;
  const size_t n = size_t(g.numel()) * itemsize(g.dtype());
  EXPECT_TRUE(n == 0 || std::memcmp(g.raw_data(), w.raw_data(), n) == 0)
      << what << ": values differ";
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// Names in `dir` (no path), sorted.
inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// Runs `fn`, expecting a globe::Error whose message contains every string of `parts`.
template <class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << what << ": '" << p << "' not in: " << e.what();
  }
}

}  // namespace globe::testing
