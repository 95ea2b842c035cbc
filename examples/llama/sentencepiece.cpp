// A SentencePiece model (Llama 2's tokenizer.model) through Debian's libsentencepiece.
#include <sentencepiece_processor.h>

#include <globe/globe.h>

#include "tokenizer.h"

namespace llama {

namespace {

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : path_(path) {
    const auto status = sp_.Load(path);
    GLOBE_CHECK(status.ok(), "[tokenizer] '", path, "' is not a SentencePiece model: ", status.ToString());
  }
  std::vector<int64_t> encode(const std::string& text) const override {
    std::vector<int> ids;
    const auto status = sp_.Encode(text, &ids);
    GLOBE_CHECK(status.ok(), "[tokenizer] '", path_, "': ", status.ToString());
    return {ids.begin(), ids.end()};
  }
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::vector<int> v;
    for (const int64_t id : ids) {
      GLOBE_CHECK(id >= 0 && id < vocab_size(), "[tokenizer] id ", id, " is not in the vocabulary of '", path_, "'");
      v.push_back(int(id));
    }
    std::string text;
    const auto status = sp_.Decode(v, &text);
    GLOBE_CHECK(status.ok(), "[tokenizer] '", path_, "': ", status.ToString());
    return text;
  }
  int64_t vocab_size() const override { return sp_.GetPieceSize(); }

 private:
  std::string path_;
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path) {
  if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".model") == 0) return std::make_unique<SentencePieceTokenizer>(path);
  return std::make_unique<BpeTokenizer>(path);
}

}  // namespace llama
