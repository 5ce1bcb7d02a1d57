#include "autograd/functions.h"

#include <mutex>

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::autograd {

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  sequence_nr_ = UINT64_MAX;  // runs as soon as it is ready
  zero_fills_missing_ = false;
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

Geometry::Geometry(const Tensor& t)
    : sizes(t.sizes().data(), t.sizes().size()), strides(t.strides().data(), t.strides().size()),
      offset(t.storage_offset()) {}

variable_list AsStridedViewBackward::apply(variable_list&& grads) {
  return {as_strided_backward(grads[0], base_.sizes, base_.strides, base_.offset, view_.sizes,
                              view_.strides, view_.offset)};
}

variable_list CopySlices::apply(variable_list&& grads) {
  const Tensor& grad = grads[0];
  // The base's gradient in the base's layout, so the view's geometry addresses it.
  Tensor result = empty_strided(base_.sizes, base_.strides, grad.dtype(), grad.device());
  copy_(result, grad);
  Tensor slice = as_strided(result, view_.sizes, view_.strides,
                            result.storage_offset() + view_.offset - base_.offset);
  variable_list res = fn_->apply({clone(slice)});
  if (res[0].defined()) copy_(slice, res[0]);
  else zero_(slice);
  res[0] = result;
  return res;
}

variable_list NotImplementedBackward::apply(variable_list&&) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, false, "the derivative for '", op_,
                "' is not implemented.");
  return {};
}

variable_list DelayedError::apply(variable_list&&) {
  TP_FAIL(msg_);
  return {};
}

}  // namespace tp::autograd
