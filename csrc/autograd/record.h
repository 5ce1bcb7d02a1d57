#pragma once
// What the generated C++ API asks before running an op: does it record autograd history?
#include <optional>
#include <span>
#include <vector>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "autograd/variable.h"
#include "core/error.h"
#include "dispatch/dispatch_key.h"

namespace tp::autograd {

inline bool any_requires_grad() { return false; }
template <class... Rest>
bool any_requires_grad(const Tensor& t, const Rest&... rest);
template <class... Rest>
bool any_requires_grad(const std::optional<Tensor>& t, const Rest&... rest);
template <class... Rest>
bool any_requires_grad(std::span<const Tensor> ts, const Rest&... rest);

template <class... Rest>
bool any_requires_grad(const Tensor& t, const Rest&... rest) {
  return (t.defined() && t.requires_grad()) || any_requires_grad(rest...);
}
template <class... Rest>
bool any_requires_grad(const std::optional<Tensor>& t, const Rest&... rest) {
  return (t && t->defined() && t->requires_grad()) || any_requires_grad(rest...);
}
template <class... Rest>
bool any_requires_grad(std::span<const Tensor> ts, const Rest&... rest) {
  for (const Tensor& t : ts)
    if (t.requires_grad()) return true;
  return any_requires_grad(rest...);
}

/// Whether an op on these tensor arguments goes through its autograd wrapper: it records
/// history (grad mode on and some input requires grad) or propagates tangents (a dual
/// level is active and some input has a tangent). When false, nothing autograd-related is
/// allocated.
template <class... Args>
bool needs_grad(const Args&... args) {
  // the tensors first: a call on tensors that need no grad reads no thread-local state
  return ((any_requires_grad(args...) && grad_enabled()) ||
          (fw_grad_enabled() && any_fw_grad(args...))) &&
         !dispatch::is_excluded(DispatchKey::Autograd);
}

/// out= forms never record history; PyTorch refuses them when an input requires grad.
template <class... Args>
void check_out_no_grad(const char* op, const Args&... args) {
  TP_CHECK(!(grad_enabled() && any_requires_grad(args...)), op, "(): functions with out=... arguments don't support "
           "automatic differentiation, but one of the arguments requires grad.");
}

inline void append_edges(std::vector<Edge>&) {}
template <class... Rest>
void append_edges(std::vector<Edge>& e, const Tensor& t, const Rest&... rest);
template <class... Rest>
void append_edges(std::vector<Edge>& e, const std::optional<Tensor>& t, const Rest&... rest);
template <class... Rest>
void append_edges(std::vector<Edge>& e, std::span<const Tensor> ts, const Rest&... rest);

template <class... Rest>
void append_edges(std::vector<Edge>& e, const Tensor& t, const Rest&... rest) {
  e.push_back(gradient_edge(t));
  append_edges(e, rest...);
}
template <class... Rest>
void append_edges(std::vector<Edge>& e, const std::optional<Tensor>& t, const Rest&... rest) {
  e.push_back(t ? gradient_edge(*t) : Edge{});
  append_edges(e, rest...);
}
template <class... Rest>
void append_edges(std::vector<Edge>& e, std::span<const Tensor> ts, const Rest&... rest) {
  for (const Tensor& t : ts) e.push_back(gradient_edge(t));
  append_edges(e, rest...);
}

/// The edges of a new node: one per differentiable input (a Tensor[] gives one each).
template <class... Args>
std::vector<Edge> collect_edges(const Args&... args) {
  std::vector<Edge> e;
  append_edges(e, args...);
  return e;
}

}  // namespace tp::autograd
