// Whether ops record the autograd graph (thread-local, like torch.no_grad).
#pragma once

namespace globe {

bool grad_enabled();
void set_grad_enabled(bool on);

// RAII scope that disables graph recording: `{ NoGradGuard g; ... }`.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace globe
