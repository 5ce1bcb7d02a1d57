#pragma once
// Thread-local grad mode and inference mode (tp.no_grad, tp.enable_grad, tp.inference_mode).

namespace tp::autograd {

/// Whether ops record autograd history on this thread.
bool grad_enabled();
void set_grad_enabled(bool enabled);

/// Whether this thread is inside tp.inference_mode() (new tensors are inference tensors).
bool inference_mode_enabled();
void set_inference_mode_enabled(bool enabled);

/// Sets grad mode for a scope and restores the previous one.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(grad_enabled()) { set_grad_enabled(enabled); }
  ~GradModeGuard() { set_grad_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace tp::autograd
