#include "globe/io/safetensors_header.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "globe/base/error.h"
#include "globe/io/json_parse.h"

namespace globe::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping here");

namespace {

constexpr size_t kDataAlignment = 64;  // where the data section starts (see encode_header)

using json = nlohmann::ordered_json;

struct DtypeInfo {
  const char* name;
  size_t size;
  std::optional<DType> dtype;
};

constexpr size_t kNumDtypes = 15;
const DtypeInfo kDtypes[kNumDtypes] = {
    {"F32", 4, DType::float32},
    {"F64", 8, DType::float64},
    {"I64", 8, DType::int64},
    {"BOOL", 1, DType::boolean},
    {"U8", 1, DType::uint8},
    {"I8", 1, DType::int8},
    {"F8_E5M2", 1, {}},
    {"F8_E4M3", 1, {}},
    {"I16", 2, {}},
    {"U16", 2, {}},
    {"F16", 2, DType::float16},
    {"BF16", 2, DType::bfloat16},
    {"I32", 4, DType::int32},
    {"U32", 4, {}},
    {"U64", 8, {}},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

// A non-negative integer that fits in int64.
bool as_extent(const json& v, uint64_t& out) {
  if (!v.is_number_unsigned()) return false;
  out = v.get<uint64_t>();
  return out <= uint64_t(INT64_MAX);
}

TensorRecord parse_record(const std::string& name, const json& v, uint64_t data_size,
                          const std::string& file) {
  auto fail_if = [&](bool bad, const auto&... msg) {
    GLOBE_CHECK(!bad, "[safetensors] '", file, "': tensor '", name, "': ", msg...);
  };
  fail_if(!v.is_object(), "expected an object {dtype, shape, data_offsets}, got ", v.type_name());
  for (const char* field : {"dtype", "shape", "data_offsets"})
    fail_if(!v.contains(field), "no \"", field, "\"");
  TensorRecord r;
  r.name = name;
  const json& dt = v.at("dtype");
  fail_if(!dt.is_string(), "dtype must be a string, got ", dt.type_name());
  r.dtype_name = dt.get<std::string>();
  r.dtype = parse_dtype(r.dtype_name, file, name);
  const json& shape = v.at("shape");
  fail_if(!shape.is_array(), "shape must be an array, got ", shape.type_name());
  for (const json& e : shape) {
    uint64_t d = 0;
    fail_if(!as_extent(e, d), "shape entries must be non-negative integers, got ", e.dump());
    r.shape.push_back(int64_t(d));
  }
  const json& off = v.at("data_offsets");
  fail_if(!off.is_array() || off.size() != 2, "data_offsets must be [begin, end]");
  fail_if(!as_extent(off[0], r.begin) || !as_extent(off[1], r.end),
          "data_offsets must be non-negative integers, got ", off.dump());
  fail_if(r.begin > r.end, "data_offsets [", r.begin, ", ", r.end, ") end before they begin");
  fail_if(r.end > data_size, "data_offsets [", r.begin, ", ", r.end,
          ") exceed the data section of ", data_size, " bytes");
  const std::optional<uint64_t> need = checked_nbytes(r.shape, dtype_size(r.dtype_name));
  fail_if(!need, "shape ", shape_str(r.shape), " is too large");
  fail_if(*need != r.nbytes(), "shape ", shape_str(r.shape), " of ", r.dtype_name, " needs ", *need,
          " bytes but data_offsets [", r.begin, ", ", r.end, ") hold ", r.nbytes());
  return r;
}

}  // namespace

const TensorRecord* SafetensorsHeader::find(const std::string& name) const {
  for (const TensorRecord& r : tensors)
    if (r.name == name) return &r;
  return nullptr;
}

const char* safetensors_dtype(DType dtype) {
  for (const DtypeInfo& d : kDtypes)
    if (d.dtype == dtype) return d.name;
  GLOBE_FAIL("[safetensors] unknown dtype ", int(dtype));
}

const std::string& loadable_dtypes() {
  static const std::string names = [] {
    std::string s;
    for (const DtypeInfo& d : kDtypes)
      if (d.dtype) s += (s.empty() ? "" : ", ") + std::string(d.name);
    return s;
  }();
  return names;
}

std::optional<DType> parse_dtype(const std::string& name, const std::string& file,
                                 const std::string& key) {
  const DtypeInfo* d = find_dtype(name);
  GLOBE_CHECK(d != nullptr, "[safetensors] '", file, "': tensor '", key, "' has unknown dtype '",
              name, "'");
  return d->dtype;
}

size_t dtype_size(const std::string& name) {
  const DtypeInfo* d = find_dtype(name);
  return d ? d->size : 0;
}

std::optional<uint64_t> checked_nbytes(const Shape& shape, size_t itemsize) {
  uint64_t n = itemsize;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;  // an empty tensor, whatever the other extents
  }
  for (int64_t d : shape) {
    if (n > uint64_t(INT64_MAX) / uint64_t(d)) return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}

uint64_t parse_header_length(const unsigned char* prefix, uint64_t file_size,
                             const std::string& file) {
  GLOBE_CHECK(file_size >= 8, "[safetensors] '", file, "' is truncated: ", file_size,
              " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, prefix, 8);  // little-endian host (static_assert above)
  GLOBE_CHECK(n <= kMaxHeaderBytes, "[safetensors] '", file, "': header length ", n,
              " exceeds the limit of ", kMaxHeaderBytes,
              " bytes (not a safetensors file, or corrupt)");
  GLOBE_CHECK(n <= file_size - 8, "[safetensors] '", file, "': header length ", n,
              " runs beyond the end of the file (", file_size, " bytes): truncated or corrupt");
  return n;
}

SafetensorsHeader parse_header(std::string_view text, uint64_t data_start, uint64_t data_size,
                               const std::string& file) {
  const json root = parse_json_strict(text, "safetensors", file, "the header");
  GLOBE_CHECK(root.is_object(), "[safetensors] '", file,
              "': the header must be a JSON object, got ", root.type_name());
  SafetensorsHeader h;
  h.data_start = data_start;
  h.data_size = data_size;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      GLOBE_CHECK(value.is_object(), "[safetensors] '", file,
                  "': __metadata__ must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        GLOBE_CHECK(mv.is_string(), "[safetensors] '", file, "': __metadata__ entry '", mk,
                    "' must be a string, got ", mv.type_name());
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_record(key, value, data_size, file));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorRecord& a, const TensorRecord& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  // The regions must tile the data section exactly.
  uint64_t expect = 0;
  const TensorRecord* prev = nullptr;
  for (const TensorRecord& r : h.tensors) {
    GLOBE_CHECK(r.begin >= expect, "[safetensors] '", file, "': tensor '", r.name, "' data [",
                r.begin, ", ", r.end, ") overlaps tensor '", prev ? prev->name : "", "' [",
                prev ? prev->begin : 0, ", ", expect, ")");
    GLOBE_CHECK(r.begin == expect, "[safetensors] '", file, "': data bytes [", expect, ", ",
                r.begin, ") belong to no tensor (a gap before tensor '", r.name, "')");
    expect = r.end;
    prev = &r;
  }
  GLOBE_CHECK(expect == data_size, "[safetensors] '", file, "': the data section has ",
              data_size - expect, " bytes after the last tensor",
              prev ? " ('" + prev->name + "' ends at " + std::to_string(expect) + ")" : "",
              ": truncated header or corrupt file");
  return h;
}

SafetensorsHeader parse_safetensors(std::string_view bytes, const std::string& file) {
  const uint64_t n =
      parse_header_length(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), file);
  return parse_header(bytes.substr(8, n), 8 + n, bytes.size() - 8 - n, file);
}

std::string encode_header(std::vector<TensorRecord>& tensors,
                          const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!metadata.empty()) root["__metadata__"] = metadata;
  uint64_t at = 0;
  for (TensorRecord& r : tensors) {
    GLOBE_CHECK(r.name != "__metadata__", "[safetensors] a tensor cannot be named '__metadata__'");
    GLOBE_CHECK(!root.contains(r.name), "[safetensors] two tensors are named '", r.name, "'");
    const std::optional<uint64_t> n = checked_nbytes(r.shape, dtype_size(r.dtype_name));
    GLOBE_CHECK(n.has_value() && dtype_size(r.dtype_name) > 0, "[safetensors] tensor '", r.name,
                "': bad dtype ", r.dtype_name, " or shape ", shape_str(r.shape));
    r.begin = at;
    r.end = at + *n;
    at = r.end;
    root[r.name] = {
        {"dtype", r.dtype_name}, {"shape", r.shape}, {"data_offsets", {r.begin, r.end}}};
  }
  std::string text;
  try {
    text = root.dump();
  } catch (const nlohmann::json::exception& e) {
    GLOBE_FAIL("[safetensors] cannot encode the header (names must be valid UTF-8): ", e.what());
  }
  text.append((kDataAlignment - (8 + text.size()) % kDataAlignment) % kDataAlignment, ' ');
  const uint64_t len = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &len, 8);
  return out + text;
}

}  // namespace globe::io
