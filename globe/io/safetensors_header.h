// The safetensors format (https://github.com/huggingface/safetensors), header level: no tensors,
// no files, so the parser can be fuzzed on its own.
//
//   bytes 0..7      N, the header length (unsigned 64-bit little-endian)
//   bytes 8..8+N    JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...,
//                          "__metadata__": {"key": "value", ...}}   (metadata optional)
//   then            the data section; tensor bytes [b, e) relative to its start, row-major,
//                   little-endian. The regions tile the data section: no gap, no overlap, nothing
//                   after.
//
// The parser accepts every safetensors dtype (so `globe-ckpt ls` can show a float16 file) but only
// F32, F64, I64, I32, I8, U8, BF16, F16 and BOOL convert to Globe dtypes; loading anything else is an error naming the tensor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "globe/core/dtype.h"
#include "globe/core/shape.h"

namespace globe::io {

// Largest header accepted (the reference implementation's limit): bounds memory on hostile input.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// One tensor of a header. Offsets are relative to the data section.
struct TensorRecord {
  std::string name;
  std::string dtype_name;      // as written: "F32", "BF16", ...
  std::optional<DType> dtype;  // set for the dtypes Globe has
  Shape shape;
  uint64_t begin = 0, end = 0;
  uint64_t nbytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<TensorRecord> tensors;  // in data order (ascending offsets)
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data section: 8 + N
  uint64_t data_size = 0;

  // The record named `name`, or nullptr.
  const TensorRecord* find(const std::string& name) const;
};

// The safetensors name of a Globe dtype ("F32", "BOOL", ...): one table holds both directions.
const char* safetensors_dtype(DType dtype);
// The safetensors dtype names Globe loads, comma-separated (for errors naming what is supported).
const std::string& loadable_dtypes();
// Globe's dtype for a safetensors dtype name; nullopt for a known but unsupported one (F16, ...);
// throws for a name that is no safetensors dtype. `file`/`key` name the place in errors.
std::optional<DType> parse_dtype(const std::string& name, const std::string& file,
                                 const std::string& key);
// Bytes per element of any safetensors dtype (0 when unknown).
size_t dtype_size(const std::string& name);

// The header length from the first 8 bytes, checked against the file size.
uint64_t parse_header_length(const unsigned char* prefix, uint64_t file_size,
                             const std::string& file);
// Parses and validates the JSON header for a data section of `data_size` bytes. Every problem is
// a globe::Error naming the file (and the tensor, where there is one).
SafetensorsHeader parse_header(std::string_view json, uint64_t data_start, uint64_t data_size,
                               const std::string& file);
// A whole file image in memory (the fuzzer's entry point).
SafetensorsHeader parse_safetensors(std::string_view bytes, const std::string& file);

// The file prefix for `tensors` (name, dtype_name, shape used; begin/end are assigned in the given
// order, back to back from 0): 8-byte length + JSON, padded with spaces so the data section starts
// 64-byte aligned (the reference writer aligns to 8; reads of a 64-byte aligned section into
// 64-byte aligned tensors measured ~20% faster). "__metadata__" comes first.
std::string encode_header(std::vector<TensorRecord>& tensors,
                          const std::map<std::string, std::string>& metadata);

// Element count of `shape` as bytes of `itemsize`, or nullopt on overflow past 2^63.
std::optional<uint64_t> checked_nbytes(const Shape& shape, size_t itemsize);

}  // namespace globe::io
