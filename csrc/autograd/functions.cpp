#include "autograd/functions.h"

#include <mutex>

#include "autograd/grad_mode.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::autograd {

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  sequence_nr_ = UINT64_MAX;  // runs as soon as it is ready
  add_input_metadata(variable_);
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  static std::mutex mutex;  // concurrent backwards may reach the same leaf
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  AutogradMeta* m = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    m = &meta_or_create(variable_);
    Tensor& acc = m->grad_;
    if (!acc.defined()) {
      // Take the gradient when nobody else holds it; otherwise keep a private copy.
      if (grad_enabled()) acc = g;
      else acc = g.impl()->use_count() == 1 && g.is_contiguous() ? detached(g) : clone(detached(g));
    } else if (grad_enabled()) {
      acc = add(acc, g);  // create_graph: the sum keeps its history
    } else {
      add_(acc, g);
    }
  }
  for (auto& [id, hook] : m->post_accumulate_hooks_) hook(variable_);
  return {};
}

GraphRoot::GraphRoot(std::vector<Edge> roots, variable_list grads) : grads_(std::move(grads)) {
  next_edges_ = std::move(roots);
}

variable_list NotImplementedBackward::apply(variable_list&&) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, false, "the derivative for '", op_,
                "' is not implemented.");
  return {};
}

}  // namespace tp::autograd
