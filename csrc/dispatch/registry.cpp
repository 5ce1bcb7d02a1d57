#include "dispatch/registry.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "core/error.h"

namespace tp {

const char* dispatch_key_name(DispatchKey k) {
  static constexpr const char* names[] = {"CPU", "CUDA", "Meta", "Composite", "Python",
                                          "Conjugate", "Batched", "Autocast", "Autograd"};
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
  if (key != DispatchKey::Python && key != DispatchKey::Conjugate) {  // a built-in op's overridden kernel (Note [Kernel overrides])
    const OpDef& def = op_registry()[size_t(op)];
    if (!def.runtime) {
      for (DispatchKey k : {key, DispatchKey::Composite})
        if (const BoxedFallback& o = def.boxed_kernels[int(k)]; o.fn) return o.fn(o.ctx, key, op, form, stack);
    }
  }
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

DispatchKey special_key_slow(uint8_t tensor_bits) {
  if (tensor_bits & TensorImpl::kMathBits) return DispatchKey::Conjugate;
  return python_key_slow(tensor_bits & TensorImpl::kPythonKeyBit) ? DispatchKey::Python : DispatchKey::kCount;
}

}  // namespace dispatch

namespace {
// Built-in ops plus this many runtime ones fit without moving the registry (Note [Runtime
// ops]): reserved once (address space only, pages are touched as ops are added).
constexpr size_t kRegistryCapacity = 16384;
}  // namespace

std::vector<OpDef>& op_registry() {
  static std::vector<OpDef> ops = [] {
    std::vector<OpDef> v;
    v.reserve(kRegistryCapacity);
    return v;
  }();
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
  const OpDef& def = op_registry()[op];
  if (def.runtime)
    TP_FAIL_NOT_IMPLEMENTED("Could not run '", def.name, "' with arguments from the '",
                            dispatch_key_name(key), "' backend: the op has no kernel for ",
                            dispatch_key_name(key), key == DispatchKey::Meta
                                ? " (register a fake kernel: register_fake)"
                                : " (register one: register_kernel or Library.impl)");
  TP_FAIL_NOT_IMPLEMENTED(def.name, ": no ", dispatch_key_name(key), " kernel");
}

namespace {
std::mutex g_define_mu;
std::unordered_map<std::string, int>& ids_by_name() {
  static std::unordered_map<std::string, int> m;
  return m;
}
std::string key_of(const std::string& ns, const std::string& name, const std::string& overload) {
  return ns + "::" + name + "." + overload;
}
}  // namespace

int find_op(const std::string& ns, const std::string& name, const std::string& overload) {
  std::lock_guard<std::mutex> lock(g_define_mu);
  auto& ids = ids_by_name();
  if (ids.empty()) {  // the built-in ops, indexed on first use
    const auto& reg = op_registry();
    for (size_t i = 0; i < reg.size(); ++i)
      for (int f = 0; f < kNumOpForms; ++f)
        if (reg[i].forms[f].schema) {
          const FunctionSchema& s = reg[i].form_schema(OpFormKind(f));
          ids.emplace(key_of(s.ns, s.name, s.overload), int(i));
        }
  }
  auto it = ids.find(key_of(ns, name, overload));
  return it == ids.end() ? -1 : it->second;
}

int register_runtime_op(const std::string& schema, const std::string& tags) {
  auto parsed = std::make_shared<const FunctionSchema>(parse_schema(schema, ""));
  TP_CHECK(!parsed->ns.empty() && parsed->ns != "aten", "define: '", schema,
           "' needs a namespace of its own (mylib::op)");
  TP_CHECK(find_op(parsed->ns, parsed->name, parsed->overload) < 0, "define: ",
           parsed->qualified_name(), parsed->overload.empty() ? "" : "." + parsed->overload,
           " is already defined");
  std::lock_guard<std::mutex> lock(g_define_mu);
  auto& reg = op_registry();
  TP_CHECK(reg.size() < reg.capacity(), "define: too many ops (the registry holds ",
           reg.capacity(), ")");
  OpDef& def = reg.emplace_back();
  def.name = parsed->qualified_name() + (parsed->overload.empty() ? "" : "." + parsed->overload);
  def.schema = schema;
  def.tags = tags;
  def.runtime = true;
  // the form's text must outlive the op (and not move with it): the op lives for the process
  def.forms[0].schema = (new std::string(schema))->c_str();
  def.parsed_for_runtime(std::move(parsed));
  int id = int(reg.size() - 1);
  ids_by_name().emplace(key_of(def.form_schema(OpFormKind::Functional).ns,
                               def.form_schema(OpFormKind::Functional).name,
                               def.form_schema(OpFormKind::Functional).overload), id);
  return id;
}

void override_kernel(int op, DispatchKey key, dispatch::BoxedFallback k) {
  std::lock_guard<std::mutex> lock(g_define_mu);
  OpDef& def = op_registry().at(size_t(op));
  TP_CHECK(!def.runtime, def.name, ": override_kernel is for built-in ops");
  const int i = int(key);
  TP_CHECK(i < kNumBackendKeys, def.name, ": only a backend key's kernel (CPU, CUDA, Meta, "
           "Composite) can be overridden, not ", dispatch_key_name(key), "'s");
  dispatch::BoxedFallback& slot = def.boxed_kernels[i];
  if (!k.fn) {  // take the override back
    if (slot.fn) def.kernels[i] = def.saved_kernels[i];
    def.saved_kernels[i] = nullptr;
    slot = {};
    return;
  }
  const int composite = int(DispatchKey::Composite);
  const bool own = slot.fn ? def.saved_kernels[i] != nullptr : def.kernels[i] != nullptr;
  if (key != DispatchKey::Composite && def.kernels[composite]) {
    if (own)
      TP_FAIL_NOT_IMPLEMENTED(def.name, ": the op has both a ", dispatch_key_name(key),
                              " and a Composite kernel; overriding one of them is not supported");
    TP_FAIL_NOT_IMPLEMENTED(def.name, " is a composite op (its one kernel serves every "
                            "backend): override its CompositeImplicitAutograd kernel instead");
  }
  if (!slot.fn) {
    def.saved_kernels[i] = def.kernels[i];
    def.kernels[i] = nullptr;
  }
  slot = k;
}

void call_kernel_boxed(int op, OpFormKind form, DispatchKey key, Stack& stack) {
  const OpDef& def = op_registry().at(size_t(op));
  const int i = int(key), composite = int(DispatchKey::Composite);
  TP_CHECK(i < kNumBackendKeys, def.name, ": get_kernel: ", dispatch_key_name(key),
           " is not a backend key");
  if (def.runtime) {
    for (int k : {i, composite})
      if (const dispatch::BoxedFallback& b = def.boxed_kernels[k]; b.fn)
        return b.fn(b.ctx, key, op, form, stack);
    throw_no_kernel(op, key);
  }
  TP_CHECK(def.kernel_boxed, def.name, ": get_kernel: the op's kernels cannot be called boxed");
  void* k = def.boxed_kernels[i].fn ? def.saved_kernels[i] : def.kernels[i];
  if (!k) k = def.boxed_kernels[composite].fn ? def.saved_kernels[composite] : def.kernels[composite];
  if (!k) throw_no_kernel(op, key);
  def.kernel_boxed(k, form, stack);
}

void undefine_runtime_op(int op) {
  std::lock_guard<std::mutex> lock(g_define_mu);
  OpDef& def = op_registry().at(size_t(op));
  TP_CHECK(def.runtime, def.name, " is not a runtime op");
  const FunctionSchema& s = def.form_schema(OpFormKind::Functional);
  auto& ids = ids_by_name();
  auto it = ids.find(key_of(s.ns, s.name, s.overload));
  if (it != ids.end() && it->second == op) ids.erase(it);
}

namespace dispatch {
namespace {

template <class F>
void for_each_tensor(const Stack& stack, F&& f) {
  for (const IValue& v : stack) {
    switch (v.tag()) {
      case IValue::Tag::Tensor: f(v.to_tensor()); break;
      case IValue::Tag::TensorList:
        for (const Tensor& t : v.to_tensor_list()) f(t);
        break;
      case IValue::Tag::OptionalTensorList:
        for (const auto& t : v.to_optional_tensor_list())
          if (t) f(*t);
        break;
      default: break;
    }
  }
}

/// Bumps the version of the arguments the schema marks as written.
void bump_written(const FunctionSchema& s, const Stack& args) {
  for (size_t i = 0; i < s.arguments.size() && i < args.size(); ++i) {
    const auto& alias = s.arguments[i].type.alias;
    if (!alias || !alias->is_write) continue;
    const IValue& v = args[i];
    if (v.is_tensor()) v.to_tensor().impl()->bump_version();
    else if (v.tag() == IValue::Tag::TensorList)
      for (const Tensor& t : v.to_tensor_list()) t.impl()->bump_version();
  }
}

}  // namespace

void call_runtime_op(int op, Stack& stack) {
  const OpDef& def = op_registry()[size_t(op)];
  const LocalKeys& l = t_local_keys;
  uint8_t py = 0;
  bool requires_grad = false, any = false, device_from_scalar = false;
  Device device{DeviceType::CPU, -1};
  std::optional<Device> mismatch;  // a second device (raised at the backend step)
  for_each_tensor(stack, [&](const Tensor& t) {
    if (!t.defined()) return;
    py |= t.impl()->key_bits();
    requires_grad |= t.requires_grad();
    const Device d = t.device();
    // a 0-dim CPU tensor goes with any device, as in PyTorch's device checks
    const bool cpu_scalar = d.type == DeviceType::CPU && t.dim() == 0;
    if (!any || (device_from_scalar && !cpu_scalar)) {
      device = d;
      device_from_scalar = cpu_scalar;
    } else if (!(d == device) && !cpu_scalar && !mismatch) {
      mismatch = d;
    }
    any = true;
  });
  if (!any)
    for (const IValue& v : stack)
      if (v.tag() == IValue::Tag::Device) {
        device = v.to_device();
        break;
      }
  auto run = [&](DispatchKey key) {
    const BoxedFallback& k = def.boxed_kernels[int(key)];
    k.fn(k.ctx, key, op, OpFormKind::Functional, stack);
  };
  if (def.boxed_kernels[int(DispatchKey::Autocast)].fn && !l.excluded.has(DispatchKey::Autocast) &&
      autocast::is_enabled(device.type))
    return run(DispatchKey::Autocast);
  if (def.boxed_kernels[int(DispatchKey::Autograd)].fn && requires_grad &&
      !l.excluded.has(DispatchKey::Autograd) && autograd::grad_enabled())
    return run(DispatchKey::Autograd);
  if (py & TensorImpl::kMathBits) return call_fallback(DispatchKey::Conjugate, op, OpFormKind::Functional, stack);
  if (python_key_slow(py & TensorImpl::kPythonKeyBit)) return call_fallback(DispatchKey::Python, op, OpFormKind::Functional, stack);
  TP_CHECK(!mismatch, "Expected all tensors to be on the same device, but found at least two "
           "devices, ", device.str(), " and ", mismatch ? mismatch->str() : "", "! (in ", def.name, ")");
  DispatchKey key = backend_key(device.type);
  const FunctionSchema& s = def.form_schema(OpFormKind::Functional);
  Stack written;
  if (s.is_mutable()) written = stack;  // the arguments, for the version bump after
  // a result may share an input's storage only where the schema's returns say so
  bool check_alias = true;
  for (const Argument& r : s.returns) check_alias &= !r.type.alias;
  const StorageImpl* first_inputs[8];  // the inputs' storages: 8 inline, the rest on the heap
  std::vector<const StorageImpl*> more_inputs;
  size_t n_inputs = 0;
  if (check_alias)
    for_each_tensor(stack, [&](const Tensor& t) {
      if (!t.defined()) return;
      if (n_inputs < 8) first_inputs[n_inputs] = t.impl()->storage().get();
      else more_inputs.push_back(t.impl()->storage().get());
      ++n_inputs;
    });
  if (def.boxed_kernels[int(key)].fn) run(key);
  else if (def.boxed_kernels[int(DispatchKey::Composite)].fn) run(DispatchKey::Composite);
  else call_fallback(key, op, OpFormKind::Functional, stack);
  if (s.is_mutable()) bump_written(s, written);
  if (check_alias && n_inputs)
    for_each_tensor(stack, [&](const Tensor& t) {
      if (!t.defined()) return;
      const StorageImpl* st = t.impl()->storage().get();
      bool aliases = std::find(first_inputs, first_inputs + std::min<size_t>(n_inputs, 8), st) !=
                         first_inputs + std::min<size_t>(n_inputs, 8) ||
                     std::find(more_inputs.begin(), more_inputs.end(), st) != more_inputs.end();
      TP_CHECK(!aliases, def.name, ": the output of this operator is an input or may alias "
                 "one (it shares its storage), but the schema declares no aliasing; outputs "
                 "may not alias any inputs to the operator. Return a copy instead (e.g. "
                 "x.clone()).");
    });
}

void call_boxed(int op, OpFormKind form, Stack& stack) {
  const OpDef& def = op_registry()[size_t(op)];
  if (BoxedFn f = def.forms[int(form)].boxed) return f(stack);
  TP_CHECK(def.runtime && form == OpFormKind::Functional, def.name, ": the op has no such form");
  call_runtime_op(op, stack);
}

}  // namespace dispatch

}  // namespace tp
