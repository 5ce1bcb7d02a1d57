#pragma once
// The backward graph: Node (one per recorded op), Edge (to the node that receives a
// gradient), InputMetadata (what that gradient must look like), hooks.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/streams.h"
#include "core/tensor_impl.h"

namespace tp::autograd {

using variable_list = std::vector<Tensor>;

class Node;

/// Where a gradient goes: input slot `input_nr` of node `fn` (none when fn is null).
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return bool(fn); }
};

/// Shape, dtype and device of the forward output a gradient slot belongs to; the engine
/// checks incoming gradients against it and zero-fills missing ones from it.
struct InputMetadata {
  DimVector sizes;
  DType dtype = DType::Float32;
  Device device;
  /// Gradients keep whatever dtype they come in (a leaf whose grad_dtype is None).
  bool any_dtype = false;
};

/// A tensor hook: takes the gradient, returns a replacement or an undefined tensor.
using TensorHook = std::function<Tensor(const Tensor&)>;
/// A node pre-hook: takes the incoming gradients, returns replacements or {}.
using PreHook = std::function<variable_list(const variable_list&)>;
/// A node post-hook: (grad_inputs, grad_outputs) -> replacement grad_inputs or {}.
using PostHook = std::function<variable_list(const variable_list&, const variable_list&)>;

/// A fresh id for a removable hook handle.
int next_hook_id();

/// One recorded op. Its `apply` maps the gradients of the op's outputs (one slot per
/// output) to the gradients of its differentiable inputs (one per next edge).
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// PyTorch's node name, e.g. "MulBackward0".
  virtual std::string name() const = 0;
  virtual variable_list apply(variable_list&& grads) = 0;
  /// Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  /// Whether input gradient `i` goes anywhere (the formula for it is worth computing).
  bool should_compute_output(size_t i) const {
    return i < next_edges_.size() && next_edges_[i].valid();
  }
  size_t num_inputs() const { return input_metadata_.size(); }
  size_t num_outputs() const { return next_edges_.size(); }
  /// Registers a forward output; returns its gradient slot.
  uint32_t add_input_metadata(const Tensor& t);
  uint64_t sequence_nr() const { return sequence_nr_; }

  std::vector<Edge> next_edges_;
  std::vector<InputMetadata> input_metadata_;
  /// The current stream of its first accelerator output's device when the op ran (device
  /// < 0: none): the backward runs there (Note [Autograd streams] in engine.cpp).
  StreamRef stream_;
  /// (hook id, gradient slot, hook): run on one incoming gradient before apply.
  std::vector<std::tuple<int, uint32_t, TensorHook>> tensor_pre_hooks_;
  /// retain_grad() of the forward output at a slot: runs after the tensor pre-hooks.
  std::vector<std::pair<uint32_t, TensorHook>> retains_grad_hooks_;
  std::vector<std::pair<int, PreHook>> pre_hooks_;
  std::vector<std::pair<int, PostHook>> post_hooks_;
  /// The forward stack trace recorded in anomaly mode.
  std::string forward_trace_;
  /// The Python-side `metadata` dict (owned by the bindings).
  std::shared_ptr<void> py_metadata_;
  /// Whether the engine zero-fills the gradient slots no gradient reached (and skips apply
  /// when none did). AccumulateGrad and custom Functions handle missing gradients
  /// themselves.
  bool zero_fills_missing_ = true;

 protected:
  uint64_t sequence_nr_;
};

/// Removes the hook with `id` from any of a node's hook lists; false if absent.
bool remove_hook(Node& node, int id);

}  // namespace tp::autograd
