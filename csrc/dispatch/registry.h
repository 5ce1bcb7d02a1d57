// The op registry: one OpDef per op (schema, tags, doc, a kernel per dispatch key).
// Built-in entries are generated from csrc/ops/ops.yaml; tp.library adds more at runtime.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_impl.h"

namespace tp {

/// Dispatch keys, highest priority last-resort order: backends, then the composite
/// fallback. Autograd, autocast and tracing keys slot in above the backends later.
enum class DispatchKey : uint8_t { CPU, CUDA, Meta, Composite, kCount };
constexpr int kNumDispatchKeys = int(DispatchKey::kCount);

inline DispatchKey backend_key(DeviceType t) {
  return t == DeviceType::CPU ? DispatchKey::CPU
         : t == DeviceType::CUDA ? DispatchKey::CUDA : DispatchKey::Meta;
}
inline DispatchKey dispatch_key_of(const Tensor& t) { return backend_key(t.device().type); }
const char* dispatch_key_name(DispatchKey k);

/// One registered op.
struct OpDef {
  std::string name;    // "add", "pow.Scalar"
  std::string schema;  // PyTorch notation
  std::string tags;    // comma separated
  std::string doc;
  void* kernels[kNumDispatchKeys] = {};
};

/// All ops; index = op id (built-in ids are the generated kOp_* constants).
std::vector<OpDef>& op_registry();

[[noreturn]] void throw_no_kernel(int op, DispatchKey key);

/// The kernel for `key`, else the composite one; raises NotImplementedError if neither.
inline void* lookup_kernel(int op, DispatchKey key) {
  const OpDef& def = op_registry()[op];
  if (void* f = def.kernels[int(key)]) return f;
  if (void* f = def.kernels[int(DispatchKey::Composite)]) return f;
  throw_no_kernel(op, key);
}

}  // namespace tp
