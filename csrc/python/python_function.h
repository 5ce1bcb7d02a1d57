// The node of a custom autograd.Function (python_function.cpp has Function.apply).
#pragma once
#include <string>
#include <vector>

#include "autograd/node.h"
#include "autograd/saved_variable.h"
#include "python/bindings.h"

namespace tp::python {

/// The node of one call of a custom autograd.Function. Its Python object (an instance of
/// the "<Name>Backward" subclass of tensorplay._C._FunctionBase made per Function) is the
/// ctx of forward / setup_context / backward and the outputs' grad_fn; the graph owns it
/// through shared_ptrs that hold a reference to that Python object.
class PyFunctionNode final : public autograd::Node {
 public:
  PyFunctionNode() { zero_fills_missing_ = false; }  // apply materialises (or passes None)
  std::string name() const override;
  autograd::variable_list apply(autograd::variable_list&& grads) override;
  void release_variables() override;
  /// ctx.saved_tensors: the saved tensors, unpacked (version-checked).
  nb::object saved_tensors();

  /// What save_for_backward / mark_dirty / mark_non_differentiable got, until the forward's
  /// outputs are wrapped.
  nb::object to_save_, dirty_, non_differentiable_;
  nb::object needs_input_grad_;
  std::vector<autograd::SavedVariable> saved_;
  /// What save_for_forward got (saved, version-checked, when the outputs are wrapped, as
  /// save_for_backward's); ctx.saved_tensors returns these while jvp runs (`in_jvp_`).
  nb::object to_save_for_forward_;
  std::vector<autograd::SavedVariable> saved_for_forward_;
  bool in_jvp_ = false;
  /// Per forward input: whether it was a tensor (owns an edge).
  std::vector<bool> is_tensor_input_;
  /// Per forward output: its gradient slot, or -1 for a non-tensor output.
  std::vector<int> output_slot_;
  bool materialize_grads_ = true;
  bool released_ = false;
};

}  // namespace tp::python
