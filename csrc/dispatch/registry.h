// The op registry: one OpDef per op (schema, tags, doc, a kernel per dispatch key).
// Built-in entries are generated from csrc/ops/ops.yaml; tp.library adds more at runtime.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor_impl.h"
#include "dispatch/dispatch_key.h"
#include "dispatch/ivalue.h"
#include "dispatch/schema.h"

namespace tp {

inline DispatchKey backend_key(DeviceType t) {
  return t == DeviceType::CPU ? DispatchKey::CPU
         : t == DeviceType::CUDA ? DispatchKey::CUDA : DispatchKey::Meta;
}
inline DispatchKey dispatch_key_of(const Tensor& t) { return backend_key(t.device().type); }

// Note [Boxed calls]
// Besides its typed C++ API (tp::add, tp::add_, tp::add_out), every op has a boxed entry
// per form: a function reading the arguments from a Stack of IValues, calling the C++ API
// (so the whole dispatch, autograd included, runs as for a C++ caller) and leaving the
// results on the stack. PyTorch counts the forms as separate operators (add.Tensor,
// add_.Tensor, add.out), each with its own schema; so do op handles. The schemas are
// generated from the entry's `func:` (tools/codegen/gen_boxed.py) and parsed on first use.
// A tuple-returning op's out= form computes the functional result and writes it into the
// out tensors, as its Python binding does.

/// The forms of an op, each an operator of its own in PyTorch.
enum class OpFormKind : uint8_t { Functional, InPlace, Out };
constexpr int kNumOpForms = 3;
using BoxedFn = void (*)(Stack&);

namespace dispatch {
// Note [Boxed fallbacks]
// A dispatch key can hold one boxed kernel serving every op: it receives the op's id, the
// form called (functional, in-place, out=) and the arguments as a Stack, and leaves the
// results there. The Python key's is the handler of dispatch modes and __torch_dispatch__
// (installed by the Python bindings). A backend key's fallback runs the ops that have no
// kernel for that backend (a Meta fallback computing shapes, a Python kernel registered
// from tp._C._register_fallback); without one such a call raises NotImplementedError
// "<op>: no <Key> kernel". The generated kernel_call_<op> boxes the call (fallback_<op>)
// only when it takes a fallback: built-in kernels keep the unboxed path.
struct BoxedFallback {
  void (*fn)(void* ctx, DispatchKey key, int op, OpFormKind form, Stack& stack) = nullptr;
  void* ctx = nullptr;
};
}  // namespace dispatch

struct OpForm {
  const char* schema = nullptr;  // PyTorch's notation; nullptr when the op lacks the form
  BoxedFn boxed = nullptr;       // nullptr for a runtime op: dispatch::call_runtime_op runs it
};

/// One registered op.
struct OpDef {
  std::string name;    // "add", "pow.Scalar"
  std::string schema;  // PyTorch notation
  std::string tags;    // comma separated
  std::string doc;
  void* kernels[kNumBackendKeys] = {};
  OpForm forms[kNumOpForms];
  /// A runtime op's (tp.library's) boxed kernel per key (Note [Runtime ops]); for a
  /// built-in op, a kernel a Library put in place of its own (Note [Kernel overrides]).
  dispatch::BoxedFallback boxed_kernels[kNumDispatchKeys];
  /// A built-in op's own kernels while a Library overrides them.
  void* saved_kernels[kNumBackendKeys] = {};
  /// Calls one of the op's typed kernels (a kernels[] entry) with a stack (generated kcall_).
  void (*kernel_boxed)(void* kernel, OpFormKind form, Stack& stack) = nullptr;
  bool runtime = false;
  /// The parsed schema of a form (parsed once, on first use); raises if the op lacks it.
  const FunctionSchema& form_schema(OpFormKind form) const;
  /// A runtime op's schema, parsed when it is defined.
  void parsed_for_runtime(std::shared_ptr<const FunctionSchema> s) { parsed_[0] = std::move(s); }

 private:
  mutable std::shared_ptr<const FunctionSchema> parsed_[kNumOpForms];
};

/// All ops; index = op id (built-in ids are the generated kOp_* constants).
std::vector<OpDef>& op_registry();

// Note [Runtime ops]
// tp.library defines ops while the program runs: each gets an OpDef (its schema with the
// namespace, `mylib::foo(Tensor x) -> Tensor`, its one form the functional slot) and a
// boxed kernel per dispatch key instead of generated typed code. A call of such an op
// (call_runtime_op) passes the keys as a built-in op's call does (Note [Dispatch keys]):
// Autocast and Autograd when the op has a kernel there and the call needs it (autocast on
// for the device; grad mode on and an input requiring grad), then Python (modes and
// subclasses, as for every op), then the backend kernel of the first tensor's device (or of
// the first Device argument; CPU without either), else the Composite one, else the
// backend's fallback, else NotImplementedError naming the op and the key. A kernel that
// calls the op again below its own key excludes that key (_ExcludeDispatchKeyGuard), as
// redispatch does in PyTorch. The backend step bumps the version of every argument the
// schema marks as written (`Tensor(a!)`), so autograd sees the mutation.
// The registry reserves room once, so ids and references stay valid while ops are added.
/// Adds a runtime op (schema with namespace) and returns its id; raises if the name exists.
int register_runtime_op(const std::string& schema, const std::string& tags);
// Note [Kernel overrides]
// A Library "IMPL" can put a boxed kernel in place of a built-in op's kernel for a backend
// key (PyTorch's `Library("aten", "IMPL").impl("add.Tensor", fn, "CPU")`). The op's own
// typed kernel is kept aside and its slot emptied, so the generated kernel_call_<op> finds
// no kernel there and boxes the call into call_fallback, which runs the override (for the
// backend key, else for Composite) before any key-wide fallback. The slot is shared by the
// op's forms: the override serves the in-place and out= forms too (its result is copied
// into the written tensor). Taking the override away puts the typed kernel back; ops not
// overridden never look at any of this.
/// Puts `k` in place of built-in op `op`'s kernel for `key` (fn == nullptr: takes it back).
void override_kernel(int op, DispatchKey key, dispatch::BoxedFallback k);
/// Runs the kernel op `op` has for `key` (its own one while a Library overrides it; else
/// Composite's) on the stack, below every other key: tp.library.get_kernel's call_boxed.
void call_kernel_boxed(int op, OpFormKind form, DispatchKey key, Stack& stack);
/// Frees a runtime op's name (its id stays taken; calls of it raise).
void undefine_runtime_op(int op);
/// The id of the op named `ns::name.overload` (overload "" for the default), else -1.
int find_op(const std::string& ns, const std::string& name, const std::string& overload);

[[noreturn]] void throw_no_kernel(int op, DispatchKey key);

namespace dispatch {
/// Installs (or, with fn == nullptr, removes) the fallback of `key`; returns the old one.
BoxedFallback set_fallback(DispatchKey key, BoxedFallback f);
const BoxedFallback& fallback(DispatchKey key);
/// Runs `key`'s fallback on the stack; raises NotImplementedError (no kernel) if it has none.
void call_fallback(DispatchKey key, int op, OpFormKind form, Stack& stack);
/// Calls a runtime op with its arguments on the stack (Note [Runtime ops]).
void call_runtime_op(int op, Stack& stack);
/// Calls any op's form boxed: the generated entry of a built-in op, else call_runtime_op.
void call_boxed(int op, OpFormKind form, Stack& stack);
}  // namespace dispatch

/// The kernel for `key`, else the composite one, else nullptr.
inline void* find_kernel(int op, DispatchKey key) {
  const OpDef& def = op_registry()[op];
  if (void* f = def.kernels[int(key)]) return f;
  return def.kernels[int(DispatchKey::Composite)];
}

/// The kernel for `key`, else the composite one; raises NotImplementedError if neither.
inline void* lookup_kernel(int op, DispatchKey key) {
  if (void* f = find_kernel(op, key)) return f;
  throw_no_kernel(op, key);
}

}  // namespace tp
