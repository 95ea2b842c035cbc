#include "tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>

#include <globe/globe.h>

namespace llama {

namespace {

// GPT-2's pre-tokenizer pattern: what ByteLevel with use_regex splits by.
const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

// Length in bytes of the UTF-8 character starting with byte `c` (1 for a stray continuation byte).
size_t utf8_length(unsigned char c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

// GPT-2's byte -> printable character table: the printable Latin-1 bytes stand for themselves, the
// others (space, control bytes, ...) for the characters from U+0100 on, in byte order.
struct ByteAlphabet {
  std::array<std::string, 256> of_byte;
  std::unordered_map<std::string, uint8_t> to_byte;
  ByteAlphabet() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      of_byte[size_t(b)] = utf8(printable ? uint32_t(b) : uint32_t(256 + next++));
      to_byte[of_byte[size_t(b)]] = uint8_t(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

}  // namespace

struct BpeTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

BpeTokenizer::BpeTokenizer(const std::string& path) : path_(path), regex_(std::make_unique<Regex>()) {
  std::ifstream in(path);
  GLOBE_CHECK(in.good(), "[tokenizer] cannot read '", path, "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    GLOBE_FAIL("[tokenizer] '", path, "' is not valid JSON: ", e.what());
  }
  auto refuse = [&](const std::string& what) { GLOBE_FAIL("[tokenizer] '", path, "': ", what, " is not supported (byte-level BPE only)"); };
  if (j.contains("normalizer") && !j["normalizer"].is_null()) refuse("a normalizer (" + j["normalizer"].value("type", std::string("?")) + ")");
  const nlohmann::json& model = j.at("model");
  if (model.value("type", std::string()) != "BPE") refuse("model type " + model.value("type", std::string("(none)")));
  if (model.value("byte_fallback", false)) refuse("byte_fallback");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
    if (model.contains(k) && !model[k].is_null()) refuse(std::string(k));
  ignore_merges_ = model.value("ignore_merges", false);

  // The pre-tokenizer: ByteLevel with GPT-2's pattern, or Split(pattern, Isolated) then ByteLevel.
  std::string pattern;
  const nlohmann::json& pre = j.at("pre_tokenizer");
  auto byte_level = [&](const nlohmann::json& p, bool may_split) {
    add_prefix_space_ = p.value("add_prefix_space", false);
    if (add_prefix_space_) refuse("ByteLevel's add_prefix_space");
    if (p.value("use_regex", true)) {
      if (!may_split) refuse("ByteLevel with its own regex after a Split");
      pattern = kGpt2Pattern;
    }
  };
  if (pre.value("type", std::string()) == "ByteLevel") {
    byte_level(pre, true);
  } else if (pre.value("type", std::string()) == "Sequence" && pre["pretokenizers"].size() == 2 &&
             pre["pretokenizers"][0].value("type", std::string()) == "Split" &&
             pre["pretokenizers"][1].value("type", std::string()) == "ByteLevel") {
    const nlohmann::json& split = pre["pretokenizers"][0];
    if (split.value("behavior", std::string()) != "Isolated" || split.value("invert", false) || !split["pattern"].contains("Regex"))
      refuse("a Split that is not an isolated regular expression");
    pattern = split["pattern"]["Regex"].get<std::string>();
    byte_level(pre["pretokenizers"][1], false);
  } else {
    refuse("the pre_tokenizer " + pre.dump().substr(0, 80));
  }
  int err = 0;
  PCRE2_SIZE at = 0;
  regex_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                               &err, &at, nullptr);
  if (regex_->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    GLOBE_FAIL("[tokenizer] '", path, "': the pre-tokenizer's pattern does not compile at offset ", at, ": ",
               reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(regex_->code, PCRE2_JIT_COMPLETE);  // faster where the JIT exists; correct either way

  for (const auto& [token, id] : model.at("vocab").items()) vocab_[token] = id.get<int64_t>();
  int64_t top = -1;
  for (const auto& [token, id] : vocab_) top = std::max(top, id);
  if (j.contains("added_tokens"))
    for (const nlohmann::json& a : j["added_tokens"]) {
      const int64_t id = a.at("id").get<int64_t>();
      const std::string content = a.at("content").get<std::string>();
      vocab_[content] = id;
      added_.emplace_back(content, id);
      top = std::max(top, id);
    }
  std::sort(added_.begin(), added_.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  id_to_token_.assign(size_t(top + 1), "");
  special_.assign(size_t(top + 1), false);
  for (const auto& [token, id] : vocab_) id_to_token_[size_t(id)] = token;
  for (const auto& [content, id] : added_) special_[size_t(id)] = true;
  int rank = 0;
  for (const nlohmann::json& m : model.at("merges")) {
    // ["a", "b"] (tokenizers >= 0.20) or "a b"
    const std::string key = m.is_array() ? m[0].get<std::string>() + " " + m[1].get<std::string>() : m.get<std::string>();
    merge_rank_.emplace(key, rank++);
  }
}

BpeTokenizer::~BpeTokenizer() = default;

void BpeTokenizer::encode_piece(const std::string& piece, std::vector<int64_t>& out) const {
  auto hit = cache_.find(piece);
  if (hit != cache_.end()) {
    out.insert(out.end(), hit->second.begin(), hit->second.end());
    return;
  }
  const ByteAlphabet& ab = alphabet();
  std::vector<std::string> symbols;
  std::string whole;
  for (const char c : piece) {
    symbols.push_back(ab.of_byte[uint8_t(c)]);
    whole += symbols.back();
  }
  std::vector<int64_t> ids;
  auto known = vocab_.find(whole);
  if (ignore_merges_ && known != vocab_.end()) {
    ids.push_back(known->second);
  } else {
    // Merge the adjacent pair of lowest rank, every occurrence left to right, until none merges.
    while (symbols.size() > 1) {
      int best = INT_MAX;
      size_t at = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        auto r = merge_rank_.find(symbols[i] + " " + symbols[i + 1]);
        if (r != merge_rank_.end() && r->second < best) {
          best = r->second;
          at = i;
        }
      }
      if (best == INT_MAX) break;
      const std::string a = symbols[at], b = symbols[at + 1];
      std::vector<std::string> merged;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == a && symbols[i + 1] == b) {
          merged.push_back(a + b);
          ++i;
        } else {
          merged.push_back(symbols[i]);
        }
      }
      symbols.swap(merged);
    }
    for (const std::string& s : symbols) {
      auto it = vocab_.find(s);
      GLOBE_CHECK(it != vocab_.end(), "[tokenizer] '", path_, "': the piece '", s, "' of '", piece,
                  "' is not in the vocabulary (a byte-level vocabulary has every byte)");
      ids.push_back(it->second);
    }
  }
  out.insert(out.end(), ids.begin(), ids.end());
  cache_.emplace(piece, std::move(ids));
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> out;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
  // The pre-tokenizer's pieces of text[begin, end): each match, and any text between matches.
  auto split = [&](size_t begin, size_t end) {
    const std::string seg = text.substr(begin, end - begin);
    size_t pos = 0;
    while (pos < seg.size()) {
      const int rc = pcre2_match(regex_->code, reinterpret_cast<PCRE2_SPTR>(seg.data()), seg.size(), pos, 0, md, nullptr);
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t s = ov[0], e = ov[1];
      if (e == s) e = s + utf8_length(uint8_t(seg[s]));  // an empty match: take one character
      if (s > pos) encode_piece(seg.substr(pos, s - pos), out);
      encode_piece(seg.substr(s, e - s), out);
      pos = e;
    }
    if (pos < seg.size()) encode_piece(seg.substr(pos), out);
  };
  // Added tokens first (the longest where several start at one place); the text between them is split.
  size_t start = 0, pos = 0;
  while (pos < text.size()) {
    bool matched = false;
    for (const auto& [content, id] : added_) {
      if (!content.empty() && text.compare(pos, content.size(), content) == 0) {
        if (pos > start) split(start, pos);
        out.push_back(id);
        pos += content.size();
        start = pos;
        matched = true;
        break;
      }
    }
    if (!matched) ++pos;
  }
  if (start < text.size()) split(start, text.size());
  pcre2_match_data_free(md);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  const ByteAlphabet& ab = alphabet();
  std::string out;
  for (const int64_t id : ids) {
    GLOBE_CHECK(id >= 0 && id < vocab_size() && !id_to_token_[size_t(id)].empty(), "[tokenizer] id ", id,
                " is not in the vocabulary of '", path_, "'");
    const std::string& t = id_to_token_[size_t(id)];
    if (special_[size_t(id)]) {
      out += t;
      continue;
    }
    for (size_t i = 0; i < t.size();) {
      const size_t n = utf8_length(uint8_t(t[i]));
      auto b = ab.to_byte.find(t.substr(i, n));
      GLOBE_CHECK(b != ab.to_byte.end(), "[tokenizer] token ", id, " '", t, "' has a character outside the byte alphabet");
      out += char(b->second);
      i += n;
    }
  }
  return out;
}

}  // namespace llama
