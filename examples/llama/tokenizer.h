// Byte-level BPE from a Hugging Face `tokenizer.json` (GPT-2's and Llama 3's kind): added and
// special tokens matched first, the text split by the pre-tokenizer's regular expression (PCRE2
// with Unicode properties), each piece's bytes mapped to GPT-2's printable alphabet and merged by
// rank. Encodes and decodes as the `tokenizers` library does for these layouts (test_tokenizer).
//
//   llama::BpeTokenizer tok("ckpt/tokenizer.json");
//   std::vector<int64_t> ids = tok.encode("Q: what is a global tensor?");
//   std::string text = tok.decode(ids);
//
// A tokenizer.json of another kind (a normalizer, WordPiece or Unigram, byte fallback, another
// pre-tokenizer) is an error naming what is not supported.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace llama {

class BpeTokenizer {
 public:
  explicit BpeTokenizer(const std::string& path);
  ~BpeTokenizer();
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  // Token ids of `text` (no beginning-of-text token added: add_special_tokens=False).
  std::vector<int64_t> encode(const std::string& text) const;
  // The text of `ids` (special tokens as their text). An id outside the vocabulary is an error.
  std::string decode(const std::vector<int64_t>& ids) const;
  int64_t vocab_size() const { return int64_t(id_to_token_.size()); }

 private:
  void encode_piece(const std::string& piece, std::vector<int64_t>& out) const;
  std::string path_;
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> special_;                       // by id: an added token (its text as it is)
  std::vector<std::pair<std::string, int64_t>> added_;  // longest first
  std::unordered_map<std::string, int> merge_rank_;  // "left right" -> rank
  bool ignore_merges_ = false;
  bool add_prefix_space_ = false;
  struct Regex;
  std::unique_ptr<Regex> regex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;  // piece -> ids
};

}  // namespace llama
