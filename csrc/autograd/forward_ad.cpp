#include "autograd/forward_ad.h"

#include "autograd/engine.h"
#include "autograd/formula_helpers.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::autograd {

// Note [Forward AD]
// A tangent lives in the tensor's AutogradMeta with the id of the dual level it was set
// at; it counts only while that level is active (exiting a level needs no sweep over
// tensors, and ids are never reused). Each op's wrapper computes its outputs' tangents
// from the inputs' by the op's JVP formula (csrc/ops/*.yaml `jvp:`; codegen in
// gen_autograd.py) with tangent propagation off, so a formula sees primals only. Views
// keep tangents that are views of their base's tangent, so an in-place op, which writes
// its new tangent into the existing tangent's memory, updates the base's and every view's.

namespace detail {
uint64_t g_dual_level_id = 0;
thread_local bool t_fw_grad_disabled = false;
}  // namespace detail

namespace {
uint64_t g_next_level_id = 1;

/// A view of `base_tangent` with `view`'s geometry relative to `base`.
/// A view differing from its base in the conjugate / negative bit (x.conj()) gets a tangent
/// view with that bit flipped too (Note [Conjugate and negative bits]).
Tensor view_of_tangent(const Tensor& base_tangent, const Tensor& base, const Tensor& view) {
  Tensor t = as_strided(base_tangent, view.sizes(), view.strides(),
                        base_tangent.storage_offset() + view.storage_offset() - base.storage_offset());
  const uint8_t rel = base.impl()->math_bits() ^ view.impl()->math_bits();
  if (rel & TensorImpl::kConjBit) t = _conj(t);
  if (rel & TensorImpl::kNegBit) t = _neg_view(t);
  return t;
}

/// A zero tangent with t's layout (so views of t map onto it element for element).
Tensor zero_tangent_like(const Tensor& t) {
  Tensor z = empty_strided(t.sizes(), t.strides(), t.dtype(), t.device());
  zero_(z);
  return z;
}

bool same_layout(const Tensor& a, const Tensor& b) {
  return std::equal(a.strides().begin(), a.strides().end(), b.strides().begin(), b.strides().end());
}
}  // namespace

int64_t enter_dual_level() {
  TP_CHECK(detail::g_dual_level_id == 0, "Nested forward mode AD is not supported at the moment");
  detail::g_dual_level_id = g_next_level_id++;
  return 0;
}

void exit_dual_level(int64_t level) {
  TP_CHECK(detail::g_dual_level_id != 0 && level == 0, "Trying to exit a forward AD level that "
           "was not the last one that was created. This is not supported.");
  detail::g_dual_level_id = 0;
}

Tensor fw_grad(const Tensor& t) {
  if (detail::g_dual_level_id == 0) return Tensor();
  AutogradMeta* m = meta(t);
  if (!m || m->fw_primal_) return Tensor();
  if (m->fw_ && m->fw_->level == detail::g_dual_level_id && m->fw_->grad.defined()) return m->fw_->grad;
  // A view made before its base got a tangent reads its part of the base's.
  if (m->is_view_) {
    AutogradMeta* bm = meta(m->base_);
    if (bm && bm->fw_ && bm->fw_->level == detail::g_dual_level_id && bm->fw_->grad.defined()) {
      FwGradDisabledGuard off;
      GradModeGuard no_grad(false);
      Tensor v = view_of_tangent(bm->fw_->grad, m->base_, t);
      if (!m->fw_) m->fw_ = std::make_shared<ForwardGrad>();
      m->fw_->grad = v;
      m->fw_->level = detail::g_dual_level_id;
      return v;
    }
  }
  return Tensor();
}

Tensor fw_grad_or_zeros(const Tensor& t) {
  Tensor g = fw_grad(t);
  return g.defined() ? g : zeros(t.sizes(), t.dtype(), t.device());
}

std::vector<Tensor> fw_grads_or_zeros(std::span<const Tensor> ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(fw_grad_or_zeros(t));
  return out;
}

void set_fw_grad(const Tensor& t, const Tensor& tangent) {
  AutogradMeta& m = meta_or_create(t);
  if (!m.fw_) {
    if (!tangent.defined()) return;
    m.fw_ = std::make_shared<ForwardGrad>();
  }
  m.fw_->grad = tangent;
  m.fw_->level = tangent.defined() ? detail::g_dual_level_id : 0;
}

void set_inplace_fw_grad(const Tensor& self, const Tensor& tangent) {
  if (!tangent.defined()) return;
  FwGradDisabledGuard off;
  Tensor current = fw_grad(self);
  if (!current.defined()) {
    AutogradMeta* m = meta(self);
    if (m && m->is_view_) {
      // The base gets a zero tangent; the view's is its part of it.
      Tensor base_tangent = zero_tangent_like(m->base_);
      set_fw_grad(m->base_, base_tangent);
      current = view_of_tangent(base_tangent, m->base_, self);
    } else {
      current = zero_tangent_like(self);
    }
    set_fw_grad(self, current);
  }
  copy_(current, tangent);
}

Tensor make_dual(const Tensor& primal, const Tensor& tangent, int64_t level) {
  TP_CHECK(detail::g_dual_level_id != 0, "Trying to create a dual Tensor for forward AD but no "
           "level exists, make sure to enter_dual_level() first.");
  TP_CHECK(level == 0, "Invalid level given to make_dual");
  TP_CHECK_VALUE(is_floating_or_complex(primal.dtype()), "Expected primal to be floating point or complex, "
                 "but got: tensorplay.", dtype_name(primal.dtype()));
  TP_CHECK_VALUE(is_floating_or_complex(tangent.dtype()), "Expected tangent to be floating point or "
                 "complex, but got: tensorplay.", dtype_name(tangent.dtype()));
  TP_CHECK(!has_fw_grad(primal), "Making a dual Tensor based on a Tensor that already has a "
           "forward gradient at the same level 0 is not supported.");
  TP_CHECK(std::equal(primal.sizes().begin(), primal.sizes().end(), tangent.sizes().begin(),
                      tangent.sizes().end()),
           "Trying to set a forward gradient that has a different size than that of the "
           "original Tensor, this is not supported. Tensor is of size ", shape_str(primal.sizes()),
           " while the given forward gradient is of size ", shape_str(tangent.sizes()), ".");
  // A (differentiable) view: in-place writes reach the primal, reverse mode sees through it.
  Tensor dual = as_strided(primal, primal.sizes(), primal.strides(), primal.storage_offset());
  Tensor t = tangent;
  int64_t storage_numel = int64_t(primal.impl()->storage()->nbytes() / primal.itemsize());
  if (!same_layout(t, primal) || primal.storage_offset() != 0 || primal.numel() != storage_numel) {
    // The tangent mirrors the primal's whole storage (zeros outside the primal's elements),
    // so every view of the dual, as_strided included, maps onto it element for element.
    FwGradDisabledGuard off;
    GradModeGuard no_grad(false);
    Tensor buffer = zeros(IntArrayRef(&storage_numel, 1), tangent.dtype(), tangent.device());
    t = as_strided(buffer, primal.sizes(), primal.strides(), primal.storage_offset());
    copy_(t, tangent);
  }
  set_fw_grad(dual, t);
  return dual;
}

Tensor fw_primal(const Tensor& t, int64_t level) {
  TP_CHECK(level == 0, "Invalid level given to _fw_primal");
  FwGradDisabledGuard off;
  Tensor p = as_strided(t, t.sizes(), t.strides(), t.storage_offset());
  meta_or_create(p).fw_primal_ = true;
  return p;
}

void fw_not_implemented(const char* op) {
  TP_FAIL_NOT_IMPLEMENTED("Trying to use forward AD with ", op, " that does not support it "
                          "because it has not been implemented yet.");
}

namespace {
/// The placeholder edge a node made only for jvp_from_backward gets for each input with a
/// tangent (its formulas for that input then run); no engine ever reaches it.
class FwEdgeSink final : public Node {
 public:
  std::string name() const override { return "FwEdgeSink"; }
  variable_list apply(variable_list&&) override { return {}; }
};
}  // namespace

std::vector<Edge> fw_edges(const std::vector<Tensor>& tangents) {
  static auto sink = std::make_shared<FwEdgeSink>();
  std::vector<Edge> e;
  for (const Tensor& t : tangents) e.push_back(t.defined() ? Edge{sink, 0} : Edge{});
  return e;
}

std::vector<Tensor> jvp_from_backward(Node& node, const std::vector<Tensor>& outputs,
                                      const std::vector<Tensor>& tangents) {
  bool outer_grad = grad_enabled();
  FwGradDisabledGuard off;
  bool all_empty = true;
  for (const Tensor& o : outputs) all_empty = all_empty && o.numel() == 0;
  if (all_empty) {  // empty outputs have empty tangents (formulas may refuse empty inputs)
    std::vector<Tensor> result;
    for (const Tensor& o : outputs) result.push_back(zeros(o.sizes(), o.dtype(), o.device()));
    return result;
  }
  GradModeGuard on(true);
  variable_list us;
  bool differentiable = false;
  for (const Tensor& o : outputs) {
    Tensor u = zeros(o.sizes(), o.dtype(), o.device());
    u.impl()->set_requires_grad(true);
    us.push_back(u);
    differentiable = differentiable || o.requires_grad();
  }
  for (const Tensor& t : tangents) differentiable = differentiable || (t.defined() && t.requires_grad());
  variable_list gin = node.apply(variable_list(us));
  Tensor s;
  for (size_t i = 0; i < tangents.size() && i < gin.size(); ++i) {
    const Tensor& t = tangents[i];
    if (!t.defined() || !gin[i].defined()) continue;
    // <J^T u, t> as reals: Re(sum(conj(g) t)), whose gradient in u is J t also for complex
    // tensors (PyTorch's convention; conj and real are identities on reals)
    Tensor g = sum_to(gin[i], t.sizes());
    Tensor term = sum(mul(is_complex(g.dtype()) ? conj_physical(g) : g, t));
    if (is_complex(term.dtype())) term = real(term);
    s = s.defined() ? add(s, term) : term;
  }
  std::vector<Tensor> result(outputs.size());
  if (s.defined() && s.requires_grad()) {
    std::vector<Edge> inputs;
    for (const Tensor& u : us) inputs.push_back(gradient_edge(u));
    result = run_backward({gradient_edge(s)}, {ones(s.sizes(), s.dtype(), s.device())}, false, outer_grad && differentiable,
                          inputs, false, us);
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    if (!result[k].defined()) result[k] = zeros(outputs[k].sizes(), outputs[k].dtype(), outputs[k].device());
  return result;
}

}  // namespace tp::autograd
