#include "dispatch/registry.h"

#include "core/error.h"

namespace tp {

const char* dispatch_key_name(DispatchKey k) {
  static constexpr const char* names[] = {"CPU", "CUDA", "Meta", "Composite"};
  return names[int(k)];
}

std::vector<OpDef>& op_registry() {
  static std::vector<OpDef> ops;
  return ops;
}

void throw_no_kernel(int op, DispatchKey key) {
  TP_FAIL_NOT_IMPLEMENTED(op_registry()[op].name, ": no ", dispatch_key_name(key), " kernel");
}

}  // namespace tp
