// Dynamic loss scaling for float16 mixed precision, as torch.amp.GradScaler:
//
//   optim::GradScaler scaler;
//   scaler.scale(loss).backward();        // gradients of loss * scale: small ones survive float16
//   scaler.unscale(opt);                  // optional, before clip_grad_norm
//   scaler.step(opt);                     // unscales, and skips the step if any gradient is inf/NaN
//   scaler.update();                      // halves the scale after an overflow, doubles it after
//                                         // growth_interval clean steps
//
// float16 keeps 5 exponent bits: gradients below 2^-24 flush to zero and above 65504 overflow.
// Scaling the loss moves the gradients into range; the float32 master gradients are divided back
// before the optimizer sees them. The overflow check is one all-reduce of the gradient norm over
// the world, so every rank skips the same steps. bfloat16 has float32's range and needs none.
#pragma once

#include <cstdint>

#include "globe/core/tensor.h"
#include "globe/optim/optimizer.h"

namespace globe::optim {

class GradScaler {
 public:
  struct Options {
    double init_scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
  };
  GradScaler() : GradScaler(Options{}) {}
  explicit GradScaler(const Options& options);

  // loss * scale (a graph op: backward gives scaled gradients).
  Tensor scale(const Tensor& loss) const;
  // Divides the optimizer's gradients by the scale, once per step, and records whether any is
  // inf or NaN. Collective.
  void unscale(Optimizer& opt);
  // unscale() if not yet done, then opt.step() unless an inf or NaN was found. Returns whether the
  // step ran. Collective.
  bool step(Optimizer& opt);
  // The next step's scale: backoff after an overflow, growth after growth_interval clean steps.
  void update();

  double get_scale() const { return scale_; }
  int64_t steps_skipped() const { return skipped_; }
  // For checkpoints: the scale and the clean steps since it last changed.
  int64_t growth_tracker() const { return growth_tracker_; }
  void load_state(double scale, int64_t growth_tracker);

 private:
  Options options_;
  double scale_;
  int64_t growth_tracker_ = 0, skipped_ = 0;
  bool unscaled_ = false, found_inf_ = false;
};

}  // namespace globe::optim
