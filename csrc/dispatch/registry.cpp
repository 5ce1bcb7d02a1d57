#include "dispatch/registry.h"

#include <mutex>

#include "core/error.h"

namespace tp {

const char* dispatch_key_name(DispatchKey k) {
  static constexpr const char* names[] = {"CPU", "CUDA", "Meta", "Composite", "Python",
                                          "Batched", "Autocast", "Autograd"};
  return names[int(k)];
}

namespace dispatch {

constinit thread_local LocalKeys t_local_keys;

namespace {
void refresh_python_state() {
  LocalKeys& l = t_local_keys;
  l.python_state = uint8_t(l.modes > 0 || (l.included | l.excluded).has(DispatchKey::Python));
}
}  // namespace

void set_local_keys(DispatchKeySet included, DispatchKeySet excluded) {
  t_local_keys.included = included;
  t_local_keys.excluded = excluded;
  refresh_python_state();
}

void set_mode_count(int32_t n) {
  t_local_keys.modes = n;
  refresh_python_state();
}

namespace {
BoxedFallback g_fallbacks[kNumDispatchKeys];
}  // namespace

BoxedFallback set_fallback(DispatchKey key, BoxedFallback f) {
  BoxedFallback old = g_fallbacks[int(key)];
  g_fallbacks[int(key)] = f;
  return old;
}

const BoxedFallback& fallback(DispatchKey key) { return g_fallbacks[int(key)]; }

void call_fallback(DispatchKey key, int op, OpFormKind form, Stack& stack) {
  const BoxedFallback& f = g_fallbacks[int(key)];
  if (!f.fn) {
    TP_CHECK(key != DispatchKey::Python, op_registry()[size_t(op)].name,
             ": the Python dispatch key is active but no handler is installed");
    throw_no_kernel(op, key);
  }
  f.fn(f.ctx, key, op, form, stack);
}

bool python_key_slow(uint8_t tensor_bits) {
  const LocalKeys& l = t_local_keys;
  if (l.excluded.has(DispatchKey::Python)) return false;
  return tensor_bits || l.modes > 0 || l.included.has(DispatchKey::Python);
}

}  // namespace dispatch

std::vector<OpDef>& op_registry() {
  static std::vector<OpDef> ops;
  return ops;
}

const FunctionSchema& OpDef::form_schema(OpFormKind form) const {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = parsed_[int(form)];
  if (!slot) {
    const char* text = forms[int(form)].schema;
    TP_CHECK(text, name, ": the op has no such form");
    slot = std::make_shared<const FunctionSchema>(parse_schema(text));
  }
  return *slot;
}

void throw_no_kernel(int op, DispatchKey key) {
  TP_FAIL_NOT_IMPLEMENTED(op_registry()[op].name, ": no ", dispatch_key_name(key), " kernel");
}

}  // namespace tp
