#pragma once
// A tensor a backward formula needs, saved at forward time with its version.
#include <memory>

#include "autograd/node.h"

namespace tp::autograd {

/// Note [Saved outputs]: a node that saves its own output must not own that output's
/// autograd state (the output's meta owns the node: a cycle). An output is saved as a
/// plain alias of its memory and gets its history back (grad_fn = the node) on unpack.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);

  /// The saved tensor; raises if it was freed by a backward without retain_graph, or
  /// modified in place since it was saved. `saved_for` is the node unpacking it.
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;
  /// Frees the tensor (backward without retain_graph).
  void reset_data();
  bool defined() const { return defined_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool defined_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

}  // namespace tp::autograd
