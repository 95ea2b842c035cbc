// The training text: bytes of a directory of text files (Debian's `fortunes` by default) or of one
// file, cut 90 / 10 into training and validation streams, with the reference's batch order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <globe/globe.h>

namespace gpt {

// The English files of the `fortunes` package (apt-get install fortunes).
inline const char* kFortunes = "/usr/share/games/fortunes";

struct Corpus {
  std::vector<uint8_t> train, val;
  size_t bytes = 0;
};

// A directory: every regular file whose name has no dot, except the non-English `chinese`,
// `tang300` and `song100`, sorted by name and concatenated. A file: its bytes. A missing path, a
// directory without such files or an empty file is an error that says so.
Corpus read_corpus(const std::string& path);

// Sequences [first, first + rows) of step `step`'s batch of `batch` sequences of `block` tokens,
// shifted by `shift` (0: inputs, 1: targets), as int64 [rows, block]. Sequence j of step s starts
// at ((s * batch + j) * block) mod (len(stream) - block - 1).
globe::Tensor windows(const std::vector<uint8_t>& stream, int64_t step, int64_t batch, int64_t first, int64_t rows,
                      int64_t block, int64_t shift);

}  // namespace gpt
