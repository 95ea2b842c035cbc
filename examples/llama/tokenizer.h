// Tokenizers. Byte-level BPE from a Hugging Face `tokenizer.json` (GPT-2's and Llama 3's kind): added and
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

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of `text` (no beginning-of-text token added: add_special_tokens=False).
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  // The text of `ids` (special tokens as their text). An id outside the vocabulary is an error.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
};

// By the file: a tokenizer.json (byte-level BPE, below) or a SentencePiece model (*.model: Llama 2's
// tokenizer.model, through Debian's libsentencepiece).
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path);

class BpeTokenizer : public Tokenizer {
 public:
  explicit BpeTokenizer(const std::string& path);
  ~BpeTokenizer() override;
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return int64_t(id_to_token_.size()); }

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
