#pragma once
// Hand-written nodes: AccumulateGrad (leaves), GraphRoot (backward's seed), NotImplemented
// (ops without a derivative formula).
#include <string>
#include <utility>

#include "autograd/node.h"

namespace tp::autograd {

/// Accumulates the incoming gradient into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  std::string name() const override { return "AccumulateGrad"; }
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

}  // namespace tp::autograd
