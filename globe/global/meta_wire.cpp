#include "globe/global/meta_wire.h"

#include "globe/base/error.h"

namespace globe::wire {

namespace {
constexpr int64_t kShape = 3, kMesh = kShape + kMaxDims, kAxes = kMesh + 1;
}  // namespace

std::vector<int64_t> encode(DType dtype, const Shape& shape, const NdSbp& sbp, const char* op) {
  check_dims(shape, op);
  std::vector<int64_t> w(size_t(kWords), 0);
  w[0] = 1;
  w[1] = int64_t(dtype);
  w[2] = int64_t(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) w[size_t(kShape) + d] = shape[d];
  w[size_t(kMesh)] = int64_t(sbp.size());
  for (size_t a = 0; a < sbp.size(); ++a) {
    w[size_t(kAxes) + 2 * a] = int64_t(sbp[a].kind);
    w[size_t(kAxes) + 2 * a + 1] = sbp[a].dim;
  }
  return w;
}

Meta decode(const int64_t* w) {
  Meta m;
  m.present = w[0] == 1;
  if (!m.present) return m;
  m.dtype = DType(w[1]);
  m.shape.assign(w + kShape, w + kShape + w[2]);
  std::vector<Sbp> s;
  for (int64_t a = 0; a < w[kMesh]; ++a) s.push_back(Sbp{Sbp::Kind(w[kAxes + 2 * a]), w[kAxes + 2 * a + 1]});
  m.sbp = NdSbp(s);
  return m;
}

}  // namespace globe::wire
