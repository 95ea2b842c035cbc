// libFuzzer target for the checkpoint parsers (built with -DGLOBE_BUILD_FUZZERS=ON and clang; see
// tests/io/fuzz/README.md). An input starting with '{' goes to the sharded-checkpoint index parser,
// anything else to the safetensors parser (a whole file image). The only acceptable failure is a
// globe::Error: any other exception escapes and any crash or sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "globe/base/error.h"
#include "globe/io/safetensors_header.h"
#include "globe/io/sharded_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (!bytes.empty() && bytes[0] == '{') {
      globe::io::parse_index(bytes, "fuzz/index.json");
    } else {
      const globe::io::SafetensorsHeader h =
          globe::io::parse_safetensors(bytes, "fuzz.safetensors");
      // Whatever parses must be self-consistent.
      uint64_t at = 0;
      for (const auto& t : h.tensors) {
        if (t.begin != at || t.end < t.begin || t.end > h.data_size) __builtin_trap();
        at = t.end;
      }
      if (at != h.data_size || h.data_start + h.data_size != size) __builtin_trap();
    }
  } catch (const globe::Error&) {
  }
  return 0;
}
