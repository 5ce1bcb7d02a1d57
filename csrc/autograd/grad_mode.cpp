#include "autograd/grad_mode.h"

namespace tp::autograd {
namespace {
thread_local bool t_grad_enabled = true;
}  // namespace

bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

}  // namespace tp::autograd
