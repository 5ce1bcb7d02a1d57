// __torch_function__: Note [Torch function wrappers].
#include <Python.h>
#include <structmember.h>

#include <nanobind/stl/vector.h>

#include "python/bindings.h"

namespace tp::python {

// Note [Torch function wrappers]
// PyTorch's public functions, Tensor methods and properties, and nn.functional entries hand
// their call to a `__torch_function__` when an argument's type defines one (a Tensor
// subclass, or any tensor-like) or a TorchFunctionMode is active. Our functions and methods
// are nanobind functions and Python functions; tensorplay.overrides wraps each public one,
// once at import, in an object of one of the types below, which holds the wrapped callable
// and is what users see as `tp.add`, `tp.Tensor.add` or `tp.Tensor.shape`:
// - _TorchFunction: a vectorcall callable (module functions);
// - _TorchMethod: the same, flagged as a method descriptor, so `x.add(y)` calls it with x
//   first and no bound-method object, as for the nanobind method it wraps;
// - _TorchProperty: a data descriptor over a property; its `__get__` / `__set__` are the
//   `func` a handler receives (as PyTorch passes `Tensor.grad.__get__`).
// The call's fast path costs a thread-local read and one type comparison per argument: a
// plain Tensor, int, float, bool, str or None is never overloaded. Anything else is looked
// up (tuples and lists one level deep): a type whose `__torch_function__` is not
// `_disabled_torch_function_impl` (nn.Parameter's, FakeTensor's) overloads the call.
// Overloaded calls go to the innermost TorchFunctionMode first (popped while it runs), then
// to each overloaded type, subclasses before their bases, else left to right, until one
// returns something other than NotImplemented; all returning NotImplemented is PyTorch's
// TypeError "Multiple dispatch failed". DisableTorchFunctionSubclass turns the subclasses'
// handlers off (modes still run), DisableTorchFunction both.

namespace {

enum class TFState : uint8_t { Enabled, SubclassesDisabled, AllDisabled };

// Modes non-empty or state not Enabled: the fast path's one test. A trivially destructible
// constinit thread_local, read without a TLS-wrapper call (t_tf's vector needs one).
constinit thread_local bool t_tf_slow = false;

struct TFLocal {
  std::vector<PyObject*> modes;  // strong references, innermost last
  TFState state = TFState::Enabled;
  void refresh() { t_tf_slow = !modes.empty() || state != TFState::Enabled; }
};
thread_local TFLocal t_tf;

PyTypeObject* g_tensor_type = nullptr;
PyObject* g_disabled_impl = nullptr;  // _C._disabled_torch_function_impl
PyObject* g_tf_name = nullptr;        // "__torch_function__"

inline bool mode_active() { return !t_tf.modes.empty() && t_tf.state != TFState::AllDisabled; }

inline bool plain(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  return t == g_tensor_type || o == Py_None || t == &PyLong_Type || t == &PyFloat_Type ||
         t == &PyBool_Type || t == &PyUnicode_Type;
}

/// Whether objects of type `t` overload calls through __torch_function__.
bool overloads(PyTypeObject* t) {
  if (t == g_tensor_type) return false;
  PyObject* f = _PyType_Lookup(t, g_tf_name);  // borrowed; cached by type version
  if (!f || f == g_disabled_impl) return false;
  if (Py_IS_TYPE(f, &PyClassMethod_Type) || Py_IS_TYPE(f, &PyStaticMethod_Type)) {
    PyObject* inner = PyObject_GetAttrString(f, "__func__");
    if (!inner) return PyErr_Clear(), true;
    bool disabled = inner == g_disabled_impl;
    Py_DECREF(inner);
    return !disabled;
  }
  return true;
}

/// Adds `o` to the overloaded arguments if its type overloads and is not there yet:
/// before the first argument of a base type, else at the end (PyTorch's order).
void add_overloaded(PyObject* o, std::vector<PyObject*>& out) {
  PyTypeObject* t = Py_TYPE(o);
  for (PyObject* x : out)
    if (Py_TYPE(x) == t) return;
  if (!overloads(t)) return;
  auto it = out.begin();
  for (; it != out.end(); ++it)
    if (PyType_IsSubtype(t, Py_TYPE(*it))) break;
  out.insert(it, o);
}

void collect(PyObject* o, std::vector<PyObject*>& out) {
  if (plain(o)) return;
  if (PyTuple_Check(o) || PyList_Check(o)) {
    PyObject* seq = o;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!plain(items[i]) && !PyTuple_Check(items[i]) && !PyList_Check(items[i]))
        add_overloaded(items[i], out);
    if (Py_TYPE(o) == &PyTuple_Type || Py_TYPE(o) == &PyList_Type) return;
  }
  add_overloaded(o, out);
}

void collect_vector(PyObject* const* args, Py_ssize_t total, std::vector<PyObject*>& out) {
  for (Py_ssize_t i = 0; i < total; ++i) collect(args[i], out);
}

/// The innermost torch function mode, off the stack while it handles a call.
class PoppedTFMode {
 public:
  PoppedTFMode() : mode_(t_tf.modes.back()) {
    t_tf.modes.pop_back();
    t_tf.refresh();
  }
  ~PoppedTFMode() {
    t_tf.modes.push_back(mode_);
    t_tf.refresh();
  }
  PyObject* mode() const { return mode_; }

 private:
  PyObject* mode_;  // the stack's reference, held here meanwhile
};

std::string api_name(PyObject* func) {
  nb::handle f(func);
  // a property's __get__ / __set__: named after the property (tensorplay.Tensor.shape.__get__)
  if (nb::hasattr(f, "__self__") && nb::hasattr(f, "__name__") &&
      nb::hasattr(f.attr("__self__"), "_inner") && nb::hasattr(f.attr("__self__"), "__qualname__"))
    return "tensorplay." + nb::cast<std::string>(nb::str(f.attr("__self__").attr("__qualname__"))) + "." +
           nb::cast<std::string>(nb::str(f.attr("__name__")));
  std::string name;
  for (const char* attr : {"__qualname__", "__name__"}) {
    if (nb::hasattr(f, attr)) {
      name = nb::cast<std::string>(nb::str(f.attr(attr)));
      break;
    }
  }
  if (name.empty()) return nb::cast<std::string>(nb::repr(f));
  if (nb::hasattr(f, "__module__") && !f.attr("__module__").is_none())
    name = nb::cast<std::string>(nb::str(f.attr("__module__"))) + "." + name;
  return name;
}

/// Runs the handlers of an overloaded call (new reference, or null with an error set).
PyObject* dispatch_overloaded(PyObject* func, const std::vector<PyObject*>& overloaded,
                              PyObject* args, PyObject* kwargs) {
  nb::tuple types = nb::steal<nb::tuple>(PyTuple_New(Py_ssize_t(overloaded.size())));
  for (size_t i = 0; i < overloaded.size(); ++i)
    PyTuple_SET_ITEM(types.ptr(), Py_ssize_t(i), Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(overloaded[i]))));
  nb::object kw = kwargs ? nb::borrow(kwargs) : nb::steal(PyDict_New());
  std::string tried;
  if (mode_active()) {
    PoppedTFMode popped;
    PyObject* r = PyObject_CallMethod(popped.mode(), "__torch_function__", "OOOO", func, types.ptr(),
                                      args, kw.ptr());
    if (r != Py_NotImplemented) return r;
    Py_DECREF(r);
    tried += "  - mode object " + nb::cast<std::string>(nb::repr(nb::handle(popped.mode()))) + "\n";
  }
  if (t_tf.state == TFState::Enabled) {
    for (PyObject* o : overloaded) {
      PyObject* handler = PyObject_GetAttr(o, g_tf_name);
      if (!handler) return nullptr;
      PyObject* r = PyObject_CallFunctionObjArgs(handler, func, types.ptr(), args, kw.ptr(), nullptr);
      Py_DECREF(handler);
      if (r != Py_NotImplemented) return r;
      Py_DECREF(r);
      tried += "  - tensor subclass " + nb::cast<std::string>(nb::repr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(o))))) + "\n";
    }
  }
  if (tried.empty()) return PyObject_Call(func, args, kw.ptr());  // nothing left to ask
  PyErr_Format(PyExc_TypeError,
               "Multiple dispatch failed for '%s'; all __torch_function__ handlers returned "
               "NotImplemented:\n\n%s",
               api_name(func).c_str(), tried.c_str());
  return nullptr;
}

// ---- _TorchFunction / _TorchMethod -------------------------------------------------

struct TFWrapper {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* inner;
  PyObject* dict;
  PyObject* weakrefs;
  int modes_only;  // a conversion (tp.tensor, from_dlpack): its data argument never overloads
  vectorcallfunc inner_call;  // the wrapped callable's vectorcall, called directly when it has one
};

inline PyObject* call_inner(TFWrapper* w, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (w->inner_call) return w->inner_call(w->inner, args, nargsf, kwnames);
  return PyObject_Vectorcall(w->inner, args, nargsf, kwnames);
}

PyObject* tf_call_slow(TFWrapper* w, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  std::vector<PyObject*> overloaded;
  if (t_tf.state == TFState::Enabled && !w->modes_only) collect_vector(args, n + nkw, overloaded);
  if (overloaded.empty() && !mode_active()) return PyObject_Vectorcall(w->inner, args, nargsf, kwnames);
  nb::object a = nb::steal(PyTuple_New(n));
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(a.ptr(), i, Py_NewRef(args[i]));
  nb::object kw = nb::steal(PyDict_New());
  for (Py_ssize_t i = 0; i < nkw; ++i)
    if (PyDict_SetItem(kw.ptr(), PyTuple_GET_ITEM(kwnames, i), args[n + i]) < 0) return nullptr;
  return dispatch_overloaded(reinterpret_cast<PyObject*>(w), overloaded, a.ptr(), kw.ptr());
}

PyObject* tf_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* w = reinterpret_cast<TFWrapper*>(self);
  if (!t_tf_slow && !w->modes_only) {
    Py_ssize_t total = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    Py_ssize_t i = 0;
    while (i < total && plain(args[i])) ++i;
    if (i == total) return call_inner(w, args, nargsf, kwnames);
  } else if (!t_tf_slow) {
    return call_inner(w, args, nargsf, kwnames);
  }
  try {
    return tf_call_slow(w, args, nargsf, kwnames);
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

int tf_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* inner = nullptr;
  int modes_only = 0;
  static const char* kw[] = {"inner", "modes_only", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", const_cast<char**>(kw), &inner, &modes_only))
    return -1;
  auto* w = reinterpret_cast<TFWrapper*>(self);
  w->modes_only = modes_only;
  w->inner_call = PyVectorcall_Function(inner);
  Py_XSETREF(w->inner, Py_NewRef(inner));
  w->vectorcall = tf_vectorcall;
  return 0;
}

int tf_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* w = reinterpret_cast<TFWrapper*>(self);
  Py_VISIT(w->inner);
  Py_VISIT(w->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int tf_clear(PyObject* self) {
  auto* w = reinterpret_cast<TFWrapper*>(self);
  Py_CLEAR(w->inner);
  Py_CLEAR(w->dict);
  return 0;
}

void tf_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  auto* w = reinterpret_cast<TFWrapper*>(self);
  if (w->weakrefs) PyObject_ClearWeakRefs(self);
  tf_clear(self);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// Attributes not set on a wrapper (its __dict__ holds __name__, __qualname__, __module__,
// __doc__ and __wrapped__) are the wrapped object's.
template <class W>
PyObject* getattr_or_inner(PyObject* self, PyObject* name) {
  PyObject* r = PyObject_GenericGetAttr(self, name);
  if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<W*>(self)->inner, name);
}

PyObject* tf_repr(PyObject* self) { return PyObject_Repr(reinterpret_cast<TFWrapper*>(self)->inner); }

PyObject* tf_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyObject* tf_reduce(PyObject* self, PyObject*) {
  return PyObject_GetAttrString(self, "__qualname__");  // pickled by name, as functions are
}

PyMethodDef tf_methods[] = {{"__reduce__", tf_reduce, METH_NOARGS, nullptr},
                            {nullptr, nullptr, 0, nullptr}};

PyMemberDef tf_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(TFWrapper, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(TFWrapper, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TFWrapper, weakrefs), READONLY, nullptr},
    {"_inner", T_OBJECT, offsetof(TFWrapper, inner), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

// The method type's slots are the function type's plus descr_get, listed first: the
// function type's spec starts one entry in.
PyType_Slot tf_method_slots[] = {
    {Py_tp_descr_get, reinterpret_cast<void*>(tf_descr_get)},
    {Py_tp_init, reinterpret_cast<void*>(tf_init)},
    {Py_tp_new, reinterpret_cast<void*>(PyType_GenericNew)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_traverse, reinterpret_cast<void*>(tf_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(tf_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(tf_dealloc)},
    {Py_tp_getattro, reinterpret_cast<void*>(getattr_or_inner<TFWrapper>)},
    {Py_tp_repr, reinterpret_cast<void*>(tf_repr)},
    {Py_tp_methods, tf_methods},
    {Py_tp_members, tf_members},
    {0, nullptr}};

constexpr unsigned kTFFlags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;

PyType_Spec tf_function_spec = {"tensorplay._C._TorchFunction", sizeof(TFWrapper), 0, kTFFlags,
                                tf_method_slots + 1};
PyType_Spec tf_method_spec = {"tensorplay._C._TorchMethod", sizeof(TFWrapper), 0,
                              kTFFlags | Py_TPFLAGS_METHOD_DESCRIPTOR, tf_method_slots};

// ---- _TorchProperty ----------------------------------------------------------------

struct TFProperty {
  PyObject_HEAD
  PyObject* inner;     // the wrapped descriptor
  PyObject* fget;      // the property's getter when `inner` is a property (called directly)
  PyObject* get_api;  // self.__get__ / self.__set__: the `func` handlers receive
  PyObject* set_api;
  PyObject* dict;
};

PyObject* inner_get(TFProperty* p, PyObject* obj) {
  if (p->fget) return PyObject_CallOneArg(p->fget, obj);
  descrgetfunc get = Py_TYPE(p->inner)->tp_descr_get;
  if (!get) return Py_NewRef(p->inner);
  return get(p->inner, obj, reinterpret_cast<PyObject*>(Py_TYPE(obj)));
}

PyObject* api_of(PyObject* self, PyObject** slot, const char* name) {
  if (!*slot) *slot = PyObject_GetAttrString(self, name);
  return *slot;
}

PyObject* tfp_get(PyObject* self, PyObject* obj, PyObject*) {
  auto* p = reinterpret_cast<TFProperty*>(self);
  if (!obj || obj == Py_None) return Py_NewRef(self);
  if (!t_tf_slow && Py_TYPE(obj) == g_tensor_type) return inner_get(p, obj);
  try {
    std::vector<PyObject*> overloaded;
    if (t_tf.state == TFState::Enabled) add_overloaded(obj, overloaded);
    if (overloaded.empty() && !mode_active()) return inner_get(p, obj);
    PyObject* func = api_of(self, &p->get_api, "__get__");
    if (!func) return nullptr;
    nb::object args = nb::steal(PyTuple_Pack(1, obj));
    return dispatch_overloaded(func, overloaded, args.ptr(), nullptr);
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  }
}

int inner_set(TFProperty* p, PyObject* obj, PyObject* value) {
  descrsetfunc set = Py_TYPE(p->inner)->tp_descr_set;
  if (!set) {
    PyErr_SetString(PyExc_AttributeError, "can't set attribute");
    return -1;
  }
  return set(p->inner, obj, value);
}

int tfp_set(PyObject* self, PyObject* obj, PyObject* value) {
  auto* p = reinterpret_cast<TFProperty*>(self);
  if (!value || (!t_tf_slow && Py_TYPE(obj) == g_tensor_type)) return inner_set(p, obj, value);
  try {
    std::vector<PyObject*> overloaded;
    if (t_tf.state == TFState::Enabled) add_overloaded(obj, overloaded);
    if (overloaded.empty() && !mode_active()) return inner_set(p, obj, value);
    PyObject* func = api_of(self, &p->set_api, "__set__");
    if (!func) return -1;
    nb::object args = nb::steal(PyTuple_Pack(2, obj, value));
    PyObject* r = dispatch_overloaded(func, overloaded, args.ptr(), nullptr);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
  } catch (nb::python_error& e) {
    e.restore();
    return -1;
  }
}

int tfp_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* inner = nullptr;
  static const char* kw[] = {"inner", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", const_cast<char**>(kw), &inner)) return -1;
  auto* p = reinterpret_cast<TFProperty*>(self);
  Py_XSETREF(p->inner, Py_NewRef(inner));
  Py_CLEAR(p->fget);
  if (PyObject_TypeCheck(inner, &PyProperty_Type)) {
    p->fget = PyObject_GetAttrString(inner, "fget");
    if (!p->fget) return -1;
    if (p->fget == Py_None) Py_CLEAR(p->fget);
  }
  return 0;
}

int tfp_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* p = reinterpret_cast<TFProperty*>(self);
  Py_VISIT(p->inner);
  Py_VISIT(p->fget);
  Py_VISIT(p->get_api);
  Py_VISIT(p->set_api);
  Py_VISIT(p->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int tfp_clear(PyObject* self) {
  auto* p = reinterpret_cast<TFProperty*>(self);
  Py_CLEAR(p->inner);
  Py_CLEAR(p->fget);
  Py_CLEAR(p->get_api);
  Py_CLEAR(p->set_api);
  Py_CLEAR(p->dict);
  return 0;
}

void tfp_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  tfp_clear(self);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyMemberDef tfp_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(TFProperty, dict), READONLY, nullptr},
    {"_inner", T_OBJECT, offsetof(TFProperty, inner), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot tfp_slots[] = {
    {Py_tp_init, reinterpret_cast<void*>(tfp_init)},
    {Py_tp_new, reinterpret_cast<void*>(PyType_GenericNew)},
    {Py_tp_traverse, reinterpret_cast<void*>(tfp_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(tfp_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(tfp_dealloc)},
    {Py_tp_getattro, reinterpret_cast<void*>(getattr_or_inner<TFProperty>)},
    {Py_tp_descr_get, reinterpret_cast<void*>(tfp_get)},
    {Py_tp_descr_set, reinterpret_cast<void*>(tfp_set)},
    {Py_tp_members, tfp_members},
    {0, nullptr}};

PyType_Spec tfp_spec = {"tensorplay._C._TorchProperty", sizeof(TFProperty), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, tfp_slots};

// ---- state guards ------------------------------------------------------------------

struct StateGuard {
  TFState want;
  TFState saved = TFState::Enabled;
};

nb::object disabled_impl(nb::handle func, nb::handle, nb::handle args, nb::handle kwargs) {
  TFState saved = t_tf.state;
  if (saved == TFState::Enabled) t_tf.state = TFState::SubclassesDisabled;
  t_tf.refresh();
  struct Restore {
    TFState s;
    ~Restore() {
      t_tf.state = s;
      t_tf.refresh();
    }
  } restore{saved};
  nb::object a = args.is_valid() && !args.is_none() ? nb::borrow(args) : nb::tuple();
  PyObject* r = PyObject_Call(func.ptr(), a.ptr(), kwargs.is_valid() && !kwargs.is_none() ? kwargs.ptr() : nullptr);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

std::vector<PyObject*> overloaded_of(nb::handle relevant) {
  std::vector<PyObject*> out;
  if (t_tf.state != TFState::Enabled) return out;
  nb::object seq = nb::steal(PySequence_Fast(relevant.ptr(), "relevant_args must be iterable"));
  if (!seq.is_valid()) throw nb::python_error();
  collect_vector(PySequence_Fast_ITEMS(seq.ptr()), PySequence_Fast_GET_SIZE(seq.ptr()), out);
  return out;
}

}  // namespace

void bind_torch_function(nb::module_& m, nb::handle tensor_type) {
  g_tensor_type = reinterpret_cast<PyTypeObject*>(tensor_type.ptr());
  g_tf_name = PyUnicode_InternFromString("__torch_function__");
  for (auto [spec, name] : {std::pair{&tf_function_spec, "_TorchFunction"},
                            std::pair{&tf_method_spec, "_TorchMethod"},
                            std::pair{&tfp_spec, "_TorchProperty"}}) {
    PyObject* t = PyType_FromSpec(spec);
    if (!t) throw nb::python_error();
    m.attr(name) = nb::steal(t);
  }
  m.def("_disabled_torch_function_impl", &disabled_impl, nb::arg("func"), nb::arg("types"),
        nb::arg("args") = nb::tuple(), nb::arg("kwargs") = nb::none());
  g_disabled_impl = m.attr("_disabled_torch_function_impl").ptr();

  nb::class_<StateGuard>(m, "_TorchFunctionStateGuard")
      .def("__enter__", [](StateGuard& g) {
        g.saved = t_tf.state;
        if (int(g.want) > int(g.saved)) t_tf.state = g.want;
        t_tf.refresh();
      })
      .def("__exit__", [](StateGuard& g, nb::args) {
        t_tf.state = g.saved;
        t_tf.refresh();
      });
  m.def("DisableTorchFunctionSubclass", [] { return StateGuard{TFState::SubclassesDisabled}; });
  m.def("DisableTorchFunction", [] { return StateGuard{TFState::AllDisabled}; });
  m.def("_is_torch_function_enabled", [] { return t_tf.state == TFState::Enabled; });
  m.def("_is_torch_function_mode_enabled", [] { return mode_active(); });
  m.def("_is_torch_function_all_disabled", [] { return t_tf.state == TFState::AllDisabled; });

  m.def("_push_on_torch_function_stack", [](nb::handle mode) {
    t_tf.modes.push_back(mode.inc_ref().ptr());
    t_tf.refresh();
  });
  m.def("_pop_torch_function_stack", [] {
    if (t_tf.modes.empty()) throw nb::index_error("pop from empty torch function mode stack");
    nb::object mode = nb::steal(t_tf.modes.back());
    t_tf.modes.pop_back();
    t_tf.refresh();
    return mode;
  });
  m.def("_len_torch_function_stack", [] { return t_tf.modes.size(); });
  m.def("_get_function_stack_at", [](int64_t i) {
    int64_t n = int64_t(t_tf.modes.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw nb::index_error("torch function mode stack index out of range");
    return nb::borrow(t_tf.modes[size_t(i)]);
  });

  m.def("_has_torch_function", [](nb::handle relevant) {
    return mode_active() || !overloaded_of(relevant).empty();
  });
  m.def("_has_torch_function_unary", [](nb::handle obj) {
    if (mode_active()) return true;
    if (t_tf.state != TFState::Enabled) return false;
    std::vector<PyObject*> out;
    collect(obj.ptr(), out);
    return !out.empty();
  });
  m.def("_has_torch_function_variadic", [](nb::args args) {
    if (mode_active()) return true;
    if (t_tf.state != TFState::Enabled) return false;
    std::vector<PyObject*> out;
    collect_vector(&PyTuple_GET_ITEM(args.ptr(), 0), PyTuple_GET_SIZE(args.ptr()), out);
    return !out.empty();
  });
  m.def("_get_overloaded_args", [](nb::handle relevant) {
    std::vector<PyObject*> out;
    nb::object seq = nb::steal(PySequence_Fast(relevant.ptr(), "relevant_args must be iterable"));
    if (!seq.is_valid()) throw nb::python_error();
    collect_vector(PySequence_Fast_ITEMS(seq.ptr()), PySequence_Fast_GET_SIZE(seq.ptr()), out);
    nb::list l;
    for (PyObject* o : out) l.append(nb::handle(o));
    return l;
  });
  m.def("_handle_torch_function", [](nb::handle func, nb::handle relevant, nb::handle args, nb::handle kwargs) {
    std::vector<PyObject*> overloaded = overloaded_of(relevant);
    nb::object a = args.is_none() ? nb::tuple() : nb::borrow(args);
    PyObject* r = dispatch_overloaded(func.ptr(), overloaded, a.ptr(), kwargs.is_none() ? nullptr : kwargs.ptr());
    if (!r) throw nb::python_error();
    return nb::steal(r);
  });
}

}  // namespace tp::python
