// Schemas, op handles and boxed calls from Python: tp._C.FunctionSchema (what
// tp.ops.aten.add.Tensor._schema is), tp._C._OpOverload (the callable core of an op
// handle: arguments bound by the schema, PyTorch's messages when they do not bind, then the
// op's boxed entry), and the list of registered forms tp.ops is built from.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "ops/pointwise.h"
#include "python/bindings.h"
#include "python/dispatch.h"

#include <structmember.h>  // after Python.h (through nanobind)

namespace tp::python {

namespace {

/// Python's repr of `o` (for error messages).
std::string repr_of(PyObject* o) {
  PyObject* r = PyObject_Repr(o);
  if (!r) {
    PyErr_Clear();
    return "?";
  }
  std::string s = PyUnicode_AsUTF8(r);
  Py_DECREF(r);
  return s;
}

std::string schema_display_type(const SchemaType& t) {
  // PyTorch names a Scalar "number" and SymInt lists "List[int]" in its binding errors
  if (t.is_list) {
    SchemaType e = t;
    e.is_list = false;
    e.optional = t.elem_optional;
    e.alias.reset();
    return "List[" + schema_display_type(e) + "]";
  }
  std::string base;
  switch (t.kind) {
    case TypeKind::Scalar: base = "number"; break;
    case TypeKind::SymInt: base = "int"; break;
    default: {
      SchemaType e = t;
      e.optional = false;
      e.alias.reset();
      base = e.str();
    }
  }
  return t.optional ? "Optional[" + base + "]" : base;
}

bool int_from_python(PyObject* o, int64_t& out) {
  if (PyLong_Check(o)) {
    int overflow = 0;
    out = PyLong_AsLongLongAndOverflow(o, &overflow);
    return !overflow;
  }
  if (nb::isinstance<Tensor>(o)) return false;
  if (PyIndex_Check(o)) {
    PyObject* i = PyNumber_Index(o);
    if (!i) {
      PyErr_Clear();
      return false;
    }
    out = PyLong_AsLongLong(i);
    Py_DECREF(i);
    return true;
  }
  return false;
}

/// Whether `o` is a tp.Tensor (or subclass instance): an exact type test first.
bool is_tensor(PyObject* o) {
  static PyTypeObject* type = reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr());
  return Py_TYPE(o) == type || PyType_IsSubtype(Py_TYPE(o), type);
}

/// One element of a (non-list) type; false when `o` is not one.
bool element_from_python(const SchemaType& t, PyObject* o, IValue& out) {
  switch (t.kind) {
    case TypeKind::Tensor: {
      if (is_tensor(o)) {
        out = IValue(*nb::inst_ptr<Tensor>(o));
        return true;
      }
      if (PyBool_Check(o) || PyFloat_Check(o) || PyLong_Check(o) || PyComplex_Check(o)) {  // a wrapped number
        Scalar s;
        if (!scalar_from_python(o, s)) return false;
        out = IValue(wrapped_scalar(s));
        return true;
      }
      return false;
    }
    case TypeKind::Int:
    case TypeKind::SymInt: {
      int64_t v;
      if (!int_from_python(o, v)) return false;
      out = IValue(v);
      return true;
    }
    case TypeKind::Float:
      if (PyFloat_Check(o) || (PyLong_Check(o) && !PyBool_Check(o))) {
        out = IValue(PyFloat_AsDouble(o));
        return true;
      }
      return false;
    case TypeKind::Bool:
      if (!PyBool_Check(o)) return false;
      out = IValue(o == Py_True);
      return true;
    case TypeKind::Str:
      if (!PyUnicode_Check(o)) return false;
      out = IValue(std::string(PyUnicode_AsUTF8(o)));
      return true;
    case TypeKind::Scalar: {
      Scalar s;
      if (!scalar_from_python(o, s)) return false;
      out = IValue(s);
      return true;
    }
    case TypeKind::ScalarType:
      if (!nb::isinstance<DTypeObj>(o)) return false;
      out = IValue(nb::inst_ptr<DTypeObj>(o)->dt);
      return true;
    case TypeKind::Device: {
      nb::detail::make_caster<DeviceArg> c;
      if (!c.from_python(o, 0, nullptr)) return false;
      out = IValue(c.value.d);
      return true;
    }
    case TypeKind::Generator:
      if (!nb::isinstance<Generator>(o)) return false;
      out = IValue(*nb::inst_ptr<Generator>(o));
      return true;
    default:
      return false;
  }
}

/// A value of type `t` (lists and optionals included); false when `o` is not one.
bool value_from_python(const SchemaType& t, PyObject* o, IValue& out) {
  if (o == Py_None && t.optional) {
    out = IValue();
    return true;
  }
  if (!t.is_list) return element_from_python(t, o, out);
  SchemaType elem = t;
  elem.is_list = false;
  elem.optional = t.elem_optional;
  if ((t.kind == TypeKind::Int || t.kind == TypeKind::SymInt) && PyLong_Check(o)) {
    int64_t v;  // int[2] padding=1 means [1, 1]
    if (!int_from_python(o, v)) return false;
    out = IValue(std::vector<int64_t>(size_t(std::max<int64_t>(t.list_size, 1)), v));
    return true;
  }
  if (!PyList_Check(o) && !PyTuple_Check(o)) return false;
  nb::sequence seq = nb::borrow<nb::sequence>(o);
  size_t n = nb::len(seq);
  IValue item;
  switch (t.kind) {
    case TypeKind::Int:
    case TypeKind::SymInt: {
      std::vector<int64_t> v(n);
      for (size_t i = 0; i < n; ++i)
        if (!int_from_python(seq[i].ptr(), v[i])) return false;
      out = IValue(std::move(v));
      return true;
    }
    case TypeKind::Float: {
      std::vector<double> v(n);
      for (size_t i = 0; i < n; ++i) {
        if (!element_from_python(elem, seq[i].ptr(), item)) return false;
        v[i] = item.to_double();
      }
      out = IValue(std::move(v));
      return true;
    }
    case TypeKind::Tensor: {
      if (t.elem_optional) {
        std::vector<std::optional<Tensor>> v(n);
        for (size_t i = 0; i < n; ++i) {
          if (!value_from_python(elem, seq[i].ptr(), item)) return false;
          v[i] = item.to_optional_tensor();
        }
        out = IValue(std::move(v));
        return true;
      }
      std::vector<Tensor> v(n);
      for (size_t i = 0; i < n; ++i) {
        if (!nb::isinstance<Tensor>(seq[i])) return false;
        v[i] = *nb::inst_ptr<Tensor>(seq[i]);
      }
      out = IValue(std::move(v));
      return true;
    }
    default:
      return false;
  }
}

IValue default_ivalue(const DefaultValue& d, const Argument& a) {
  using K = DefaultValue::Kind;
  switch (d.kind) {
    case K::None: return IValue();
    case K::Bool: return IValue(d.b);
    case K::Int:
      if (a.type.is_list)  // int[2] padding=0
        return IValue(std::vector<int64_t>(size_t(std::max<int64_t>(a.type.list_size, 1)), d.i));
      if (a.type.kind == TypeKind::Float) return IValue(double(d.i));
      return IValue(d.i);
    case K::Float: return IValue(d.f);
    case K::Str:
      if (a.type.kind == TypeKind::Device) {  // Device dev="cpu"
        nb::detail::make_caster<DeviceArg> c;
        nb::str text(d.s.c_str());
        if (c.from_python(text, 0, nullptr)) return IValue(c.value.d);
        break;
      }
      return IValue(d.s);
    case K::IntList: return IValue(d.ints);
    case K::FloatList: return IValue(d.floats);
    case K::Ident:
      if (a.type.kind == TypeKind::ScalarType)  // ScalarType dtype=float32
        for (int i = 0; i < kNumDTypes; ++i)
          if (d.s == dtype_name(DType(i))) return IValue(DType(i));
      break;
  }
  TP_FAIL("default value ", d.str(), " of argument '", a.name, "' has no value here");
}

}  // namespace

std::string bind_error_prefix(const FunctionSchema& s) { return s.qualified_name() + "() "; }

Stack bind_arguments(const FunctionSchema& s, PyObject* const* args, size_t nargs, PyObject* kwnames) {
  const size_t n = s.arguments.size();
  size_t positional = 0;
  while (positional < n && !s.arguments[positional].kwarg_only) ++positional;
  auto declaration = [&] { return "Declaration: " + s.str(); };
  if (nargs > n)
    TP_FAIL(bind_error_prefix(s), "expected at most ", n, " argument(s) but received ",
            nargs, " argument(s). ", declaration());
  if (nargs > positional)
    TP_FAIL(bind_error_prefix(s), "takes ", positional, " positional argument(s) but ", nargs,
            " was/were given.  ", declaration());
  PyObject* inline_given[16];
  std::vector<PyObject*> heap_given;
  PyObject** given = inline_given;
  if (n > 16) {
    heap_given.resize(n);
    given = heap_given.data();
  }
  std::fill_n(given, n, nullptr);
  for (size_t i = 0; i < nargs; ++i) given[i] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    const char* key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    int idx = s.find_argument(key);
    if (idx < 0)
      TP_FAIL("Unknown keyword argument '", key, "' for operator '", s.qualified_name(),
              "'. Schema: ", s.str());
    if (given[size_t(idx)])
      TP_FAIL("Argument '", key, "' specified both as positional and keyword argument. Schema: ", s.str());
    given[size_t(idx)] = args[nargs + size_t(k)];
  }
  Stack stack;
  stack.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Argument& a = s.arguments[i];
    if (!given[i]) {
      if (!a.default_value)
        TP_FAIL(bind_error_prefix(s), "is missing value for argument '", a.name, "'. ", declaration());
      stack.push_back(default_ivalue(*a.default_value, a));
      continue;
    }
    IValue v;
    if (!value_from_python(a.type, given[i], v))
      TP_FAIL(bind_error_prefix(s), "Expected a value of type '", schema_display_type(a.type),
              "' for argument '", a.name, "' but instead found type '",
              Py_TYPE(given[i])->tp_name, "'.\nPosition: ", i, "\nValue: ", repr_of(given[i]),
              "\n", declaration());
    stack.push_back(std::move(v));
  }
  return stack;
}

nb::object ivalue_to_python(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None: return nb::none();
    case IValue::Tag::Tensor: {
      const Tensor& t = v.to_tensor();
      if (!t.defined()) return nb::none();
      // a Python number the binding wrapped goes back as the number (as PyTorch hands
      // `x * 2` to __torch_dispatch__: mul.Tensor(x, 2))
      if (t.impl()->is_wrapped_number()) return tensor_item(t);
      return nb::cast(t);
    }
    case IValue::Tag::Int: return nb::int_(v.to_int());
    case IValue::Tag::Double: return nb::float_(v.to_double());
    case IValue::Tag::Complex: {
      complex128_t c = v.to_scalar().to_complex();
      return nb::steal(PyComplex_FromDoubles(c.re, c.im));
    }
    case IValue::Tag::Bool: return nb::bool_(v.to_bool());
    case IValue::Tag::Str: return nb::str(v.to_str().c_str());
    case IValue::Tag::IntList: {
      nb::list l;
      for (int64_t i : v.to_int_list()) l.append(i);
      return l;
    }
    case IValue::Tag::DoubleList: {
      nb::list l;
      for (double d : v.to_double_list()) l.append(d);
      return l;
    }
    case IValue::Tag::TensorList: {
      nb::list l;
      for (const Tensor& t : v.to_tensor_list()) l.append(nb::cast(t));
      return l;
    }
    case IValue::Tag::OptionalTensorList: {
      nb::list l;
      for (const auto& t : v.to_optional_tensor_list()) l.append(t ? nb::cast(*t) : nb::none());
      return l;
    }
    case IValue::Tag::DType: return nb::borrow(dtype_object(v.to_dtype()));
    case IValue::Tag::Device: return nb::cast(v.to_device());
    case IValue::Tag::Generator: return nb::cast(v.to_generator());
  }
  return nb::none();
}

void results_from_python(const FunctionSchema& s, nb::handle result, Stack& stack, nb::handle who) {
  stack.clear();
  const size_t n = s.returns.size();
  auto fail_type = [&](const Argument& a, nb::handle r) {
    ::tp::fail(::tp::ErrorKind::Type, nb::str(who).c_str(), ": returned a ",
               Py_TYPE(r.ptr())->tp_name, " where the schema's ", schema_display_type(a.type),
               " was expected");
  };
  auto one = [&](const Argument& a, nb::handle r) {
    IValue v;
    if (a.type.kind == TypeKind::Tensor && !a.type.is_list && r.is_none()) {
      // a gradient nobody asked for: None, read by the generated code as an undefined tensor
      stack.emplace_back();
      return;
    }
    if (!value_from_python(a.type, r.ptr(), v)) fail_type(a, r);
    stack.push_back(std::move(v));
  };
  if (n == 0) return;
  if (n == 1) return one(s.returns[0], result);
  if (!PyTuple_Check(result.ptr()) && !PyList_Check(result.ptr()))
    ::tp::fail(::tp::ErrorKind::Type, nb::str(who).c_str(), ": returned a ",
               Py_TYPE(result.ptr())->tp_name, " where the schema has ", n, " results");
  nb::sequence seq = nb::borrow<nb::sequence>(result);
  TP_CHECK(nb::len(seq) == n, nb::str(who).c_str(), ": returned ", nb::len(seq),
           " values, the schema has ", n);
  for (size_t i = 0; i < n; ++i) one(s.returns[i], seq[i]);
}

nb::object results_to_python(const FunctionSchema& s, Stack& stack) {
  if (s.returns.empty()) return nb::none();
  if (s.returns.size() == 1 && stack.at(0).is_tensor())
    return nb::cast(std::move(stack[0].mutable_tensor()), nb::rv_policy::move);
  if (s.returns.size() == 1) return ivalue_to_python(stack.at(0));
  nb::list l;
  for (const IValue& v : stack) l.append(ivalue_to_python(v));
  return nb::tuple(l);
}

namespace {

// The callable core of tp.ops.<ns>.<op>.<overload>, a plain CPython type so that a call is
// one vectorcall: the arguments bound by the schema, the form's boxed entry, the results.
// tensorplay/_ops.py attaches the rest of PyTorch's OpOverload API to the type.
struct OpOverloadObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int op;
  int form;
  const FunctionSchema* schema;  // owned by the registry
  PyObject* dict;
  PyObject* weakrefs;
};

PyObject* op_overload_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* o = reinterpret_cast<OpOverloadObject*>(self);
  try {
    Stack stack = bind_arguments(*o->schema, args, PyVectorcall_NARGS(nargsf), kwnames);
    dispatch::call_boxed(o->op, OpFormKind(o->form), stack);
    return results_to_python(*o->schema, stack).release().ptr();
  } catch (...) {
    set_python_error(std::current_exception());
    return nullptr;
  }
}

int op_overload_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  int op, form;
  if (kwargs || !PyArg_ParseTuple(args, "ii", &op, &form)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_OpOverload(op_id, form)");
    return -1;
  }
  const auto& reg = op_registry();
  if (op < 0 || size_t(op) >= reg.size() || form < 0 || form >= kNumOpForms ||
      !reg[size_t(op)].forms[form].schema) {
    PyErr_Format(PyExc_ValueError, "_OpOverload: op %d has no form %d", op, form);
    return -1;
  }
  auto* o = reinterpret_cast<OpOverloadObject*>(self);
  try {
    o->schema = &reg[size_t(op)].form_schema(OpFormKind(form));
  } catch (...) {
    set_python_error(std::current_exception());
    return -1;
  }
  o->op = op;
  o->form = form;
  o->vectorcall = op_overload_call;
  return 0;
}

int op_overload_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<OpOverloadObject*>(self)->dict);
  Py_VISIT(Py_TYPE(self));
  return 0;
}

int op_overload_clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<OpOverloadObject*>(self)->dict);
  return 0;
}

void op_overload_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  auto* o = reinterpret_cast<OpOverloadObject*>(self);
  if (o->weakrefs) PyObject_ClearWeakRefs(self);
  Py_CLEAR(o->dict);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* op_overload_schema(PyObject* self, void*) {
  return nb::cast(*reinterpret_cast<OpOverloadObject*>(self)->schema).release().ptr();
}
PyObject* op_overload_op_id(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<OpOverloadObject*>(self)->op);
}
PyObject* op_overload_form(PyObject* self, void*) {
  return PyLong_FromLong(reinterpret_cast<OpOverloadObject*>(self)->form);
}

PyGetSetDef op_overload_getset[] = {
    {"_schema", op_overload_schema, nullptr, "The FunctionSchema of this form.", nullptr},
    {"_op_id", op_overload_op_id, nullptr, nullptr, nullptr},
    {"_form", op_overload_form, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef op_overload_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(OpOverloadObject, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(OpOverloadObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(OpOverloadObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot op_overload_slots[] = {
    {Py_tp_init, reinterpret_cast<void*>(op_overload_init)},
    {Py_tp_new, reinterpret_cast<void*>(PyType_GenericNew)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_traverse, reinterpret_cast<void*>(op_overload_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(op_overload_clear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(op_overload_dealloc)},
    {Py_tp_getset, op_overload_getset},
    {Py_tp_members, op_overload_members},
    {0, nullptr}};

PyType_Spec op_overload_spec = {
    "tensorplay._C._OpOverload", sizeof(OpOverloadObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, op_overload_slots};

}  // namespace

void bind_dispatch(nb::module_& m) {
  nb::class_<AliasInfo>(m, "_AliasInfo")
      .def_prop_ro("is_write", [](const AliasInfo& a) { return a.is_write; })
      .def_prop_ro("before_set", [](const AliasInfo& a) {
        nb::set s;
        s.add(nb::str(a.set.c_str()));
        return s;
      })
      .def_prop_ro("after_set", [](const AliasInfo& a) {
        nb::set s;
        s.add(nb::str(a.to_wildcard ? "*" : a.set.c_str()));
        return s;
      })
      .def("__str__", [](const AliasInfo& a) {
        return a.set + (a.is_write ? "!" : "") + (a.to_wildcard ? " -> *" : "");
      });
  nb::class_<SchemaType>(m, "_SchemaType")
      .def("__str__", &SchemaType::str)
      .def("__repr__", &SchemaType::str)
      .def("__eq__", [](const SchemaType& a, const SchemaType& b) { return a.str() == b.str(); })
      .def("__hash__", [](const SchemaType& a) { return nb::hash(nb::str(a.str().c_str())); })
      .def("kind", [](const SchemaType& t) {
        // PyTorch's type kinds: TensorType, IntType, ListType, OptionalType, ...
        if (t.optional) return std::string("OptionalType");
        if (t.is_list) return std::string("ListType");
        static const char* names[] = {"TensorType", "IntType", "SymIntType", "FloatType",
                                      "BoolType", "StringType", "NumberType", "ScalarTypeType",
                                      "LayoutType", "DeviceObjType", "MemoryFormatType",
                                      "GeneratorType", "StorageType", "StringType",
                                      "ComplexType", "AnyType"};
        return std::string(names[int(t.kind)]);
      });
  nb::class_<Argument>(m, "_Argument")
      .def_prop_ro("name", [](const Argument& a) { return a.name; })
      .def_prop_ro("type", [](const Argument& a) {
        SchemaType t = a.type;
        t.alias.reset();  // PyTorch's Argument.type carries no annotation
        return t;
      })
      .def_prop_ro("kwarg_only", [](const Argument& a) { return a.kwarg_only; })
      .def_prop_ro("is_out", &Argument::is_out)
      .def_prop_ro("alias_info", [](const Argument& a) -> nb::object {
        return a.type.alias ? nb::cast(*a.type.alias) : nb::none();
      })
      .def("has_default_value", [](const Argument& a) { return bool(a.default_value); })
      .def_prop_ro("default_value", [](const Argument& a) -> nb::object {
        if (!a.default_value || a.default_value->kind == DefaultValue::Kind::Ident) return nb::none();
        return ivalue_to_python(default_ivalue(*a.default_value, a));
      })
      .def("__str__", [](const Argument& a) {
        return a.type.str() + (a.name.empty() ? "" : " " + a.name) +
               (a.default_value ? "=" + a.default_value->str() : "");
      });
  nb::class_<FunctionSchema>(m, "FunctionSchema")
      .def_prop_ro("name", &FunctionSchema::qualified_name)
      .def_prop_ro("overload_name", [](const FunctionSchema& s) { return s.overload; })
      .def_prop_ro("arguments", [](const FunctionSchema& s) { return s.arguments; })
      .def_prop_ro("returns", [](const FunctionSchema& s) { return s.returns; })
      .def_prop_ro("is_mutable", &FunctionSchema::is_mutable)
      .def("__str__", &FunctionSchema::str)
      .def("__repr__", &FunctionSchema::str)
      .def("__eq__", [](const FunctionSchema& a, const FunctionSchema& b) { return a.str() == b.str(); })
      .def("__hash__", [](const FunctionSchema& s) { return nb::hash(nb::str(s.str().c_str())); });
  m.def("_parse_schema", [](const std::string& text) { return parse_schema(text); },
        "Parses a schema in PyTorch's notation (torch._C.parse_schema).");

  // (op id, form, qualified name, overload, schema text, tags) of every form of every
  // built-in op (runtime ops get their handles from tp.library when they are defined)
  m.def("_op_forms", [] {
    nb::list out;
    const auto& reg = op_registry();
    for (size_t i = 0; i < reg.size(); ++i)
      for (int f = 0; f < kNumOpForms && !reg[i].runtime; ++f) {
        const OpForm& form = reg[i].forms[f];
        if (!form.schema) continue;
        const FunctionSchema& s = reg[i].form_schema(OpFormKind(f));
        out.append(nb::make_tuple(int(i), f, s.ns, s.name, s.overload, form.schema, reg[i].tags));
      }
    return out;
  });

  PyObject* type = PyType_FromSpec(&op_overload_spec);
  if (!type) throw nb::python_error();
  m.attr("_OpOverload") = nb::steal(type);

  // tp.library.get_kernel(...).call_boxed: one key's kernel of the op, below every other key.
  m.def("_call_kernel_boxed", [](nb::handle handle, DispatchKey key, nb::tuple args, nb::dict kwargs) {
    auto* o = reinterpret_cast<OpOverloadObject*>(handle.ptr());
    std::vector<PyObject*> argv;
    for (nb::handle a : args) argv.push_back(a.ptr());
    nb::list names;
    for (auto [k, v] : kwargs) {
      names.append(k);
      argv.push_back(v.ptr());
    }
    nb::tuple kwnames = nb::tuple(names);
    Stack stack = bind_arguments(*o->schema, argv.data(), args.size(),
                                 kwargs.size() ? kwnames.ptr() : nullptr);
    call_kernel_boxed(o->op, OpFormKind(o->form), key, stack);
    if (o->form != int(OpFormKind::Functional) && stack.size() == 1) return nb::cast(stack[0].to_tensor());
    return results_to_python(*o->schema, stack);
  });

  // An op packet's call: the first overload whose schema binds the arguments runs.
  m.def("_call_overloads", [](nb::tuple handles, nb::tuple args, nb::dict kwargs) -> nb::object {
    std::vector<PyObject*> argv;
    for (nb::handle a : args) argv.push_back(a.ptr());
    nb::list names;
    for (auto [k, v] : kwargs) {
      names.append(k);
      argv.push_back(v.ptr());
    }
    nb::tuple kwnames = nb::tuple(names);
    std::string errors;
    for (nb::handle h : handles) {
      auto* o = reinterpret_cast<OpOverloadObject*>(h.ptr());
      Stack stack;
      try {
        stack = bind_arguments(*o->schema, argv.data(), args.size(), kwargs.size() ? kwnames.ptr() : nullptr);
      } catch (const Error& e) {
        errors += std::string(e.what()) + "\n\n";
        continue;
      }
      dispatch::call_boxed(o->op, OpFormKind(o->form), stack);
      return results_to_python(*o->schema, stack);
    }
    TP_FAIL("Overloaded torch operator invoked from Python failed to match any schema:\n", errors);
  });
}

}  // namespace tp::python
