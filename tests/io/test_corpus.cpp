// Every file in tests/io/corpus/ (malformed headers written by make_safetensors_fixture.py, plus
// the fuzzer's past finds) must make the parser throw globe::Error — never crash, never another
// exception type — both from memory and through the file reader.
#include <filesystem>

#include "globe/io/safetensors.h"
#include "globe/io/sharded_index.h"
#include "io_test_util.h"

namespace globe {
namespace {

TEST(Corpus, EveryMalformedFileIsAGlobeError) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GLOBE_IO_CORPUS_DIR)) {
    const std::string path = entry.path().string(), name = entry.path().filename().string();
    if (name == "README.md") continue;
    const std::string bytes = testing::read_bytes(path);
    if (entry.path().extension() == ".json") {
      EXPECT_THROW(io::parse_index(bytes, path), Error) << name;
    } else {
      EXPECT_THROW(io::parse_safetensors(bytes, path), Error) << name;
      EXPECT_THROW(io::SafetensorsReader(path, "test"), Error) << name;
    }
    ++n;
  }
  EXPECT_GE(n, 25u) << "the corpus went missing";
}

}  // namespace
}  // namespace globe
