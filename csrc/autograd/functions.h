#pragma once
// Hand-written nodes: AccumulateGrad (leaves), GraphRoot (backward's seed), NotImplemented
// (ops without a derivative formula), DelayedError (once_differentiable's outputs).
#include <string>
#include <utility>

#include "autograd/node.h"

namespace tp::autograd {

/// Accumulates the incoming gradient into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "tensorplay::autograd::AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override;
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

/// Feeds the root gradients of a backward call to the roots' nodes.
class GraphRoot final : public Node {
 public:
  GraphRoot(std::vector<Edge> roots, variable_list grads);
  std::string name() const override { return "GraphRoot"; }
  variable_list apply(variable_list&&) override { return grads_; }

 private:
  variable_list grads_;
};

/// Where a view sits in its base's storage.
struct Geometry {
  DimVector sizes, strides;
  int64_t offset = 0;
  uint8_t math_bits = 0;  // conjugate / negative bits (Note [Conjugate and negative bits])
  explicit Geometry(const Tensor& t);
};

/// The history of a view whose base was written in place: the base's gradient, restricted
/// to the view's elements. See Note [Views and in-place writes].
class AsStridedViewBackward final : public Node {
 public:
  AsStridedViewBackward(const Tensor& base, const Tensor& view) : base_(base), view_(view) {}
  std::string name() const override { return "AsStridedBackward0"; }
  variable_list apply(variable_list&& grads) override;

 private:
  Geometry base_, view_;
};

/// The base's history after an in-place op `fn` on one of its views: the gradient of the
/// view's elements goes through fn, the rest to the base's old history.
class CopySlices final : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
      : base_(base), view_(view), fn_(std::move(fn)) {}
  std::string name() const override { return "tensorplay::autograd::CopySlices"; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override { fn_->release_variables(); }

 private:
  Geometry base_, view_;
  std::shared_ptr<Node> fn_;
};

/// The node of an op that has no derivative formula: raises when backward reaches it.
class NotImplementedBackward final : public Node {
 public:
  NotImplementedBackward(std::string op, std::string name)
      : op_(std::move(op)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&&) override;

 private:
  std::string op_, name_;
};

/// The history of values computed by a backward that cannot itself be differentiated
/// (a once_differentiable Function's): raises `msg` when a backward reaches it.
class DelayedError final : public Node {
 public:
  explicit DelayedError(std::string msg) : msg_(std::move(msg)) {}
  std::string name() const override { return "tensorplay::autograd::Error"; }
  variable_list apply(variable_list&&) override;

 private:
  std::string msg_;
};

}  // namespace tp::autograd
