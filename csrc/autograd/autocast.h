#pragma once
// Automatic mixed precision (tp.autocast): the thread-local state and the casts the
// generated API applies to the ops listed in csrc/ops/autocast.yaml.
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/tensor_impl.h"
#include "dispatch/dispatch_key.h"

namespace tp::autocast {

/// What an op listed in csrc/ops/autocast.yaml does with its floating arguments on one
/// device type while autocast is enabled there.
enum class Policy : int8_t {
  None,            ///< not listed: the op runs on its inputs as given
  LowerPrecision,  ///< cast to the autocast dtype (float16 / bfloat16)
  Fp32,            ///< cast to float32
  Promote,         ///< cast to the widest floating dtype among the arguments
  Banned,          ///< refuse to run (the yaml gives PyTorch's message)
};

/// One entry of csrc/ops/autocast.yaml: a C++ op (all its overloads) or a Python-level
/// function (nn.functional) that casts its arguments through `_C._autocast_args`.
struct OpPolicy {
  const char* name;
  Policy cpu;
  Policy cuda;
  const char* banned_message;  ///< PyTorch's error text for a banned op, else null
};

/// The entry named `name`, or null (generated from csrc/ops/autocast.yaml).
const OpPolicy* find_policy(std::string_view name);

namespace detail {
/// True while some device type has autocast enabled and this thread is not inside an
/// autocast redispatch: the one flag a listed op's API function reads when autocast is off.
extern constinit thread_local bool t_armed;
}  // namespace detail

/// Whether a listed op must consult the autocast state (see detail::t_armed): the Autocast
/// dispatch key may be excluded on this thread (Note [Dispatch keys]).
inline bool armed() { return detail::t_armed && !dispatch::is_excluded(DispatchKey::Autocast); }

/// Whether autocast is enabled for `type` (CPU or CUDA) on this thread.
bool is_enabled(DeviceType type);
/// Enables or disables autocast for `type` on this thread.
void set_enabled(DeviceType type, bool enabled);
/// The lower-precision dtype of `type` (defaults: CUDA float16, CPU bfloat16).
DType get_dtype(DeviceType type);
/// Sets the lower-precision dtype of `type` on this thread.
void set_dtype(DeviceType type, DType dtype);
/// Enters an autocast region; returns the new depth.
int64_t increment_nesting();
/// Leaves an autocast region; returns the new depth (0: the outermost region ended).
int64_t decrement_nesting();
/// Drops the cached casts of leaf tensors (at the end of the outermost region).
void clear_cache();
/// Whether lower-precision casts of leaves that require grad are cached.
bool is_cache_enabled();
/// Turns the cast cache on or off on this thread.
void set_cache_enabled(bool enabled);
/// Number of cached casts (a testing aid).
int64_t cache_size();

/// One autocast dispatch of a listed op. Built when armed(): picks the policy of the
/// device type of the op's first tensor argument; when that device type has autocast
/// enabled (converts to true), the caller casts its tensor arguments with cast() and calls
/// the op again. Until destroyed, autocast is off on this thread, so the kernels of the
/// op (and the casts) are not autocast again: Note [Autocast redispatch] in autocast.cpp.
class Redispatch {
 public:
  /// `first`: the op's first tensor argument, or null (no tensor: nothing to do).
  /// Throws the yaml's message for a banned op.
  Redispatch(Policy cpu, Policy cuda, const char* op, const char* banned_message,
             const Tensor* first);
  ~Redispatch();
  Redispatch(const Redispatch&) = delete;
  Redispatch& operator=(const Redispatch&) = delete;

  explicit operator bool() const { return policy_ != Policy::None; }

  /// Promote policy: widens the target dtype over every argument (call before cast()).
  template <class... Args>
  void widen(const Args&... args) {
    if (policy_ == Policy::Promote) (widen_one(args), ...);
  }

  Tensor cast(const Tensor& t);
  std::optional<Tensor> cast(const std::optional<Tensor>& t);
  std::vector<Tensor> cast(std::span<const Tensor> ts);

 private:
  void widen_one(const Tensor& t);
  void widen_one(const std::optional<Tensor>& t) { if (t) widen_one(*t); }
  void widen_one(std::span<const Tensor> ts) { for (const Tensor& t : ts) widen_one(t); }

  Policy policy_ = Policy::None;
  DeviceType device_ = DeviceType::CPU;
  DType target_ = DType::Float32;
  bool engaged_ = false;  // whether this object turned autocast off for the redispatch
};

}  // namespace tp::autocast
