#include "autograd/saved_variable.h"

#include <string>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/functions.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "kernels/tensor_iterator.h"

namespace tp::autograd {
namespace {
thread_local std::vector<std::shared_ptr<SavedTensorHooks>> t_hooks;
thread_local std::optional<std::string> t_disabled;
}  // namespace

void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks) {
  TP_CHECK(!t_disabled, *t_disabled);
  t_hooks.push_back(std::move(hooks));
}

void pop_saved_tensor_hooks() {
  if (!t_hooks.empty()) t_hooks.pop_back();
}

std::optional<std::string> set_saved_tensor_hooks_disabled(std::optional<std::string> message) {
  TP_CHECK(!message || t_hooks.empty(), *message);
  std::swap(message, t_disabled);
  return message;
}

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  TP_CHECK(!t.impl()->is_inference() || inference_mode_enabled(),
           "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
           "inference mode in computation tracked by autograd. To work around this, you can make "
           "a clone to get a normal tensor and use it in autograd, or use `tensorplay.no_grad()` "
           "instead of `tensorplay.inference_mode()`.");
  defined_ = true;
  version_ = t.impl()->version();
  requires_grad_ = t.requires_grad();
  is_output_ = is_output && requires_grad_;
  if (is_output_) output_nr_ = meta(t)->output_nr_;
  // Note [Saved outputs keep their tangent]
  // An output is saved as a detached alias (no reference cycle through its node), which
  // would leave its tangent behind; and the op sets that tangent only after saving. So under
  // a dual level the saved variable shares the output's tangent box, and the tensor it
  // unpacks gets the box back: a double backward run under forward AD (forward-over-reverse,
  // tanh's `1 - result^2`) sees the output's tangent, as in PyTorch.
  if (is_output && fw_grad_enabled()) {
    AutogradMeta& m = meta_or_create(t);
    if (!m.fw_) m.fw_ = std::make_shared<ForwardGrad>();
    fw_ = m.fw_;
  }
  if (!t_hooks.empty()) {
    hook_ = t_hooks.back()->make();
    // An output is packed as a plain alias: the hook may keep what it gets (Note [Saved outputs]).
    hook_->pack(is_output_ ? detached(t) : t);
    if (!is_output_ && requires_grad_) edge_ = gradient_edge(t);
    return;
  }
  data_ = is_output_ ? detached(t) : t;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!defined_) return Tensor();
  TP_CHECK(!released_,
           "Trying to backward through the graph a second time (or directly access saved tensors "
           "after they have already been freed). Saved intermediate values of the graph are freed "
           "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need "
           "to backward through the graph a second time or if you need to access saved tensors "
           "after calling backward.");
  if (hook_) return with_tangent(with_history(hook_->unpack(), saved_for));
  uint32_t now = data_.impl()->version();
  if (now != version_) {
    std::string shape = shape_str(data_.sizes());
    static constexpr const char* kTypeNames[] = {"Bool", "Byte", "Char", "Short", "Int", "Long",
                                                 "Half", "BFloat16", "Float", "Double"};
    std::string which = "[tensorplay." + std::string(kTypeNames[int(data_.dtype())]) + "Tensor " +
                        shape + "]";
    auto fn = is_output_ ? saved_for : grad_fn(data_);
    if (fn)
      which += ", which is output " + std::to_string(is_output_ ? output_nr_ : meta(data_)->output_nr_) +
               " of " + fn->name() + ",";
    TP_FAIL("one of the variables needed for gradient computation has been modified by an "
            "inplace operation: ", which, " is at version ", now, "; expected version ", version_,
            " instead. Hint: enable anomaly detection to find the operation that failed to "
            "compute its gradient, with tensorplay.autograd.set_detect_anomaly(True).");
  }
  if (fw_ && fw_->grad.defined()) return with_tangent(with_history(data_, saved_for));
  if (!is_output_ || !saved_for) return data_;
  return with_history(data_, saved_for);
}

Tensor SavedVariable::with_tangent(Tensor t) const {
  if (!fw_ || !fw_->grad.defined()) return t;
  if (t.is_same(data_)) t = detached(t);  // never give the saved tensor itself a tangent box
  meta_or_create(t).fw_ = fw_;
  return t;
}

Tensor SavedVariable::with_history(const Tensor& data, const std::shared_ptr<Node>& saved_for) const {
  Edge edge = is_output_ ? Edge{saved_for, output_nr_} : edge_;
  if (!edge.valid()) return data;
  // Note [Saved outputs]: a fresh alias carrying the saved tensor's history.
  Tensor out = detached(data);
  AutogradMeta& m = meta_or_create(out);
  if (dynamic_cast<AccumulateGrad*>(edge.fn.get())) {
    m.grad_accumulator_ = edge.fn;
  } else {
    m.grad_fn_ = edge.fn;
    m.output_nr_ = edge.input_nr;
  }
  out.impl()->set_requires_grad(requires_grad_);
  return out;
}

void SavedVariable::reset_data() {
  if (!defined_) return;
  data_ = Tensor();
  hook_.reset();
  fw_.reset();
  released_ = true;
}

}  // namespace tp::autograd
