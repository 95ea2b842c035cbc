// The Llama's byte-level BPE tokenizer (examples/llama/tokenizer.h) against Hugging Face
// `tokenizers` itself: two tokenizers trained here with it (Llama 3's layout with special tokens,
// GPT-2's), and the ids it gives for texts with contractions, numbers, whitespace runs, Unicode and
// special tokens (tests/llama/data/tokenizer, scripts/golden/make_tokenizer_golden.py). Every text
// decodes back to itself; what is not byte-level BPE is refused by name. A SentencePiece model
// (Llama 2's kind) through libsentencepiece gives the Python package's ids.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tokenizer.h"

namespace {

const std::string kDir = std::string(GLOBE_LLAMA_DATA) + "/tokenizer";

nlohmann::json golden() {
  std::ifstream in(kDir + "/golden.json");
  return nlohmann::json::parse(in);
}

class Tokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(Tokenizer, IdsEqualHuggingFaceTokenizersAndDecodeBack) {
  const llama::BpeTokenizer tok(kDir + "/" + GetParam() + ".json");
  EXPECT_EQ(tok.vocab_size(), 1000);
  const nlohmann::json g = golden();
  ASSERT_EQ(g["texts"].size(), g[GetParam()].size());
  for (size_t i = 0; i < g["texts"].size(); ++i) {
    const std::string text = g["texts"][i].get<std::string>();
    const std::vector<int64_t> want = g[GetParam()][i].get<std::vector<int64_t>>();
    const std::vector<int64_t> got = tok.encode(text);
    EXPECT_EQ(got, want) << GetParam() << ": '" << text << "'";
    EXPECT_EQ(tok.decode(got), text);
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, Tokenizer, ::testing::Values("llama3", "gpt2"));

TEST(SentencePiece, IdsEqualThePythonPackagesAndDecodeAsItDoes) {
  const std::unique_ptr<llama::Tokenizer> tok = llama::open_tokenizer(kDir + "/llama2.model");
  EXPECT_EQ(tok->vocab_size(), 500);
  const nlohmann::json g = golden();
  for (size_t i = 0; i < g["texts"].size(); ++i) {
    const std::string text = g["texts"][i].get<std::string>();
    const std::vector<int64_t> got = tok->encode(text);
    EXPECT_EQ(got, g["llama2"][i].get<std::vector<int64_t>>()) << "'" << text << "'";
    EXPECT_EQ(tok->decode(got), g["llama2_decoded"][i].get<std::string>());
  }
  try {
    llama::open_tokenizer(kDir + "/golden.json.model");
    ADD_FAILURE() << "no error for a missing model";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("is not a SentencePiece model"), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, WhatIsNotByteLevelBpeIsRefusedByName) {
  const std::string dir = ::testing::TempDir() + "/tok";
  std::filesystem::create_directories(dir);
  std::ifstream in(kDir + "/gpt2.json");
  const nlohmann::json base = nlohmann::json::parse(in);
  auto refused = [&](nlohmann::json j, const std::string& says) {
    std::ofstream(dir + "/t.json") << j.dump();
    try {
      llama::BpeTokenizer t(dir + "/t.json");
      ADD_FAILURE() << "no error; expected '" << says << "'";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = base;
  j["normalizer"] = {{"type", "NFC"}};
  refused(j, "a normalizer (NFC) is not supported (byte-level BPE only)");
  j = base;
  j["model"]["type"] = "WordPiece";
  refused(j, "model type WordPiece is not supported");
  j = base;
  j["model"]["byte_fallback"] = true;
  refused(j, "byte_fallback is not supported");
  j = base;
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  refused(j, "the pre_tokenizer");
  try {
    llama::BpeTokenizer t(dir + "/missing.json");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
  }
  const llama::BpeTokenizer tok(kDir + "/gpt2.json");
  try {
    tok.decode({5, 1000});
    ADD_FAILURE() << "no error for id 1000";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("id 1000 is not in the vocabulary"), std::string::npos) << e.what();
  }
}

}  // namespace
