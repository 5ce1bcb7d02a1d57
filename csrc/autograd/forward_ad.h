#pragma once
// Forward-mode AD: dual levels and the tangents ("forward gradients") tensors carry at the
// active level. See Note [Forward AD].
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "autograd/variable.h"

namespace tp::autograd {

namespace detail {
/// Id of the active dual level (0: none). Ids are never reused, so a tangent set at an
/// exited level is never read again.
extern uint64_t g_dual_level_id;
extern thread_local bool t_fw_grad_disabled;
}  // namespace detail

/// Whether tangents propagate through ops now (a dual level is active on this process
/// and this thread is not computing a tangent formula).
inline bool fw_grad_enabled() {
  return detail::g_dual_level_id != 0 && !detail::t_fw_grad_disabled;
}

/// enter_dual_level: returns the level (always 0: nested levels are refused, as PyTorch
/// refuses them).
int64_t enter_dual_level();
void exit_dual_level(int64_t level);

/// The tangent of `t` at the active level, or an undefined tensor.
Tensor fw_grad(const Tensor& t);
/// fw_grad(t), or zeros shaped like t when it has none (formulas of several inputs).
Tensor fw_grad_or_zeros(const Tensor& t);
/// Sets (or clears, with an undefined tangent) the tangent of `t` at the active level.
void set_fw_grad(const Tensor& t, const Tensor& tangent);
/// After an in-place op wrote into `self`: its tangent becomes `tangent`, written into its
/// existing tangent's memory (so views of it and their bases see it) or, for a view whose
/// base has none, into a zero tangent made for the base.
void set_inplace_fw_grad(const Tensor& self, const Tensor& tangent);
/// make_dual: an alias of `primal` carrying `tangent` at the active level.
Tensor make_dual(const Tensor& primal, const Tensor& tangent, int64_t level);
/// The primal of unpack_dual: an alias of t without its tangent.
Tensor fw_primal(const Tensor& t, int64_t level);
/// Raises the error of an op without a forward-mode formula.
[[noreturn]] void fw_not_implemented(const char* op);

/// Computes tangent formulas with tangent propagation off (formulas see primals only).
class FwGradDisabledGuard {
 public:
  FwGradDisabledGuard() : prev_(detail::t_fw_grad_disabled) { detail::t_fw_grad_disabled = true; }
  ~FwGradDisabledGuard() { detail::t_fw_grad_disabled = prev_; }
  FwGradDisabledGuard(const FwGradDisabledGuard&) = delete;
  FwGradDisabledGuard& operator=(const FwGradDisabledGuard&) = delete;

 private:
  bool prev_;
};

inline bool has_fw_grad(const Tensor& t) { return t.defined() && fw_grad(t).defined(); }
inline bool any_fw_grad() { return false; }
template <class... Rest>
bool any_fw_grad(const Tensor& t, const Rest&... rest);
template <class... Rest>
bool any_fw_grad(const std::optional<Tensor>& t, const Rest&... rest);
template <class... Rest>
bool any_fw_grad(std::span<const Tensor> ts, const Rest&... rest);
template <class... Rest>
bool any_fw_grad(const Tensor& t, const Rest&... rest) {
  return has_fw_grad(t) || any_fw_grad(rest...);
}
template <class... Rest>
bool any_fw_grad(const std::optional<Tensor>& t, const Rest&... rest) {
  return (t && has_fw_grad(*t)) || any_fw_grad(rest...);
}
template <class... Rest>
bool any_fw_grad(std::span<const Tensor> ts, const Rest&... rest) {
  for (const Tensor& t : ts)
    if (has_fw_grad(t)) return true;
  return any_fw_grad(rest...);
}

inline void append_tangents(std::vector<Tensor>&) {}
template <class... Rest>
void append_tangents(std::vector<Tensor>& v, const Tensor& t, const Rest&... rest);
template <class... Rest>
void append_tangents(std::vector<Tensor>& v, const std::optional<Tensor>& t, const Rest&... rest);
template <class... Rest>
void append_tangents(std::vector<Tensor>& v, std::span<const Tensor> ts, const Rest&... rest);
template <class... Rest>
void append_tangents(std::vector<Tensor>& v, const Tensor& t, const Rest&... rest) {
  v.push_back(t.defined() ? fw_grad(t) : Tensor());
  append_tangents(v, rest...);
}
template <class... Rest>
void append_tangents(std::vector<Tensor>& v, const std::optional<Tensor>& t, const Rest&... rest) {
  v.push_back(t ? fw_grad(*t) : Tensor());
  append_tangents(v, rest...);
}
template <class... Rest>
void append_tangents(std::vector<Tensor>& v, std::span<const Tensor> ts, const Rest&... rest) {
  for (const Tensor& t : ts) v.push_back(fw_grad(t));
  append_tangents(v, rest...);
}
/// The tangents of an op's differentiable inputs, one per node edge (undefined where none).
template <class... Args>
std::vector<Tensor> collect_tangents(const Args&... args) {
  std::vector<Tensor> v;
  append_tangents(v, args...);
  return v;
}

/// Tangents of a Tensor[] argument (zeros where an element has none).
std::vector<Tensor> fw_grads_or_zeros(std::span<const Tensor> ts);

/// Edges for a node made only to compute jvp_from_backward: a placeholder for each input
/// with a tangent (so the node's formulas for it run), none elsewhere.
std::vector<Edge> fw_edges(const std::vector<Tensor>& tangents);

/// The JVP of an op from its backward node (for ops without a forward formula yet): with
/// u standing for the outputs' gradients, J t = d/du <J^T u, t>, J^T u being the node's
/// apply. `outputs` are the op's differentiable outputs, `tangents` one per node edge
/// (undefined where none). Returns one tangent per output.
std::vector<Tensor> jvp_from_backward(Node& node, const std::vector<Tensor>& outputs,
                                      const std::vector<Tensor>& tangents);

}  // namespace tp::autograd
