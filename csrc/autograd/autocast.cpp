#include "autograd/autocast.h"

#include <unordered_map>
#include <utility>

#include "autograd/variable.h"
#include "core/error.h"
#include "tensorplay/ops_api.h"

// Note [Autocast redispatch]
// An op listed in csrc/ops/autocast.yaml starts its generated API function (the
// out-of-place form only; in-place and out= forms are never autocast, as in PyTorch) with
// `if (autocast::armed())`: one thread-local bool, false unless autocast is on. When the
// device type of the op's first tensor argument has autocast enabled, a Redispatch turns
// autocast off on this thread, the eligible tensor arguments (floating, on that device
// type, not float64) are cast with _to_dtype (so autograd records the cast and gradients
// come back in the argument's dtype), and the op is called again. Everything the op's
// kernel calls then runs uncast: PyTorch's autocast kernels exclude their dispatch key
// for the redispatch the same way. Ops that are not listed (composites such as einsum on
// CPU) cast nothing themselves; the listed ops they call do.

namespace tp::autocast {
namespace detail {
constinit thread_local bool t_armed = false;
}  // namespace detail

namespace {

struct State {
  bool enabled[2] = {false, false};                  // CPU, CUDA
  DType dtype[2] = {DType::BFloat16, DType::Float16};  // PyTorch's defaults
  int64_t nesting = 0;
  bool cache_enabled = true;
  bool excluded = false;  // inside a Redispatch
  /// Lower-precision casts of leaves that require grad, by the leaf's impl. The entry
  /// holds the leaf too, so its address is not reused while the entry lives.
  std::unordered_map<const TensorImpl*, std::pair<Tensor, Tensor>> cache;
};

thread_local State t_state;

int slot(DeviceType type) {
  TP_CHECK(type != DeviceType::Meta, "autocast: unsupported device type meta");
  return type == DeviceType::CUDA ? 1 : 0;
}

void rearm() {
  detail::t_armed = !t_state.excluded && (t_state.enabled[0] || t_state.enabled[1]);
}

bool eligible(const Tensor& t, DeviceType device) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::Float64 &&
         t.device().type == device;
}

}  // namespace

bool is_enabled(DeviceType type) { return type != DeviceType::Meta && t_state.enabled[slot(type)]; }

void set_enabled(DeviceType type, bool enabled) {
  t_state.enabled[slot(type)] = enabled;
  rearm();
}

DType get_dtype(DeviceType type) { return t_state.dtype[slot(type)]; }

void set_dtype(DeviceType type, DType dtype) { t_state.dtype[slot(type)] = dtype; }

int64_t increment_nesting() { return ++t_state.nesting; }

int64_t decrement_nesting() { return --t_state.nesting; }

void clear_cache() { t_state.cache.clear(); }

bool is_cache_enabled() { return t_state.cache_enabled; }

void set_cache_enabled(bool enabled) { t_state.cache_enabled = enabled; }

int64_t cache_size() { return int64_t(t_state.cache.size()); }

Redispatch::Redispatch(Policy cpu, Policy cuda, const char* op, const char* banned_message,
                       const Tensor* first) {
  State& s = t_state;
  if (s.excluded || !first || !first->defined()) return;
  DeviceType d = first->device().type;
  if (d == DeviceType::Meta || !s.enabled[slot(d)]) return;
  Policy p = d == DeviceType::CUDA ? cuda : cpu;
  if (p == Policy::None) return;
  TP_CHECK(p != Policy::Banned, banned_message ? banned_message : op,
           banned_message ? "" : " is unsafe to autocast.");
  policy_ = p;
  device_ = d;
  target_ = p == Policy::Fp32 ? DType::Float32 : s.dtype[slot(d)];
  s.excluded = true;
  engaged_ = true;
  rearm();
}

Redispatch::~Redispatch() {
  if (!engaged_) return;
  t_state.excluded = false;
  rearm();
}

void Redispatch::widen_one(const Tensor& t) {
  // Promote starts from the autocast dtype; float32 (or the other half type) widens it
  // to float32. float64 arguments are left out, as PyTorch leaves them.
  if (eligible(t, device_) && t.dtype() != target_) target_ = DType::Float32;
}

Tensor Redispatch::cast(const Tensor& t) {
  if (policy_ == Policy::None || !eligible(t, device_) || t.dtype() == target_) return t;
  State& s = t_state;
  // PyTorch caches the lower-precision copy of a parameter (a float32 leaf that requires
  // grad) for the whole outermost region: a layer used N times casts its weight once.
  // (PyTorch also skips views; a leaf here can be a view only as nn.Parameter is one, of
  // the tensor it wraps, which PyTorch's Parameter is not.)
  bool cacheable = s.cache_enabled && target_ == s.dtype[slot(device_)] &&
                   t.dtype() == DType::Float32 && t.requires_grad() && autograd::is_leaf(t);
  if (cacheable) {
    auto it = s.cache.find(t.impl());
    if (it != s.cache.end()) return it->second.second;
  }
  Tensor r = _to_dtype(t, target_, false);
  if (cacheable) s.cache.emplace(t.impl(), std::pair<Tensor, Tensor>(t, r));
  return r;
}

std::optional<Tensor> Redispatch::cast(const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return cast(*t);
}

std::vector<Tensor> Redispatch::cast(std::span<const Tensor> ts) {
  std::vector<Tensor> r;
  r.reserve(ts.size());
  for (const Tensor& t : ts) r.push_back(cast(t));
  return r;
}

}  // namespace tp::autocast
