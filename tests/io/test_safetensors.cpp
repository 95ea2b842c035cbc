// The safetensors format on one process: exact round trips of every dtype and shape, partial block
// reads, and every kind of bad file as a clear globe::Error naming the file and the tensor.
#include <unistd.h>

#include "globe/io/safetensors.h"
#include "io_test_util.h"

namespace globe {
namespace {

using testing::expect_bit_equal;
using testing::expect_error;
using testing::SharedTempDir;

// A file image: 8-byte length + `header` + `data` (the length may be overridden).
std::string image(const std::string& header, const std::string& data, int64_t length = -1) {
  uint64_t n = length < 0 ? header.size() : uint64_t(length);
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

StateDict sample_state() {
  manual_seed(3);
  StateDict sd;
  sd.set("w", randn({5, 3}));
  sd.set("b64", randn({4}, kFloat64));
  sd.set("idx", from_vector(std::vector<int64_t>{-3, 0, 1LL << 40, 7}, {2, 2}));
  sd.set("scalar", from_vector(std::vector<float>{2.5f}, {}));
  sd.set("empty", zeros({0, 4}));
  sd.set("mask", gt(from_vector(std::vector<float>{1, -1, 2}, {3}), 0.0));  // BOOL
  sd.set("i32", to_dtype(from_vector(std::vector<int64_t>{-70000, 0, 70000}, {3}), kInt32));
  sd.set("i8", to_dtype(from_vector(std::vector<int64_t>{-128, 5, 127}, {3}), kInt8));
  sd.set("u8", to_dtype(from_vector(std::vector<int64_t>{0, 200, 255}, {3}), kUInt8));
  sd.set("strided", transpose(randn({3, 4}), 0, 1));  // not contiguous: saved by value
  return sd;
}

TEST(Safetensors, RoundTripEveryDtypeAndShape) {
  SharedTempDir dir;
  const StateDict sd = sample_state();
  save(sd, dir / "a.safetensors", {.global_dst_rank = 0, .metadata = {{"epoch", "3"}}});
  const StateDict back = load(dir / "a.safetensors");
  ASSERT_EQ(back.keys(), sd.keys());  // data order = save order
  for (const auto& [key, t] : sd) {
    EXPECT_TRUE(back.at(key).is_global());
    EXPECT_EQ(back.at(key).placement(), placement("cpu", {0}));
    expect_bit_equal(back.at(key), t, key);
  }
  io::SafetensorsReader r(dir / "a.safetensors", "test");
  EXPECT_EQ(r.header().metadata.at("epoch"), "3");
  EXPECT_EQ(r.header().data_start % 64, 0u);  // header padded: data 64-byte aligned
  EXPECT_EQ(r.record("idx").dtype_name, "I64");
  EXPECT_EQ(r.record("b64").dtype_name, "F64");
  EXPECT_EQ(r.record("mask").dtype_name, "BOOL");
  EXPECT_EQ(r.record("i32").dtype_name, "I32");
  EXPECT_EQ(r.record("i8").dtype_name, "I8");
  EXPECT_EQ(r.record("u8").dtype_name, "U8");
}

TEST(Safetensors, BlockReadsTakeOnlyTheBlock) {
  SharedTempDir dir;
  manual_seed(5);
  const Tensor full = randn({7, 5, 3}, kFloat64);
  io::write_safetensors(dir / "t.safetensors", {{"t", full}}, {}, "test");
  io::SafetensorsReader r(dir / "t.safetensors", "test");
  const std::vector<std::pair<Shape, Shape>> blocks = {
      {{0, 0, 0}, {7, 5, 3}}, {{2, 0, 0}, {3, 5, 3}}, {{0, 1, 0}, {7, 3, 3}},
      {{1, 2, 1}, {4, 2, 2}}, {{6, 4, 2}, {1, 1, 1}}, {{3, 0, 0}, {0, 5, 3}}};
  for (const auto& [start, extent] : blocks) {
    // Into the middle of a larger destination, to exercise destination strides too.
    Tensor dst = zeros({9, 6, 4}, kFloat64);
    r.read_block(r.record("t"), start, extent, dst, {1, 1, 1});
    Tensor want = full, got = dst;
    for (int64_t d = 0; d < 3; ++d) {
      want = narrow(want, d, start[d], extent[d]);
      got = narrow(got, d, 1, extent[d]);
    }
    expect_bit_equal(got, want, "block " + shape_str(start) + "+" + shape_str(extent));
  }
  // Long rows take the direct path (one pread per row into the destination).
  const Tensor wide_local = reshape(arange(0, 3 * 300000, 1, kFloat32), {3, 300000});
  io::write_safetensors(dir / "w.safetensors", {{"w", wide_local}}, {}, "test");
  io::SafetensorsReader rw(dir / "w.safetensors", "test");
  Tensor dst = zeros({2, 290000});
  rw.read_block(rw.record("w"), {1, 5000}, {2, 290000}, dst, {0, 0});
  expect_bit_equal(dst, narrow(narrow(wide_local, 0, 1, 2), 1, 5000, 290000), "wide block");
}

// ---- bad files ---------------------------------------------------------------------------------

struct BadFile {
  std::string name, bytes;
  std::vector<std::string> expect;  // substrings of the error besides the file name
};

std::vector<BadFile> bad_files() {
  const std::string f32x2(8, '\0');
  return {
      {"short", "abc", {"truncated", "shorter than the 8-byte header length"}},
      {"length_beyond_file",
       image("{}", "", 1000),
       {"header length 1000", "beyond the end of the file"}},
      {"huge_length", image("{}", "", int64_t(1) << 40), {"exceeds the limit"}},
      {"invalid_json", image("{\"a\": {", ""), {"not valid JSON"}},
      {"not_object", image("[1, 2]", ""), {"must be a JSON object"}},
      {"unknown_dtype",
       image(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", f32x2),
       {"tensor 'w'", "unknown dtype 'F33'"}},
      {"unsupported_dtype",
       image(R"({"h":{"dtype":"U16","shape":[4],"data_offsets":[0,8]}})", f32x2),
       {"tensor 'h'", "U16", "cannot load"}},
      {"offsets_out_of_range",
       image(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f32x2),
       {"tensor 'w'", "exceed the data section of 8 bytes"}},
      {"offsets_reversed",
       image(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", f32x2),
       {"tensor 'w'", "end before they begin"}},
      {"overlap",
       image(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           f32x2),
       {"tensor 'b'", "overlaps tensor 'a'"}},
      {"gap",
       image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2),
       {"belong to no tensor", "'a'"}},
      {"trailing",
       image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32x2),
       {"4 bytes after the last tensor", "'a'"}},
      {"shape_mismatch",
       image(R"({"w":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", f32x2),
       {"tensor 'w'", "needs 16 bytes", "hold 8"}},
      {"negative_shape",
       image(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32x2),
       {"tensor 'w'", "non-negative"}},
      {"float_shape",
       image(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", f32x2),
       {"tensor 'w'", "non-negative integers"}},
      {"missing_field",
       image(R"({"w":{"dtype":"F32","shape":[2]}})", f32x2),
       {"tensor 'w'", "data_offsets"}},
      {"duplicate_key",
       image(
           R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
           f32x2),
       {"key 'w' twice"}},
      {"bad_metadata", image(R"({"__metadata__":{"a":1}})", ""), {"__metadata__", "'a'", "string"}},
      {"overflowing_shape",
       image(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
             f32x2),
       {"tensor 'w'", "too large"}},
      {"deep_nesting", image(std::string(50, '[') + std::string(50, ']'), ""), {"nests deeper"}},
      {"bool_byte", image(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2)),
       {"tensor 'm'", "is BOOL but holds the byte 2"}},
  };
}

TEST(SafetensorsBadInput, EveryProblemIsAClearError) {
  SharedTempDir dir;
  for (const BadFile& b : bad_files()) {
    const std::string path = dir / (b.name + ".safetensors");
    if (dist::world_rank() == 0) testing::write_bytes(path, b.bytes);
    std::vector<std::string> expect = b.expect;
    expect.push_back(path);
    // Through the collective load: every rank gets the same error, and the file is left as it was.
    expect_error([&] { load(path); }, expect, b.name);
    if (dist::world_rank() == 0) {
      EXPECT_EQ(testing::read_bytes(path), b.bytes) << b.name;
    }
    // And through the parser on the bytes alone.
    if (b.name != "unsupported_dtype" && b.name != "bool_byte")  // what only reading the data finds
      expect_error([&] { io::parse_safetensors(b.bytes, path); }, expect, b.name + " (in memory)");
  }
}

TEST(SafetensorsBadInput, MissingFileAndDirectory) {
  SharedTempDir dir;
  expect_error([&] { load(dir / "nope.safetensors"); }, {dir / "nope.safetensors", "No such file"},
               "missing file");
  expect_error([&] { load(dir.path()); }, {dir.path(), "directory"}, "a directory");
}

TEST(SafetensorsBadInput, TruncatedDataIsCaught) {
  SharedTempDir dir;
  const std::string path = dir / "t.safetensors";
  save(sample_state(), path);
  if (dist::world_rank() == 0) {
    std::string bytes = testing::read_bytes(path);
    testing::write_bytes(path, bytes.substr(0, bytes.size() - 10));
  }
  // The last tensor's bytes are cut short: named with the file.
  expect_error([&] { load(path); }, {path, "tensor 'strided'", "exceed the data section"},
               "truncated data");
}

TEST(AtomicFile, UncommittedLeavesNothingAndKeepsTheOldFile) {
  SharedTempDir dir;
  if (dist::world_rank() != 0) return;
  const std::string path = dir / "f";
  testing::write_bytes(path, "old");
  {
    io::AtomicFile f(path, "test");
    f.write("new bytes", 9, "data");
  }  // destroyed without commit
  EXPECT_EQ(testing::read_bytes(path), "old");
  EXPECT_EQ(testing::list_dir(dir.path()), std::vector<std::string>{"f"});
  io::AtomicFile g(path, "test");
  g.write("new", 3, "data");
  g.commit();
  EXPECT_EQ(testing::read_bytes(path), "new");
  EXPECT_EQ(testing::list_dir(dir.path()), std::vector<std::string>{"f"});
}

TEST(AtomicFile, InjectedFullDiskFailsCleanly) {
  SharedTempDir dir;
  if (dist::world_rank() != 0) return;
  const std::string path = dir / "f";
  testing::write_bytes(path, "old");
  ::setenv("GLOBE_IO_FAIL_WRITE_AFTER", "5", 1);  // the environment hook
  expect_error(
      [&] {
        io::AtomicFile f(path, "test");
        f.write("0123456789", 10, "tensor 'x'");
      },
      {path, "tensor 'x'", "No space left on device"}, "env fault");
  ::unsetenv("GLOBE_IO_FAIL_WRITE_AFTER");
  EXPECT_EQ(testing::read_bytes(path), "old");
  EXPECT_EQ(testing::list_dir(dir.path()), std::vector<std::string>{"f"});
}

}  // namespace
}  // namespace globe
