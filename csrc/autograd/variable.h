#pragma once
// Per-tensor autograd state (AutogradMeta) and the functions that read and write it.
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/node.h"

namespace tp::autograd {

/// A hook run after a leaf's .grad was accumulated; gets the leaf.
using PostAccumulateHook = std::function<void(const Tensor&)>;

/// What autograd keeps per tensor. Created on first need (requires_grad=True, a result
/// with history, a retained or accumulated .grad, hooks).
/// A tensor's tangent at one dual level (forward-mode AD).
struct ForwardGrad {
  Tensor grad;
  uint64_t level = 0;
};

struct AutogradMeta final : AutogradMetaBase {
  std::shared_ptr<Node> grad_fn_;
  /// The leaf's AccumulateGrad node, while some graph holds it.
  std::weak_ptr<Node> grad_accumulator_;
  Tensor grad_;
  /// Which output of grad_fn_ this tensor is.
  uint32_t output_nr_ = 0;
  bool retains_grad_ = false;
  /// Hooks registered on a leaf before any graph used it (moved to its AccumulateGrad).
  std::vector<std::tuple<int, uint32_t, TensorHook>> leaf_hooks_;
  std::vector<std::pair<int, PostAccumulateHook>> post_accumulate_hooks_;
  /// For views (made while grad mode is on): the tensor viewed (never a view itself), and
  /// the storage version grad_fn_ was made for. See Note [Views and in-place writes].
  Tensor base_;
  bool is_view_ = false;
  /// Set on a custom Function's output that aliases an input (and on views of it): the
  /// error an in-place write to it raises, as PyTorch forbids those writes.
  std::string view_error_;
  uint32_t view_version_ = 0;
  /// The tangent and its dual level (Note [Forward AD] in forward_ad.cpp), in a box a saved
  /// output shares (Note [Saved outputs keep their tangent]); null until a tangent is set.
  std::shared_ptr<ForwardGrad> fw_;
  /// unpack_dual's primal: never has a tangent (not even its base's).
  bool fw_primal_ = false;
  /// A leaf's grad_dtype: 0 its dtype (the default), 1 grad_dtype_, 2 any (None).
  uint8_t grad_dtype_mode_ = 0;
  DType grad_dtype_ = DType::Float32;
};

/// The dtype a leaf's gradient takes (Tensor.grad_dtype): its own dtype unless grad_dtype
/// was set; nullopt when set to None (any dtype is kept as it comes).
std::optional<DType> leaf_grad_dtype(const Tensor& t);
/// Sets a leaf's grad_dtype (nullopt: None) and its accumulator's expected input.
void set_leaf_grad_dtype(const Tensor& t, std::optional<DType> dtype);

/// The tensor's AutogradMeta, or null.
AutogradMeta* meta(const Tensor& t);
/// The tensor's AutogradMeta, created if missing.
AutogradMeta& meta_or_create(const Tensor& t);

/// The node that produced `t` (null for leaves and tensors without history).
std::shared_ptr<Node> grad_fn(const Tensor& t);
inline bool is_leaf(const Tensor& t) { return !grad_fn(t); }
/// The AccumulateGrad node of a leaf that requires grad (made on first use).
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
/// `t.data = src`: t takes src's storage, geometry and dtype and keeps its autograd state;
/// a leaf's accumulator is dropped when the device, dtype or shape change (graphs made
/// before keep the old one).
void set_data(const Tensor& t, const Tensor& src);
/// Where t's gradient goes: its grad_fn slot, its accumulator, or nowhere.
Edge gradient_edge(const Tensor& t);
/// Records `fn` as the producer of `t` (a new gradient slot of fn); t then requires grad.
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn);
/// After an in-place op `fn` wrote into `t`: t's new history is fn; if t is a view, its
/// base's history becomes CopySlices(fn) and t's a view of that.
void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn);
/// After an in-place view op `fn` (t_, transpose_, squeeze_, as_strided_, ...) changed t's
/// geometry: t's history is fn, whose edge is t's old history. No CopySlices: the op wrote
/// no data (Note [In-place view ops]).
void set_inplace_view_history(const Tensor& t, const std::shared_ptr<Node>& fn);
/// Forgets that t is an autograd view (Tensor.set_: t now reads other memory).
void forget_view(const Tensor& t);
/// Records that `view` (a view op's result) views `base`, while grad mode is on.
void note_view(const Tensor& view, const Tensor& base);
/// An alias of t's memory with no autograd state (Tensor.detach()).
Tensor detached(const Tensor& t);
/// In-place writes into inference tensors are refused outside inference_mode.
void check_inference_inplace(const Tensor& t);
/// Marks `view` (a result of a view op) as a view of `base`'s autograd base.
void set_view_base(const Tensor& view, const Tensor& base);
/// Checks an in-place write to `t` is allowed (not a leaf that requires grad, nor a view
/// of one).
void check_inplace(const Tensor& t);

}  // namespace tp::autograd
