#include "dispatch/registry.h"

#include <mutex>

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
