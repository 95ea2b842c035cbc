#include "globe/optim/grad_scaler.h"

#include <cmath>

#include "globe/ops/ops.h"
#include "globe/optim/clip.h"

namespace globe::optim {

GradScaler::GradScaler(const Options& options) : options_(options), scale_(options.init_scale) {
  GLOBE_CHECK(options.init_scale > 0 && options.growth_factor > 1 && options.backoff_factor > 0 &&
                  options.backoff_factor < 1 && options.growth_interval >= 1,
              "[GradScaler] needs init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1 and growth_interval >= 1; got ",
              options.init_scale, ", ", options.growth_factor, ", ", options.backoff_factor, ", ", options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& loss) const { return mul(loss, scale_); }

void GradScaler::unscale(Optimizer& opt) {
  GLOBE_CHECK(!unscaled_, "[GradScaler] unscale() was already called since the last update()");
  // One norm over every gradient: inf or NaN anywhere on any rank makes it non-finite everywhere.
  found_inf_ = !std::isfinite(grad_norm(opt.params()));
  if (!found_inf_) scale_grads(opt.params(), 1.0 / scale_);
  unscaled_ = true;
}

bool GradScaler::step(Optimizer& opt) {
  if (!unscaled_) unscale(opt);
  if (found_inf_) {
    ++skipped_;
    return false;
  }
  opt.step();
  return true;
}

void GradScaler::update() {
  GLOBE_CHECK(unscaled_, "[GradScaler] update() without step() or unscale() since the last update()");
  if (found_inf_) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  unscaled_ = found_inf_ = false;
}

void GradScaler::load_state(double scale, int64_t growth_tracker) {
  GLOBE_CHECK(scale > 0 && growth_tracker >= 0, "[GradScaler] bad state: scale ", scale, ", growth tracker ",
              growth_tracker);
  scale_ = scale;
  growth_tracker_ = growth_tracker;
}

}  // namespace globe::optim
