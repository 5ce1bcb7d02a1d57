// The Python dispatch key's handler (Note [Dispatch keys]): a call that reaches it is
// handed, as its op handle and its arguments, to the innermost TorchDispatchMode of this
// thread or else to the __torch_dispatch__ of the tensor subclasses among its arguments.
// Also the thread's mode stack and the dispatch-key guards of tp._C.
#include <nanobind/stl/vector.h>

#include "dispatch/registry.h"
#include "kernels/tensor_iterator.h"
#include "python/bindings.h"
#include "python/dispatch.h"
#include "tensorplay/ops_api.h"

namespace tp::python {

namespace {

// This thread's dispatch modes, innermost last (strong references).
thread_local std::vector<PyObject*> t_modes;

void push_mode(nb::handle mode) {
  t_modes.push_back(nb::handle(mode).inc_ref().ptr());
  dispatch::set_mode_count(int32_t(t_modes.size()));
}

nb::object pop_mode() {
  if (t_modes.empty()) throw nb::index_error("pop from empty torch dispatch mode stack");
  nb::object mode = nb::steal(t_modes.back());
  t_modes.pop_back();
  dispatch::set_mode_count(int32_t(t_modes.size()));
  return mode;
}

/// Takes the innermost mode off the stack while it handles a call (PyTorch's
/// _pop_mode_temporarily): its own calls go to the next mode, or below the Python key.
class PoppedMode {
 public:
  PoppedMode() : mode_(pop_mode()) {}
  ~PoppedMode() { push_mode(mode_); }
  const nb::object& mode() const { return mode_; }

 private:
  nb::object mode_;
};

// The op handle (tp.ops...) of each form of each op, registered by tensorplay._ops.
std::vector<PyObject*>& handles() {
  static std::vector<PyObject*> h;
  return h;
}

nb::handle handle_of(int op, OpFormKind form) {
  size_t i = size_t(op) * kNumOpForms + size_t(form);
  TP_CHECK(i < handles().size() && handles()[i], op_registry()[size_t(op)].name,
           ": no op handle registered for the Python key");
  return handles()[i];
}

bool equals_default(const IValue& v, const Argument& a) {
  if (!a.default_value) return false;
  const DefaultValue& d = *a.default_value;
  using K = DefaultValue::Kind;
  switch (d.kind) {
    case K::None: return v.is_none();
    case K::Bool: return v.tag() == IValue::Tag::Bool && v.to_bool() == d.b;
    case K::Int:
      if (v.tag() == IValue::Tag::IntList) {
        for (int64_t x : v.to_int_list())
          if (x != d.i) return false;
        return true;
      }
      if (v.tag() == IValue::Tag::Double) return v.to_double() == double(d.i);
      return v.tag() == IValue::Tag::Int && v.to_int() == d.i;
    case K::Float:
      return (v.tag() == IValue::Tag::Double || v.tag() == IValue::Tag::Int) && v.to_double() == d.f;
    case K::Str: return v.tag() == IValue::Tag::Str && v.to_str() == d.s;
    case K::IntList: {
      if (v.tag() != IValue::Tag::IntList) return false;
      IntArrayRef l = v.to_int_list();
      return std::equal(l.begin(), l.end(), d.ints.begin(), d.ints.end());
    }
    default: return false;
  }
}

/// (args, kwargs) as PyTorch hands them to __torch_dispatch__: positional arguments up to
/// the last one that differs from its default, keyword-only ones that differ.
std::pair<nb::tuple, nb::dict> python_arguments(const FunctionSchema& s, const Stack& stack) {
  size_t positional = 0;
  while (positional < s.arguments.size() && !s.arguments[positional].kwarg_only) ++positional;
  size_t last = 0;
  for (size_t i = 0; i < positional; ++i)
    if (!equals_default(stack[i], s.arguments[i])) last = i + 1;
  nb::list args;
  for (size_t i = 0; i < last; ++i) args.append(ivalue_to_python(stack[i]));
  nb::dict kwargs;
  for (size_t i = positional; i < s.arguments.size(); ++i)
    if (!equals_default(stack[i], s.arguments[i]))
      kwargs[s.arguments[i].name.c_str()] = ivalue_to_python(stack[i]);
  return {nb::tuple(args), kwargs};
}

/// The subclass types among the tensors of a call, subclasses before their bases (as
/// PyTorch orders overloaded arguments), each once.
std::vector<nb::handle> overloaded_types(const Stack& stack) {
  std::vector<nb::handle> types;
  auto add = [&](const Tensor& t) {
    if (!t.defined() || !t.impl()->has_python_key()) return;
    nb::handle type = python_type_of(t);
    for (nb::handle seen : types)
      if (seen.is(type)) return;
    auto pos = types.end();
    for (auto it = types.begin(); it != types.end(); ++it)
      if (PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type.ptr()),
                           reinterpret_cast<PyTypeObject*>(it->ptr()))) {
        pos = it;
        break;
      }
    types.insert(pos, type);
  };
  for (const IValue& v : stack) {
    switch (v.tag()) {
      case IValue::Tag::Tensor: add(v.to_tensor()); break;
      case IValue::Tag::TensorList:
        for (const Tensor& t : v.to_tensor_list()) add(t);
        break;
      case IValue::Tag::OptionalTensorList:
        for (const auto& t : v.to_optional_tensor_list())
          if (t) add(*t);
        break;
      default: break;
    }
  }
  return types;
}

void result_to_stack(const FunctionSchema& s, OpFormKind form, nb::handle result, Stack& stack,
                     nb::handle func) {
  if (form != OpFormKind::Functional) {  // the written tensors
    stack.clear();
    return;
  }
  results_from_python(s, result, stack, func);
}

/// A boxed fallback written in Python (tp._C._set_fallback): called as
/// fn(op_handle, args, kwargs); what it returns are the op's results.
void python_fallback(void* ctx, DispatchKey, int op, OpFormKind form, Stack& stack) {
  nb::gil_scoped_acquire gil;
  const FunctionSchema& s = op_registry()[size_t(op)].form_schema(form);
  nb::handle func = handle_of(op, form);
  auto [args, kwargs] = python_arguments(s, stack);
  nb::object r = nb::handle(static_cast<PyObject*>(ctx))(func, args, kwargs);
  result_to_stack(s, form, r, stack, func);
}

/// A runtime op's kernel written in Python (tp.library): called with the op's arguments as
/// its schema declares them (positional ones by position, keyword-only ones by name); what
/// it returns are the op's results.
void python_op_kernel(void* ctx, DispatchKey, int op, OpFormKind form, Stack& stack) {
  nb::gil_scoped_acquire gil;
  const FunctionSchema& s = op_registry()[size_t(op)].form_schema(form);
  size_t positional = 0;
  while (positional < s.arguments.size() && !s.arguments[positional].kwarg_only) ++positional;
  nb::object args = nb::steal(PyTuple_New(Py_ssize_t(positional)));
  for (size_t i = 0; i < positional; ++i)
    PyTuple_SET_ITEM(args.ptr(), Py_ssize_t(i), ivalue_to_python(stack[i]).release().ptr());
  nb::object r;
  nb::handle fn(static_cast<PyObject*>(ctx));
  if (positional == s.arguments.size()) {
    r = nb::steal(PyObject_Call(fn.ptr(), args.ptr(), nullptr));
  } else {
    nb::dict kwargs;
    for (size_t i = positional; i < s.arguments.size(); ++i)
      kwargs[s.arguments[i].name.c_str()] = ivalue_to_python(stack[i]);
    r = nb::steal(PyObject_Call(fn.ptr(), args.ptr(), kwargs.ptr()));
  }
  if (!r) throw nb::python_error();
  results_from_python(s, r, stack, handle_of(op, form));
}

/// A Python kernel in place of a built-in op's (Note [Kernel overrides]): called with the
/// functional form's arguments; for the in-place and out= forms its result is copied into
/// the written tensor.
void python_override_kernel(void* ctx, DispatchKey, int op, OpFormKind form, Stack& stack) {
  nb::gil_scoped_acquire gil;
  const OpDef& def = op_registry()[size_t(op)];
  const bool functional = def.forms[0].schema != nullptr;
  const FunctionSchema& s = def.form_schema(functional ? OpFormKind::Functional : form);
  const size_t n = s.arguments.size();
  size_t positional = 0;
  while (positional < n && !s.arguments[positional].kwarg_only) ++positional;
  nb::list args;
  nb::dict kwargs;
  for (size_t i = 0; i < n; ++i) {
    if (s.arguments[i].is_out()) continue;
    if (i < positional) args.append(ivalue_to_python(stack[i]));
    else kwargs[s.arguments[i].name.c_str()] = ivalue_to_python(stack[i]);
  }
  nb::handle fn(static_cast<PyObject*>(ctx));
  nb::object r = fn(*nb::tuple(args), **kwargs);
  if (form == OpFormKind::Functional || !functional) {
    results_from_python(def.form_schema(form), r, stack, handle_of(op, form));
    if (form != OpFormKind::Functional) stack.clear();
    return;
  }
  Stack results;
  results_from_python(s, r, results, handle_of(op, OpFormKind::Functional));
  TP_CHECK(results.size() == 1 && results[0].is_tensor(), def.name,
           ": an overriding kernel of an op with several results serves its functional form only");
  const Tensor target = form == OpFormKind::InPlace ? stack[0].to_tensor() : stack.back().to_tensor();
  if (form == OpFormKind::Out) resize_out(target, results[0].to_tensor().sizes());
  copy_(target, results[0].to_tensor());
  stack.clear();
}

/// The Python key's handler (Note [Boxed fallbacks]).
void handle_python_key(void*, DispatchKey, int op, OpFormKind form, Stack& stack) {
  nb::gil_scoped_acquire gil;
  const FunctionSchema& s = op_registry()[size_t(op)].form_schema(form);
  nb::handle func = handle_of(op, form);
  auto [args, kwargs] = python_arguments(s, stack);
  std::vector<nb::handle> types = overloaded_types(stack);
  nb::list type_list;
  for (nb::handle t : types) type_list.append(t);
  nb::tuple type_tuple = nb::tuple(type_list);
  // a handler's own calls run below Autograd and Autocast (PyTorch's
  // AutoDispatchBelowADInplaceOrView), whatever the handler does
  dispatch::ExcludeGuard below(DispatchKeySet(DispatchKey::Autograd) | DispatchKeySet(DispatchKey::Autocast));
  // rules registered for this op and a mode or subclass type (tp.library.register_torch_dispatch)
  // take the place of that type's __torch_dispatch__
  nb::object rules = nb::getattr(func, "_torch_dispatch_rules", nb::none());
  auto rule_for = [&](nb::handle type) -> nb::object {
    if (rules.is_none()) return nb::none();
    PyObject* r = PyDict_GetItemWithError(rules.ptr(), type.ptr());
    if (!r && PyErr_Occurred()) throw nb::python_error();
    return r ? nb::borrow(r) : nb::none();
  };
  if (!t_modes.empty() && !dispatch::is_excluded(DispatchKey::Python)) {
    PoppedMode popped;
    nb::object rule = rule_for(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(popped.mode().ptr()))));
    nb::object r = rule.is_none()
                       ? popped.mode().attr("__torch_dispatch__")(func, type_tuple, args, kwargs)
                       : rule(popped.mode(), func, type_tuple, args, kwargs);
    result_to_stack(s, form, r, stack, func);
    return;
  }
  for (nb::handle type : types) {
    nb::object rule = rule_for(type);
    nb::object r = rule.is_none() ? type.attr("__torch_dispatch__")(func, type_tuple, args, kwargs)
                                  : rule(type, func, type_tuple, args, kwargs);
    if (r.is(nb::handle(Py_NotImplemented))) continue;
    result_to_stack(s, form, r, stack, func);
    return;
  }
  std::string msg = "Multiple dispatch failed for '" + std::string(nb::str(func).c_str()) +
                    "'; all __torch_dispatch__ handlers returned NotImplemented:\n";
  for (nb::handle t : types) msg += "\n  - tensor subclass " + std::string(nb::repr(t).c_str());
  ::tp::fail(::tp::ErrorKind::Type, msg);
}

}  // namespace

void bind_python_dispatch(nb::module_& m) {
  dispatch::set_fallback(DispatchKey::Python, {&handle_python_key, nullptr});
  // A boxed kernel serving every op at a key (Note [Boxed fallbacks]): fn(op_handle, args,
  // kwargs) -> results, or None to remove it. Not for the Python key (modes own it).
  m.def("_set_fallback", [](DispatchKey key, nb::handle fn) {
    TP_CHECK(key != DispatchKey::Python, "_set_fallback: the Python key's handler is the dispatch modes'");
    TP_CHECK(key != DispatchKey::Autograd && key != DispatchKey::Autocast && key != DispatchKey::Conjugate, "_set_fallback: ",
             dispatch_key_name(key), " is woven into the generated functions and takes no fallback");
    dispatch::BoxedFallback f;
    if (!fn.is_none()) f = {&python_fallback, fn.inc_ref().ptr()};
    dispatch::BoxedFallback old = dispatch::set_fallback(key, f);
    if (old.fn == &python_fallback) nb::handle(static_cast<PyObject*>(old.ctx)).dec_ref();
  }, nb::arg("key"), nb::arg("fn").none());
  m.def("_has_fallback", [](DispatchKey key) { return dispatch::fallback(key).fn != nullptr; });
  m.def("_set_op_handle", [](int op, int form, nb::handle h) {
    size_t i = size_t(op) * kNumOpForms + size_t(form);
    if (handles().size() <= i) handles().resize(op_registry().size() * kNumOpForms, nullptr);
    handles()[i] = h.inc_ref().ptr();  // op handles live for the whole process
  });
  // Runtime ops (Note [Runtime ops]): tp.library defines them and sets their kernels.
  m.def("_define_op", [](const std::string& schema, const std::string& tags) {
    return register_runtime_op(schema, tags);
  }, nb::arg("schema"), nb::arg("tags") = "");
  m.def("_find_op", [](const std::string& ns, const std::string& name, const std::string& overload) {
    return find_op(ns, name, overload == "default" ? "" : overload);
  });
  m.def("_undefine_op", [](int op) {  // Library._destroy: the name is free again
    undefine_runtime_op(op);
    nb::gil_scoped_acquire gil;
    for (auto& slot : op_registry()[size_t(op)].boxed_kernels) {
      if (slot.fn == &python_op_kernel) nb::handle(static_cast<PyObject*>(slot.ctx)).dec_ref();
      slot = {};
    }
  });
  m.def("_set_op_kernel", [](int op, DispatchKey key, nb::handle fn) {
    auto& reg = op_registry();
    TP_CHECK(op >= 0 && size_t(op) < reg.size() && reg[size_t(op)].runtime,
             "_set_op_kernel: op ", op, " is not a runtime op");
    auto& slot = reg[size_t(op)].boxed_kernels[int(key)];
    nb::gil_scoped_acquire gil;
    if (slot.fn == &python_op_kernel) nb::handle(static_cast<PyObject*>(slot.ctx)).dec_ref();
    slot = {};
    if (!fn.is_none()) slot = {&python_op_kernel, fn.inc_ref().ptr()};
  }, nb::arg("op"), nb::arg("key"), nb::arg("fn").none());
  m.def("_override_kernel", [](int op, DispatchKey key, nb::handle fn) {
    nb::gil_scoped_acquire gil;
    const auto& old = op_registry().at(size_t(op)).boxed_kernels[int(key)];
    PyObject* old_fn = old.fn == &python_override_kernel ? static_cast<PyObject*>(old.ctx) : nullptr;
    if (fn.is_none()) override_kernel(op, key, {});
    else override_kernel(op, key, {&python_override_kernel, fn.inc_ref().ptr()});
    if (old_fn) Py_DECREF(old_fn);
  }, nb::arg("op"), nb::arg("key"), nb::arg("fn").none());
  m.def("_op_kernel_keys", [](int op) {
    nb::list keys;
    const OpDef& def = op_registry().at(size_t(op));
    for (int k = 0; k < kNumDispatchKeys; ++k)
      if (def.runtime ? def.boxed_kernels[k].fn != nullptr : k < kNumBackendKeys && def.kernels[k])
        keys.append(DispatchKey(k));
    return keys;
  });
  m.def("_push_on_torch_dispatch_stack", &push_mode, nb::arg("mode"));
  m.def("_pop_torch_dispatch_stack", &pop_mode);
  m.def("_len_torch_dispatch_stack", [] { return t_modes.size(); });
  m.def("_get_dispatch_stack_at", [](size_t i) -> nb::object {
    if (i >= t_modes.size()) throw nb::index_error("torch dispatch mode stack index out of range");
    return nb::borrow(t_modes[i]);
  });

  nb::enum_<DispatchKey>(m, "DispatchKey")
      .value("CPU", DispatchKey::CPU)
      .value("CUDA", DispatchKey::CUDA)
      .value("Meta", DispatchKey::Meta)
      .value("CompositeImplicitAutograd", DispatchKey::Composite)
      .value("Python", DispatchKey::Python)
      .value("Conjugate", DispatchKey::Conjugate)
      .value("Batched", DispatchKey::Batched)
      .value("Autocast", DispatchKey::Autocast)
      .value("Autograd", DispatchKey::Autograd);

  // _ExcludeDispatchKeyGuard / _IncludeDispatchKeyGuard: context managers over a key set
  // (tp._C.DispatchKeySet(key) | ...), as torch._C's.
  nb::class_<DispatchKeySet>(m, "DispatchKeySet")
      .def(nb::init<DispatchKey>())
      .def("__or__", [](const DispatchKeySet& a, const DispatchKeySet& b) { return a | b; })
      .def("has", &DispatchKeySet::has)
      .def("__repr__", [](const DispatchKeySet& s) {
        std::string r = "DispatchKeySet(";
        bool first = true;
        for (int k = 0; k < kNumDispatchKeys; ++k)
          if (s.has(DispatchKey(k))) {
            r += std::string(first ? "" : ", ") + dispatch_key_name(DispatchKey(k));
            first = false;
          }
        return r + ")";
      });
  // with _C._ExcludeDispatchKeyGuard(keys): / _IncludeDispatchKeyGuard(keys): / _DisablePythonDispatch():
  struct KeyGuard {
    DispatchKeySet keys;
    bool exclude;
    DispatchKeySet saved_included, saved_excluded;
  };
  nb::class_<KeyGuard>(m, "_DispatchKeyGuard")
      .def("__enter__", [](KeyGuard& g) {
        const auto& l = dispatch::local_keys();
        g.saved_included = l.included;
        g.saved_excluded = l.excluded;
        if (g.exclude) dispatch::set_local_keys(l.included, l.excluded | g.keys);
        else dispatch::set_local_keys(l.included | g.keys, l.excluded);
      })
      .def("__exit__", [](KeyGuard& g, nb::args) {
        dispatch::set_local_keys(g.saved_included, g.saved_excluded);
      });
  m.def("_ExcludeDispatchKeyGuard", [](DispatchKeySet keys) { return KeyGuard{keys, true, {}, {}}; });
  m.def("_IncludeDispatchKeyGuard", [](DispatchKeySet keys) { return KeyGuard{keys, false, {}, {}}; });
  m.def("_DisablePythonDispatch",
        [] { return KeyGuard{DispatchKeySet(DispatchKey::Python), true, {}, {}}; });
  m.def("_dispatch_tls_local_exclude_set", [] { return dispatch::local_keys().excluded; });
  m.def("_dispatch_tls_local_include_set", [] { return dispatch::local_keys().included; });
  m.def("_dispatch_tls_set_dispatch_key_excluded", [](DispatchKey k, bool on) {
    const auto& l = dispatch::local_keys();
    DispatchKeySet one(k);
    dispatch::set_local_keys(l.included, on ? l.excluded | one : l.excluded - one);
  });
  m.def("_dispatch_tls_set_dispatch_key_included", [](DispatchKey k, bool on) {
    const auto& l = dispatch::local_keys();
    DispatchKeySet one(k);
    dispatch::set_local_keys(on ? l.included | one : l.included - one, l.excluded);
  });
  m.def("_dispatch_tls_is_dispatch_key_excluded",
        [](DispatchKey k) { return dispatch::local_keys().excluded.has(k); });
  m.def("_dispatch_tls_is_dispatch_key_included",
        [](DispatchKey k) { return dispatch::local_keys().included.has(k); });
}

}  // namespace tp::python
