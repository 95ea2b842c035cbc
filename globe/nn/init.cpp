#include "globe/nn/init.h"

#include <cmath>

#include "globe/core/grad_mode.h"
#include "globe/core/random.h"
#include "globe/global/global_tensor.h"
#include "globe/ops/ops.h"

namespace globe::nn::init {

namespace {
thread_local bool skip_init = false;

// Under SkipInitGuard: the tensor unfilled, its draw's generator call taken all the same.
Tensor skipped(const Shape& shape) {
  (void)next_local_random_stream();
  return Tensor::uninitialized(shape, kFloat32);
}
}  // namespace

SkipInitGuard::SkipInitGuard() : previous_(skip_init) { skip_init = true; }
SkipInitGuard::~SkipInitGuard() { skip_init = previous_; }
bool skipping_init() { return skip_init; }

Tensor linear_uniform(const Shape& shape, int64_t fan_in) {
  if (skip_init) return skipped(shape);
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  return uniform(shape, -bound, bound);
}

Tensor default_normal(const Shape& shape) { return skip_init ? skipped(shape) : randn(shape); }

namespace {

// `t` takes `value` (made in t's layout) in place, outside autograd.
Tensor& assign(Tensor& t, const Tensor& value) {
  NoGradGuard no_grad;
  copy_(t, value);
  return t;
}

void check_fillable(const Tensor& t, const char* op) {
  GLOBE_CHECK(t.defined(), "[", op, "] the tensor is undefined");
  GLOBE_CHECK(is_floating(t.dtype()), "[", op, "] needs a floating tensor, got ", describe(t));
  GLOBE_CHECK(!t.is_global() || !t.sbp().any_partial(), "[", op, "] ", describe(t),
              " is partial_sum: its pieces are terms of a sum, not values to fill");
}

}  // namespace

Tensor& uniform_(Tensor& t, double low, double high) {
  check_fillable(t, "uniform_");
  if (!t.is_global()) return assign(t, uniform(t.shape(), low, high, t.dtype()));
  return assign(t, uniform(t.shape(), low, high, t.placement(), t.sbp(), t.dtype()));
}

Tensor& normal_(Tensor& t, double mean, double std) {
  check_fillable(t, "normal_");
  const Tensor z = t.is_global() ? randn(t.shape(), t.placement(), t.sbp(), t.dtype()) : randn(t.shape(), t.dtype());
  return assign(t, add(mul(z, std), mean));
}

Tensor& constant_(Tensor& t, double value) {
  check_fillable(t, "constant_");
  if (!t.is_global()) return assign(t, full(t.shape(), value, t.dtype()));
  return assign(t, full(t.shape(), value, t.placement(), t.sbp(), t.dtype()));
}

Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

Fans fans_of(const Tensor& t, const char* op) {
  GLOBE_CHECK(t.dim() >= 2, "[", op, "] fan in and fan out need at least 2 dims, got ", describe(t));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "sigmoid" || nonlinearity.rfind("conv", 0) == 0) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4.0;
  GLOBE_FAIL("[calculate_gain] unknown nonlinearity '", nonlinearity,
             "' (linear, conv*, sigmoid, tanh, relu, leaky_relu, selu)");
}

namespace {
double xavier_std(const Tensor& t, double gain, const char* op) {
  const Fans f = fans_of(t, op);
  return gain * std::sqrt(2.0 / double(f.in + f.out));
}

double kaiming_std(const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity,
                   const char* op) {
  GLOBE_CHECK(mode == "fan_in" || mode == "fan_out", "[", op, "] mode must be 'fan_in' or 'fan_out', got '", mode, "'");
  const Fans f = fans_of(t, op);
  return calculate_gain(nonlinearity, a) / std::sqrt(double(mode == "fan_in" ? f.in : f.out));
}
}  // namespace

Tensor& xavier_uniform_(Tensor& t, double gain) {
  const double bound = std::sqrt(3.0) * xavier_std(t, gain, "xavier_uniform_");
  return uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) { return normal_(t, 0.0, xavier_std(t, gain, "xavier_normal_")); }

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity, "kaiming_uniform_");
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  return normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity, "kaiming_normal_"));
}

}  // namespace globe::nn::init
