#include "globe/io/safetensors.h"

#include <algorithm>
#include <cstring>

#include "globe/kernels/device_kernels.h"

namespace globe::io {

namespace {

// Block reads: rows at least this long are read straight into the destination; shorter ones are
// read in windows (gaps up to kMaxGap bytes read and dropped, windows up to kMaxWindow bytes).
constexpr uint64_t kDirectRun = 1 << 20;
constexpr uint64_t kMaxGap = 64 << 10;
constexpr uint64_t kMaxWindow = 8 << 20;

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path, const std::string& op)
    : file_(path, op), op_(op) {
  unsigned char prefix[8] = {};
  if (file_.size() >= 8) file_.read_at(0, prefix, 8, "the header length");
  const uint64_t n = parse_header_length(prefix, file_.size(), path);
  std::string text(n, '\0');
  file_.read_at(8, text.data(), n, "the header");
  header_ = parse_header(text, 8 + n, file_.size() - 8 - n, path);
}

const TensorRecord& SafetensorsReader::record(const std::string& name) const {
  const TensorRecord* r = header_.find(name);
  GLOBE_CHECK(r != nullptr, "[", op_, "] '", path(), "' has no tensor '", name, "'");
  return *r;
}

DType SafetensorsReader::dtype_of(const TensorRecord& rec) const {
  GLOBE_CHECK(rec.dtype.has_value(), "[", op_, "] '", path(), "': tensor '", rec.name,
              "' has dtype ", rec.dtype_name,
              ", which Globe cannot load (supported: ", loadable_dtypes(), ")");
  return *rec.dtype;
}

// A BOOL tensor's bytes must be 0 or 1: any other byte read as a C++ bool is undefined behaviour,
// so a file holding one is an error naming the tensor, not a value.
void SafetensorsReader::check_bools(const TensorRecord& rec, const Tensor& t) const {
  if (t.dtype() != kBool) return;
  const auto* b = static_cast<const unsigned char*>(t.raw_data());
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    GLOBE_CHECK(b[i] <= 1, "[", op_, "] '", path(), "': tensor '", rec.name, "' is BOOL but holds the byte ",
                int(b[i]), " (a bool is stored as 0 or 1)");
}

Tensor SafetensorsReader::read(const TensorRecord& rec) const {
  Tensor out = Tensor::uninitialized(rec.shape, dtype_of(rec));
  if (rec.nbytes() > 0)
    file_.read_at(header_.data_start + rec.begin, out.raw_data(), rec.nbytes(),
                  "tensor '" + rec.name + "'");
  check_bools(rec, out);
  return out;
}

void SafetensorsReader::read_block(const TensorRecord& rec, const Shape& start, const Shape& extent,
                                   const Tensor& dst, const Shape& dst_start) const {
  copy_block(rec, start, extent, dst, dst_start);
  check_bools(rec, dst);
}

void SafetensorsReader::prefetch_block(const TensorRecord& rec, const Shape& start, const Shape& extent) const {
  if (numel_of(extent) == 0 || start.size() != rec.shape.size()) return;
  const Shape ss = contiguous_strides(rec.shape);
  int64_t first = 0, last = 0;
  for (size_t d = 0; d < start.size(); ++d) {
    first += start[d] * ss[d];
    last += (start[d] + extent[d] - 1) * ss[d];
  }
  const uint64_t isz = itemsize(dtype_of(rec));
  file_.prefetch(header_.data_start + rec.begin + uint64_t(first) * isz, uint64_t(last - first + 1) * isz);
}

void SafetensorsReader::copy_block(const TensorRecord& rec, const Shape& start, const Shape& extent,
                                   const Tensor& dst, const Shape& dst_start) const {
  const DType dtype = dtype_of(rec);
  const size_t nd = rec.shape.size();
  GLOBE_CHECK(start.size() == nd && extent.size() == nd && dst_start.size() == nd &&
                  size_t(dst.dim()) == nd && dst.dtype() == dtype && dst.is_contiguous(),
              "[", op_, "] '", path(), "': tensor '", rec.name, "': bad block request");
  for (size_t d = 0; d < nd; ++d)
    GLOBE_CHECK(start[d] >= 0 && extent[d] >= 0 && start[d] + extent[d] <= rec.shape[d] &&
                    dst_start[d] >= 0 && dst_start[d] + extent[d] <= dst.shape()[d],
                "[", op_, "] '", path(), "': tensor '", rec.name, "': block [", shape_str(start),
                " + ", shape_str(extent), ") outside ", shape_str(rec.shape));
  if (numel_of(extent) == 0) return;
  const std::string what = "tensor '" + rec.name + "'";
  const uint64_t base = header_.data_start + rec.begin;
  char* out = static_cast<char*>(dst.raw_data());
  const uint64_t isz = itemsize(dtype);
  if (nd == 0) {
    file_.read_at(base, out, isz, what);
    return;
  }
  // Fuse trailing dims that are whole in both source and destination into one contiguous run.
  const Shape ss = contiguous_strides(rec.shape), ds = contiguous_strides(dst.shape());
  size_t k = nd - 1;
  int64_t run = extent[k];
  while (k > 0 && extent[k] == rec.shape[k] && extent[k] == dst.shape()[k]) {
    --k;
    run *= extent[k];
  }
  const uint64_t run_bytes = uint64_t(run) * isz;
  // Every run's (source, destination) byte offset, in ascending source order.
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  Shape idx(k, 0);
  for (;;) {
    int64_t so = start[k] * ss[k], dof = dst_start[k] * ds[k];
    for (size_t d = 0; d < k; ++d) {
      so += (start[d] + idx[d]) * ss[d];
      dof += (dst_start[d] + idx[d]) * ds[d];
    }
    runs.emplace_back(uint64_t(so) * isz, uint64_t(dof) * isz);
    size_t d = k;
    while (d > 0 && ++idx[d - 1] == extent[d - 1]) idx[--d] = 0;
    if (d == 0) break;
  }
  std::vector<char> window;
  for (size_t i = 0; i < runs.size();) {
    if (run_bytes >= kDirectRun) {
      file_.read_at(base + runs[i].first, out + runs[i].second, run_bytes, what);
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < runs.size() && runs[j + 1].first - (runs[j].first + run_bytes) <= kMaxGap &&
           runs[j + 1].first + run_bytes - runs[i].first <= kMaxWindow)
      ++j;
    const uint64_t span = runs[j].first + run_bytes - runs[i].first;
    window.resize(span);
    file_.read_at(base + runs[i].first, window.data(), span, what);
    for (size_t r = i; r <= j; ++r)
      std::memcpy(out + runs[r].second, window.data() + (runs[r].first - runs[i].first), run_bytes);
    i = j + 1;
  }
}

SafetensorsWriter::SafetensorsWriter(const std::string& path,
                                     const std::vector<TensorDecl>& tensors,
                                     const std::map<std::string, std::string>& metadata,
                                     const std::string& op)
    : file_(path, op), op_(op), tensors_(tensors) {
  std::vector<TensorRecord> records;
  for (const TensorDecl& t : tensors)
    records.push_back({t.name, safetensors_dtype(t.dtype), t.dtype, t.shape});
  const std::string prefix = encode_header(records, metadata);
  file_.write(prefix.data(), prefix.size(), "the header");
}

void SafetensorsWriter::append(const Tensor& value) {
  GLOBE_CHECK(next_ < tensors_.size(), "[", op_, "] '", path(),
              "': more tensors appended than declared");
  const TensorDecl& t = tensors_[next_];
  GLOBE_CHECK(!value.is_global() && value.dtype() == t.dtype && value.shape() == t.shape, "[", op_,
              "] '", path(), "': tensor '", t.name, "' was declared ", dtype_name(t.dtype),
              shape_str(t.shape), " but got ", describe(value));
  const Tensor dense = kernels::device_dense(value.host_view());  // a GPU tensor is copied to the host first
  file_.write(dense.raw_data(), size_t(dense.numel()) * itemsize(dense.dtype()),
              "tensor '" + t.name + "'");
  ++next_;
}

void SafetensorsWriter::commit() {
  GLOBE_CHECK(next_ == tensors_.size(), "[", op_, "] '", path(), "': ", tensors_.size() - next_,
              " declared tensors were not written (next: '", tensors_[next_].name, "')");
  file_.commit();
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata, const std::string& op) {
  std::vector<TensorDecl> decls;
  for (const auto& [name, t] : tensors) decls.push_back({name, t.dtype(), t.shape()});
  SafetensorsWriter w(path, decls, metadata, op);
  for (const auto& [name, t] : tensors) w.append(t);
  w.commit();
}

}  // namespace globe::io
