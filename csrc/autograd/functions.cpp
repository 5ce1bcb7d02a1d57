#include "autograd/functions.h"

#include <mutex>

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::autograd {

namespace {

// Note [Gradient layout]: a leaf's .grad has the leaf's strides when the leaf is dense and
// non-overlapping (contiguous otherwise), as PyTorch promises, so optimizers and user code
// updating `p` from `p.grad` run over matching memory orders.
bool obeys_layout(const Tensor& grad, const Tensor& variable) {
  if (!variable.impl()->is_non_overlapping_and_dense()) return grad.is_contiguous();
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (grad.size(d) != 1 && grad.stride(d) != variable.stride(d)) return false;
  return true;
}

Tensor copy_in_layout(const Tensor& grad, const Tensor& variable) {
  if (!variable.impl()->is_non_overlapping_and_dense())
    return grad.is_contiguous() ? clone(grad) : contiguous(grad);
  Tensor out = empty_strided(variable.sizes(), variable.strides(), grad.dtype(), grad.device());
  copy_(out, grad);
  return out;
}

}  // namespace

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
      // Take the gradient when nobody else holds it and it has the parameter's layout
      // (Note [Gradient layout]); otherwise keep a private copy in that layout.
      if (grad_enabled()) acc = obeys_layout(g, variable_) ? g : copy_in_layout(g, variable_);
      else if (g.impl()->use_count() == 1 && obeys_layout(g, variable_)) acc = detached(g);
      else acc = copy_in_layout(detached(g), variable_);
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
      offset(t.storage_offset()), math_bits(t.impl()->math_bits()) {}

namespace {

/// A gradient carried between a view and its base where the two differ in their conjugate
/// or negative bits (`x.conj()` is conj(x) elementwise): conj / neg of it, else itself.
Tensor across_bits(Tensor g, const Geometry& a, const Geometry& b) {
  const uint8_t rel = a.math_bits ^ b.math_bits;
  if (rel & TensorImpl::kConjBit) g = conj_physical(g);
  if (rel & TensorImpl::kNegBit) g = neg(g);
  return g;
}

}  // namespace

variable_list AsStridedViewBackward::apply(variable_list&& grads) {
  return {as_strided_backward(across_bits(grads[0], base_, view_), base_.sizes, base_.strides, base_.offset,
                              view_.sizes, view_.strides, view_.offset)};
}

variable_list CopySlices::apply(variable_list&& grads) {
  const Tensor& grad = grads[0];
  // The base's gradient in the base's layout, so the view's geometry addresses it.
  Tensor result = empty_strided(base_.sizes, base_.strides, grad.dtype(), grad.device());
  copy_(result, grad);
  Tensor slice = as_strided(result, view_.sizes, view_.strides,
                            result.storage_offset() + view_.offset - base_.offset);
  variable_list res = fn_->apply({across_bits(clone(slice), base_, view_)});
  if (res[0].defined()) copy_(slice, across_bits(res[0], base_, view_));
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
