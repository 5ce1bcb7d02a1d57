#pragma once
// A tensor a backward formula needs, saved at forward time with its version, and the
// saved-tensor hooks (tp.autograd.graph.saved_tensors_hooks) that may pack it instead.
#include <memory>
#include <optional>
#include <string>

#include "autograd/node.h"

namespace tp::autograd {

/// The hooks of one saved tensor: `pack` runs when it is saved, `unpack` each time a
/// backward reads it.
class SavedTensorHook {
 public:
  virtual ~SavedTensorHook() = default;
  virtual void pack(const Tensor& t) = 0;
  virtual Tensor unpack() = 0;
};

/// A registered (pack, unpack) pair: makes the hook of each tensor saved while it is the
/// innermost pair on this thread.
class SavedTensorHooks {
 public:
  virtual ~SavedTensorHooks() = default;
  virtual std::unique_ptr<SavedTensorHook> make() = 0;
};

/// Registers a pair for this thread (innermost first); raises the disabled message while
/// disable_saved_tensors_hooks is active.
void push_saved_tensor_hooks(std::shared_ptr<SavedTensorHooks> hooks);
void pop_saved_tensor_hooks();
/// disable_saved_tensors_hooks: while a message is set, registering hooks raises it.
/// Setting one while hooks are registered raises it too. Returns the previous message.
std::optional<std::string> set_saved_tensor_hooks_disabled(std::optional<std::string> message);

/// Note [Saved outputs]: a node that saves its own output must not own that output's
/// autograd state (the output's meta owns the node: a cycle). An output is saved as a
/// plain alias of its memory and gets its history back (grad_fn = the node) on unpack.
struct ForwardGrad;  // autograd/variable.h

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
  /// `data` with the saved tensor's gradient edge (an output's node, a hooked input's edge).
  Tensor with_history(const Tensor& data, const std::shared_ptr<Node>& saved_for) const;
  /// `t` sharing the saved output's tangent box, when it has one.
  Tensor with_tangent(Tensor t) const;

  Tensor data_;
  /// With saved-tensor hooks: the packed tensor (data_ stays empty, no version check, as in
  /// PyTorch), and for a saved input that requires grad its gradient edge, given back to the
  /// unpacked tensor so a create_graph backward still reaches the input's history.
  std::shared_ptr<SavedTensorHook> hook_;
  Edge edge_;
  /// An output saved under a dual level: its tangent box, which the op fills after saving
  /// (Note [Saved outputs keep their tangent]).
  std::shared_ptr<ForwardGrad> fw_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool defined_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

}  // namespace tp::autograd
