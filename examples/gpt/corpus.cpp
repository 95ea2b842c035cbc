#include "corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace gpt {

namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  GLOBE_CHECK(in.good(), "[gpt] cannot read ", p.string());
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

Corpus read_corpus(const std::string& path) {
  std::error_code ec;
  GLOBE_CHECK(fs::exists(path, ec), "[gpt] the corpus ", path, " does not exist",
              path == kFortunes ? " (apt-get install fortunes, or give --data FILE_OR_DIR)" : "");
  std::vector<uint8_t> data;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) {
      const std::string n = e.path().filename().string();
      if (n.find('.') == std::string::npos && n != "chinese" && n != "tang300" && n != "song100" &&
          e.is_regular_file() && !e.is_symlink())
        names.push_back(n);
    }
    GLOBE_CHECK(!names.empty(), "[gpt] no text files in ", path, " (files without a dot in the name; apt-get install fortunes)");
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      const std::vector<uint8_t> b = read_bytes(fs::path(path) / n);
      data.insert(data.end(), b.begin(), b.end());
    }
  } else {
    data = read_bytes(path);
  }
  GLOBE_CHECK(!data.empty(), "[gpt] the corpus ", path, " is empty");
  Corpus c;
  c.bytes = data.size();
  const size_t n_train = size_t(double(data.size()) * 0.9);
  c.train.assign(data.begin(), data.begin() + std::ptrdiff_t(n_train));
  c.val.assign(data.begin() + std::ptrdiff_t(n_train), data.end());
  return c;
}

globe::Tensor windows(const std::vector<uint8_t>& stream, int64_t step, int64_t batch, int64_t first, int64_t rows,
                      int64_t block, int64_t shift) {
  const int64_t span = int64_t(stream.size()) - block - 1;
  GLOBE_CHECK(span > 0, "[gpt] a stream of ", stream.size(), " bytes is too short for sequences of ", block,
              " tokens (--block); use a larger corpus");
  std::vector<int64_t> v;
  v.reserve(size_t(rows * block));
  for (int64_t j = first; j < first + rows; ++j) {
    const int64_t start = ((step * batch + j) * block) % span + shift;
    for (int64_t t = 0; t < block; ++t) v.push_back(stream[size_t(start + t)]);
  }
  return globe::from_vector(v, {rows, block});
}

}  // namespace gpt
