// Dispatch keys, key sets and the thread-local include / exclude sets: Note [Dispatch keys].
#pragma once
#include <cstdint>

#include "core/tensor_impl.h"

namespace tp {

// Note [Dispatch keys]
// A call of an op passes these keys, highest first; each either handles the call or lets
// it through to the next:
//   Batched   reserved for tp.func.vmap
//   Autocast  casts the arguments of the ops autocast.yaml lists (Note [Autocast redispatch])
//   Autograd  records history and tangents (the generated autograd wrappers)
//   Conjugate resolves the conjugate and negative bits of its tensors (Note [Conjugate
//             and negative bits], dispatch/math_bits.cpp), then the call goes on below
//   Python    hands the call to the innermost TorchDispatchMode, else to the
//             __torch_dispatch__ of the tensor subclasses among the arguments
//   Meta, CPU, CUDA   the backend kernel, chosen by the first tensor's device
//   Composite a kernel written with other ops, for every backend
// The Python key sits below Autograd, as in PyTorch: a mode sees the ops autograd runs
// (and those of a backward pass), and history is recorded on the tensors it returns. Its
// kernels see their arguments unchanged and their nested calls skip Autograd and Autocast
// (both are excluded while a Python handler runs). A composite op whose gradient flows
// through its decomposition (yaml `composite:` with `derivatives: decomposed`, PyTorch's
// CompositeImplicitAutograd) is never handed to Python: the ops it is written with are.
//
// The keys a call passes come from its tensors (TensorImpl::key_bits: tensor subclasses
// with __torch_dispatch__ and fake tensors ask for Python, conjugate and negated views for
// Conjugate; ops that read those bits themselves, the views, skip Conjugate) and from this
// thread's included set
// (a dispatch mode on the stack includes Python), minus this thread's excluded set
// (_ExcludeDispatchKeyGuard). Autocast and Autograd stay woven into the generated API
// functions (a branch each, measured cheaper than a table walk); the excluded set turns
// them off. The plain case reads one thread-local byte and the tensors' key bits.
enum class DispatchKey : uint8_t {
  CPU, CUDA, Meta, Composite,      // the backend keys: a kernel table slot each
  Python, Conjugate, Batched, Autocast, Autograd,
  kCount
};
constexpr int kNumDispatchKeys = int(DispatchKey::kCount);
constexpr int kNumBackendKeys = int(DispatchKey::Composite) + 1;

const char* dispatch_key_name(DispatchKey k);

/// A set of dispatch keys.
class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey k) : bits_(1u << int(k)) {}
  constexpr bool has(DispatchKey k) const { return bits_ & (1u << int(k)); }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_bits(bits_ & ~o.bits_); }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint32_t bits() const { return bits_; }
  static constexpr DispatchKeySet from_bits(uint32_t b) {
    DispatchKeySet s;
    s.bits_ = b;
    return s;
  }

 private:
  uint32_t bits_ = 0;
};

namespace dispatch {

/// This thread's included and excluded keys, and how many dispatch modes it has pushed.
struct LocalKeys {
  DispatchKeySet included, excluded;
  int32_t modes = 0;
  /// Non-zero while a mode is pushed or Python is included or excluded: the one byte a
  /// plain call reads.
  uint8_t python_state = 0;
};
extern constinit thread_local LocalKeys t_local_keys;

inline const LocalKeys& local_keys() { return t_local_keys; }
/// Replaces this thread's included and excluded sets.
void set_local_keys(DispatchKeySet included, DispatchKeySet excluded);
/// Records how many dispatch modes this thread has on its stack (the Python bindings own
/// the stack; a non-empty one includes the Python key).
void set_mode_count(int32_t n);
inline bool is_excluded(DispatchKey k) { return t_local_keys.excluded.has(k); }

/// Adds keys to this thread's excluded set for a scope (_ExcludeDispatchKeyGuard).
class ExcludeGuard {
 public:
  explicit ExcludeGuard(DispatchKeySet keys)
      : included_(t_local_keys.included), excluded_(t_local_keys.excluded) {
    set_local_keys(included_, excluded_ | keys);
  }
  ~ExcludeGuard() { set_local_keys(included_, excluded_); }
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  DispatchKeySet included_, excluded_;
};

/// Adds keys to this thread's included set for a scope (_IncludeDispatchKeyGuard).
class IncludeGuard {
 public:
  explicit IncludeGuard(DispatchKeySet keys)
      : included_(t_local_keys.included), excluded_(t_local_keys.excluded) {
    set_local_keys(included_ | keys, excluded_);
  }
  ~IncludeGuard() { set_local_keys(included_, excluded_); }
  IncludeGuard(const IncludeGuard&) = delete;
  IncludeGuard& operator=(const IncludeGuard&) = delete;

 private:
  DispatchKeySet included_, excluded_;
};

inline uint8_t key_bits(const Tensor& t) { return t.impl()->key_bits(); }
inline uint8_t key_bits(const std::optional<Tensor>& t) {
  return t && t->defined() ? t->impl()->key_bits() : 0;
}
inline uint8_t key_bits(std::span<const Tensor> ts) {
  uint8_t b = 0;
  for (const Tensor& t : ts) b |= t.defined() ? t.impl()->key_bits() : 0;
  return b;
}
template <class T>
inline uint8_t key_bits(const T&) { return 0; }

/// Whether a call with these arguments goes to the Python key (a mode or a subclass).
bool python_key_slow(uint8_t tensor_bits);
template <class... Args>
inline bool python_key(const Args&... args) {
  const uint8_t bits = (key_bits(args) | ... | uint8_t(0)) & TensorImpl::kPythonKeyBit;
  if (!(t_local_keys.python_state | bits)) [[likely]] return false;
  return python_key_slow(bits);
}

/// The key above the backend a call with these arguments goes to: Conjugate when a tensor
/// has a conjugate or negative bit, else Python (a mode or a subclass), else kCount (none).
/// The plain case reads the same byte python_key does.
DispatchKey special_key_slow(uint8_t tensor_bits);
template <class... Args>
inline DispatchKey special_key(const Args&... args) {
  const uint8_t bits = (key_bits(args) | ... | uint8_t(0));
  if (!(t_local_keys.python_state | bits)) [[likely]] return DispatchKey::kCount;
  return special_key_slow(bits);
}

}  // namespace dispatch
}  // namespace tp
