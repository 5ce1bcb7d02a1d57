#include "autograd/variable.h"

#include <algorithm>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::autograd {

AutogradMeta* meta(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.impl()->autograd_meta());
}

AutogradMeta& meta_or_create(const Tensor& t) {
  if (!t.impl()->autograd_meta()) t.impl()->set_autograd_meta(std::make_unique<AutogradMeta>());
  return *meta(t);
}

// Note [Views and in-place writes]
// A view (made by a view op while grad mode is on) remembers its base. An in-place op on
// a view changes the base too, so rebase_history gives the base a CopySlices node: the
// base's gradient flows to its old history except in the view's elements, which flow
// through the in-place op. Every view of that base then needs a history that starts at
// the base's new one; instead of finding them all, a view notices that its storage version
// moved since its grad_fn was made and rebuilds it as AsStridedViewBackward of the base.

namespace {

/// Rebuilds a view's history from its base's current one.
void refresh_view_history(const Tensor& t, AutogradMeta& m) {
  const Tensor& base = m.base_;
  if (base.requires_grad()) {
    auto fn = std::make_shared<AsStridedViewBackward>(base, t);
    fn->next_edges_ = {gradient_edge(base)};
    m.grad_fn_ = fn;
    m.output_nr_ = fn->add_input_metadata(t);
    t.impl()->set_requires_grad(true);
  }
  m.view_version_ = t.impl()->version();
}

}  // namespace

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMeta* m = meta(t);
  if (!m) return nullptr;
  if (m->is_view_ && m->view_version_ != t.impl()->version()) refresh_view_history(t, *m);
  return m->grad_fn_;
}

std::optional<DType> leaf_grad_dtype(const Tensor& t) {
  AutogradMeta* m = meta(t);
  if (!m || m->grad_dtype_mode_ == 0) return t.dtype();
  if (m->grad_dtype_mode_ == 1) return m->grad_dtype_;
  return std::nullopt;
}

namespace {
/// What an accumulator expects of the gradients reaching it (the engine casts to it).
void expect_grad_dtype(Node& acc, const Tensor& t) {
  std::optional<DType> dt = leaf_grad_dtype(t);
  acc.input_metadata_[0].any_dtype = !dt;
  if (dt) acc.input_metadata_[0].dtype = *dt;
}
}  // namespace

void set_leaf_grad_dtype(const Tensor& t, std::optional<DType> dtype) {
  AutogradMeta& m = meta_or_create(t);
  m.grad_dtype_mode_ = dtype ? 1 : 2;
  if (dtype) m.grad_dtype_ = *dtype;
  if (auto acc = m.grad_accumulator_.lock()) expect_grad_dtype(*acc, t);
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = meta_or_create(t);
  if (auto acc = m.grad_accumulator_.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  if (m.grad_dtype_mode_) expect_grad_dtype(*acc, t);
  acc->tensor_pre_hooks_ = m.leaf_hooks_;
  m.grad_accumulator_ = acc;
  return acc;
}

void set_data(const Tensor& t, const Tensor& src) {
  // As PyTorch: any device and shape may be swapped in (Module.cuda() moves parameters
  // this way), but a tensor requiring grad must stay floating point.
  TP_CHECK(!t.requires_grad() || is_floating_or_complex(src.dtype()),
           "data set to a tensor that requires gradients must be floating point or complex dtype");
  const bool same = t.device() == src.device() && t.dtype() == src.dtype() &&
                    std::equal(t.sizes().begin(), t.sizes().end(), src.sizes().begin(), src.sizes().end());
  if (AutogradMeta* m = meta(t); m && !same) m->grad_accumulator_.reset();
  t.impl()->shallow_copy_from(*src.impl());
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  if (auto fn = grad_fn(t)) return {fn, meta(t)->output_nr_};
  if (t.requires_grad()) return {grad_accumulator(t), 0};
  return {};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& fn) {
  AutogradMeta& m = meta_or_create(t);
  m.grad_fn_ = fn;
  m.output_nr_ = fn->add_input_metadata(t);
  t.impl()->set_requires_grad(true);
}

Tensor detached(const Tensor& t) {
  // a tensor subclass (the Python key) makes its own alias in __torch_dispatch__
  if (t.impl()->has_python_key()) return tp::detach(t);
  return make_view(t, DimVector(t.sizes().data(), t.sizes().size()),
                   DimVector(t.strides().data(), t.strides().size()), t.storage_offset());
}

void check_inference_inplace(const Tensor& t) {
  TP_CHECK(!t.impl()->is_inference() || inference_mode_enabled(),
           "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
           "clone to get a normal tensor before doing inplace update.See "
           "https://github.com/pytorch/rfcs/pull/17 for more details.");
}

void set_view_base(const Tensor& view, const Tensor& base) {
  AutogradMeta& m = meta_or_create(view);
  AutogradMeta* bm = meta(base);
  m.is_view_ = true;
  m.base_ = bm && bm->is_view_ ? bm->base_ : base;
  if (bm && !bm->view_error_.empty()) m.view_error_ = bm->view_error_;
  m.view_version_ = view.impl()->version();
}

void note_view(const Tensor& view, const Tensor& base) {
  if (grad_enabled()) set_view_base(view, base);
}

void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn) {
  AutogradMeta* m = meta(t);
  if (!m || !m->is_view_) {
    set_history(t, fn);
    return;
  }
  Tensor base = m->base_;
  auto copy_slices = std::make_shared<CopySlices>(base, t, fn);
  copy_slices->next_edges_.push_back(gradient_edge(base));
  for (size_t i = 1; i < fn->next_edges_.size(); ++i) copy_slices->next_edges_.push_back(fn->next_edges_[i]);
  set_history(base, copy_slices);
  refresh_view_history(t, *m);
}

// Note [In-place view ops]
// t_, transpose_, squeeze_, unsqueeze_ and as_strided_ change a tensor's sizes, strides and
// offset and bump its version; no data moves. As in PyTorch (which records them with
// set_history, not rebase_history), t's new history is the op's node fed by t's old history:
// gradients of the new geometry are mapped back to the old one. A view stays a view of its
// base; its view version is brought up to date so the bump does not rebuild the history as
// an as_strided of the base (which would be right too, but not PyTorch's node). Other views
// of the same storage see the bump and rebuild theirs from the base, whose history is
// unchanged. In forward mode the tangent (a tensor of its own, or a view of the base's)
// takes the same in-place view op, as PyTorch's `self_t.t_()` formulas do.
void set_inplace_view_history(const Tensor& t, const std::shared_ptr<Node>& fn) {
  set_history(t, fn);
  if (AutogradMeta* m = meta(t); m && m->is_view_) m->view_version_ = t.impl()->version();
}

void forget_view(const Tensor& t) {
  if (AutogradMeta* m = meta(t); m && m->is_view_) {
    m->is_view_ = false;
    m->base_ = Tensor();
    m->view_error_.clear();
  }
}

void check_inplace(const Tensor& t) {
  if (!grad_enabled() || !t.requires_grad()) return;
  AutogradMeta* m = meta(t);
  if (m && !m->view_error_.empty()) TP_FAIL(m->view_error_);
  if (m && m->is_view_ && m->base_.requires_grad() && is_leaf(m->base_))
    TP_FAIL("a view of a leaf Variable that requires grad is being used in an in-place operation.");
  TP_CHECK(!is_leaf(t), "a leaf Variable that requires grad is being used in an in-place operation.");
}

}  // namespace tp::autograd
