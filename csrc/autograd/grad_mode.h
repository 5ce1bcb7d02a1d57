#pragma once
#include "core/tensor_impl.h"
// Thread-local grad mode and inference mode (tp.no_grad, tp.enable_grad, tp.inference_mode).

namespace tp::autograd {

/// Whether ops record autograd history on this thread.
bool grad_enabled();
void set_grad_enabled(bool enabled);

using tp::inference_mode_enabled;  // core/tensor_impl.h: the mode marks the tensors it makes
using tp::set_inference_mode_enabled;

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
