#include "globe/core/tensor.h"

#include <cmath>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <utility>

#include "globe/base/free_lists.h"
#include "globe/core/hooks.h"
#include "globe/device/memory.h"
#include "globe/core/strided.h"

namespace globe {

Storage::Storage(size_t n, bool zero, Device d)
    : data(detail::allocate(d, n, zero)), nbytes(n), device(d) {}

Storage::Storage(void* d, size_t n, std::shared_ptr<void> o) : data(d), nbytes(n), owner(std::move(o)) {}

Storage::~Storage() {
  if (owner || data == nullptr) return;  // released with the owner, or released already
  detail::release(device, data, nbytes);
}

namespace {
// Set while a ~TensorImpl on this thread is releasing graph nodes: nodes whose last owner dies
// meanwhile are queued here instead of being destroyed recursively. A pointer (trivially
// destructible), so tensors destroyed during static destruction are safe.
thread_local std::vector<std::shared_ptr<Node>>* t_release_queue = nullptr;
}  // namespace

TensorImpl::~TensorImpl() {
  // Destroying a node destroys its input tensors, whose nodes destroy their inputs, and so on: one
  // nested call per op of the graph (a 10k-op chain overflows the stack in sanitizer builds).
  // Instead the outermost destructor drains the chain with a loop.
  if (!grad_fn || grad_fn.use_count() != 1) return;  // not the last owner: nothing is destroyed
  if (t_release_queue != nullptr) {
    t_release_queue->push_back(std::move(grad_fn));
    return;
  }
  std::vector<std::shared_ptr<Node>> queue;
  queue.push_back(std::move(grad_fn));
  t_release_queue = &queue;
  while (!queue.empty()) {
    std::shared_ptr<Node> node = std::move(queue.back());
    queue.pop_back();
    node.reset();  // may queue the nodes of its inputs
  }
  t_release_queue = nullptr;
}

namespace {
Tensor allocate(const Shape& shape, DType dtype, bool zero, const Device& device) {
  for (int64_t d : shape) GLOBE_CHECK(d >= 0, "[empty] negative extent in shape ", shape_str(shape));
  check_dims(shape, "empty");
  auto impl = detail::make_kept<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->strides = contiguous_strides(shape);
  impl->storage = detail::make_kept<Storage>(numel_of(shape) * itemsize(dtype), zero, device);
  return Tensor(std::move(impl));
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  return allocate(shape, dtype, true, device);
}
Tensor Tensor::uninitialized(const Shape& shape, DType dtype, const Device& device) {
  return allocate(shape, dtype, false, device);
}

Tensor Tensor::from_external(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner) {
  for (int64_t d : shape) GLOBE_CHECK(d >= 0, "[from_external] negative extent in shape ", shape_str(shape));
  GLOBE_CHECK(owner != nullptr, "[from_external] needs the owner of the memory");
  check_dims(shape, "from_external");
  auto impl = detail::make_kept<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->strides = contiguous_strides(shape);
  impl->storage = detail::make_kept<Storage>(data, numel_of(shape) * itemsize(dtype), std::move(owner));
  return Tensor(std::move(impl));
}

Tensor Tensor::narrow_view(const Tensor& base, int64_t d, int64_t start, int64_t length) {
  Shape shape = base.shape();
  shape[size_t(d)] = length;
  return view_of(base, std::move(shape), base.strides(), base.offset() + start * base.strides()[size_t(d)]);
}

Tensor Tensor::view_of(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  check_dims(shape, "view");
  auto impl = detail::make_kept<TensorImpl>();
  impl->shape = std::move(shape);
  impl->dtype = base.dtype();
  impl->storage = base.storage();
  impl->strides = std::move(strides);
  impl->offset = offset;
  return Tensor(std::move(impl));
}

void Tensor::undefined_use() { GLOBE_FAIL("[tensor] use of an undefined tensor"); }

Tensor Tensor::grad() const {
  return detail::core_hooks.read_grad(*this);
}

int64_t Tensor::size(int64_t d) const { return shape()[normalize_dim(d, shape(), "size")]; }

void Tensor::global_has_no(const char* what) {
  GLOBE_FAIL("[", what, "] a global tensor has no ", what, "; use to_local()");
}

bool Tensor::is_contiguous() const {
  const auto& s = shape();
  const auto& st = strides();
  int64_t expect = 1;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != 1 && st[i] != expect) return false;
    expect *= s[i];
  }
  return true;
}

void* Tensor::device_data() const {
  return static_cast<char*>(storage()->data) + offset() * itemsize(dtype());
}

void* Tensor::raw_data() const {
  GLOBE_CHECK(storage()->device.is_cpu(), "[data] host pointer asked for a ", describe(*this),
              ": host code must not read device memory (copy it with .to(\"cpu\"))");
  return device_data();
}

Device Tensor::device() const {
  if (is_global()) return detail::core_hooks.shard_device(*this);
  return storage()->device;
}

Tensor Tensor::host_view() const {
  const Storage& s = *storage();
  if (s.device.is_cpu()) return *this;
  auto host = detail::make_kept<Storage>(s.nbytes, false);
  detail::copy_bytes(kCPU, host->data, s.device, s.data, s.nbytes);
  auto impl = detail::make_kept<TensorImpl>();
  impl->shape = shape();
  impl->dtype = dtype();
  impl->storage = std::move(host);
  impl->strides = strides();
  impl->offset = offset();
  return Tensor(std::move(impl));
}

template <class T>
T* Tensor::data() const {
  GLOBE_CHECK(dtype_of<T>() == dtype(), "[data] requested ", dtype_name(dtype_of<T>()),
              " from a ", dtype_name(dtype()), " tensor");
  return static_cast<T*>(raw_data());
}

namespace {

// Copies any local tensor's elements into a dense row-major vector of T (converting the type).
template <class T>
std::vector<T> gather_local(const Tensor& t) {
  std::vector<T> out(t.numel());
  visit_stored(t.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* src = static_cast<const S*>(t.storage()->data);
    T* dst = out.data();
    for_each_run<1>(t.shape(), {t.strides()}, {t.offset()}, [&](const StridedRun<1>& r) {
      for (int64_t i = 0; i < r.count; ++i) *dst++ = static_cast<T>(src[r.offset[0] + i * r.stride[0]]);
    });
  });
  return out;
}

Tensor full_value(const Tensor& t) {
  if (!t.is_global()) return t;
  return detail::core_hooks.whole_value(t);
}

}  // namespace

template <class T>
std::vector<T> Tensor::to_vector() const {
  return gather_local<T>(full_value(*this).host_view());
}

template <class T>
T Tensor::item() const {
  GLOBE_CHECK(numel() == 1, "[item] needs a tensor with one element, got shape ", shape_str(shape()));
  return to_vector<T>()[0];
}

#define GLOBE_INSTANTIATE(T)                            \
  template T* Tensor::data<T>() const;                  \
  template T Tensor::item<T>() const;                   \
  template std::vector<T> Tensor::to_vector<T>() const;
GLOBE_INSTANTIATE(float)
GLOBE_INSTANTIATE(double)
GLOBE_INSTANTIATE(int64_t)
#undef GLOBE_INSTANTIATE
// bool and the narrow integers: kernels write them; their values are read as int64 or double.
template bool* Tensor::data<bool>() const;
template int32_t* Tensor::data<int32_t>() const;
template int8_t* Tensor::data<int8_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;

Tensor& Tensor::set_requires_grad(bool on) {
  GLOBE_CHECK(!on || is_floating(dtype()), "[requires_grad] only floating tensors can require grad, got ",
              dtype_name(dtype()));
  GLOBE_CHECK(is_leaf(), "[requires_grad] can only be set on a leaf tensor");
  impl().requires_grad = on;
  return *this;
}

void Tensor::rebind(const Tensor& src) const {
  TensorImpl& dst = impl();
  const TensorImpl& from = src.impl();
  if (&dst == &from) return;
  GLOBE_CHECK(!dst.requires_grad || is_floating(from.dtype), "[rebind] a tensor that requires grad cannot become ",
              dtype_name(from.dtype));
  dst.shape = from.shape;
  dst.dtype = from.dtype;
  dst.storage = from.storage;
  dst.strides = from.strides;
  dst.offset = from.offset;
  dst.global = from.global;
  dst.grad = nullptr;
  dst.grad_state = nullptr;
  dst.grad_fn = nullptr;
}

Tensor Tensor::detach() const {
  auto impl = detail::make_kept<TensorImpl>(this->impl());
  impl->requires_grad = false;
  impl->grad = nullptr;
  impl->grad_state = nullptr;
  impl->grad_fn = nullptr;
  return Tensor(std::move(impl));
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = std::string(dtype_name(t.dtype())) + shape_str(t.shape());
  if (t.is_global()) s += " " + detail::core_hooks.describe_layout(t);  // its placement names the device
  else if (!t.device().is_cpu()) s += " on " + t.device().str();       // CPU is the default, unsaid
  return s;
}

namespace {

// As torch prints: integers whole, bools as True / False, floats to 5 significant digits.
void print_value(std::ostream& os, double x, DType dtype) {
  if (dtype == DType::boolean) os << (x != 0 ? "True" : "False");
  else if (!is_floating(dtype)) os << static_cast<int64_t>(x);
  else os << std::setprecision(5) << x;
}

// As torch and OneFlow print: every value up to kSummaryThreshold elements; above it, each dim
// longer than 2 * kEdge shows kEdge values at each end around "...".
constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdge = 3;

void print_values(std::ostream& os, const std::vector<double>& v, const Shape& shape, size_t dim,
                  int64_t& pos, DType dtype, bool summarize, int indent) {
  if (shape.empty()) {
    print_value(os, v[0], dtype);
    return;
  }
  os << "[";
  const int64_t n = shape[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdge && i == kEdge) {
      os << "...";
      int64_t skip = (n - 2 * kEdge) * numel_of(Shape(shape.begin() + dim + 1, shape.end()));
      pos += skip;
      i = n - kEdge - 1;
      os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    if (dim + 1 == shape.size()) {
      print_value(os, v[pos++], dtype);
    } else {
      print_values(os, v, shape, dim + 1, pos, dtype, summarize, indent + 1);
    }
    if (i + 1 < n) os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << "]";
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  std::vector<double> v = to_vector<double>();
  int64_t pos = 0;
  os << "tensor(";
  print_values(os, v, shape(), 0, pos, dtype(), numel() > kSummaryThreshold, 7);
  os << ", shape=" << shape_str(shape()) << ", dtype=" << dtype_name(dtype());
  if (is_global()) os << ", " << detail::core_hooks.describe_layout(*this);
  if (requires_grad()) os << ", requires_grad";
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace globe
