#include "globe/core/shape.h"

#include <sstream>

#include "globe/base/error.h"

namespace globe {

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  GLOBE_CHECK(dim >= -ndim && dim < ndim, "[", op, "] dim ", dim, " out of range for a tensor of ",
              ndim, " dims");
  return dim < 0 ? dim + ndim : dim;
}

int64_t normalize_dim(int64_t dim, const Shape& shape, const char* op) {
  const int64_t ndim = int64_t(shape.size());
  GLOBE_CHECK(dim >= -ndim && dim < ndim, "[", op, "] dim ", dim, " out of range for a tensor of shape ",
              shape_str(shape), " (", ndim, " dims)");
  return dim < 0 ? dim + ndim : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    GLOBE_CHECK(da == db || da == 1 || db == 1, "[", op, "] shapes ", shape_str(a), " and ",
                shape_str(b), " cannot broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void check_dims(const Shape& shape, const char* op) {
  GLOBE_CHECK(shape.size() <= size_t(kMaxDims), "[", op, "] a tensor of ", shape.size(), " dims (", shape_str(shape),
              "): tensors have at most ", kMaxDims);
}

}  // namespace globe
