// A tokenized corpus: one flat file of token ids, little-endian uint16 or uint32 (what nanoGPT's
// and llm.c's preparation scripts write, headerless). Step s reads rows s*B .. s*B+B-1 of T + 1
// tokens each (the file wrapping around): inputs are a row's first T tokens, targets its last T.
// Each rank reads only its own rows, with pread.
#pragma once

#include <cstdint>
#include <string>

#include <globe/globe.h>

namespace llama {

class TokenFile {
 public:
  // `width`: bytes per token, 2 or 4. A file of fewer than `row` tokens is an error.
  TokenFile(const std::string& path, int width, int64_t row);
  int64_t rows() const { return rows_; }
  int64_t tokens_per_row() const { return row_ - 1; }  // T
  // Rows [first, first + n) (modulo rows()), each `row` tokens from `shift` (0: inputs, 1: targets,
  // row - 1 long), as an int64 [n, row - 1] tensor. Ids at or above `vocab` are an error naming one.
  globe::Tensor read(int64_t first, int64_t n, int shift, int64_t vocab) const;

 private:
  std::string path_;
  int width_;
  int64_t row_, rows_;
};

// The batch of step `step` for this rank's data-parallel share, as a global [batch, row - 1] tensor
// split over the dp axis (axis 0) of `p`; ranks outside `p` hold nothing.
globe::Tensor batch_on(const TokenFile& f, const globe::Placement& p, int64_t step, int64_t batch, int shift,
                       int64_t vocab);

}  // namespace llama
