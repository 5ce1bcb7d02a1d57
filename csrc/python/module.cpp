// The nanobind module tensorplay._C: error translation, dtype and device objects, argument
// casters, and registration of every binding file.
#include <cstring>
#include <nanobind/stl/pair.h>

#include "core/cpu_capability.h"
#include "core/deterministic.h"
#include "core/error.h"
#include "core/warning.h"
#include "kernels/tensor_iterator.h"
#include "ops/pointwise.h"
#include "ops/reduce_utils.h"
#include "python/bindings.h"
#ifdef TP_USE_CUDA
#include "cuda/caching_allocator.h"
#include "cuda/check.h"
#endif
#include "tensorplay/ops_api.h"

namespace tp::python {

namespace {
PyObject* g_dtype_objs[kNumDTypes] = {};
// tensorplay._C._LinAlgError and tensorplay.OutOfMemoryError, created at import and alive
// for the whole process.
PyObject* g_linalg_error = nullptr;
PyObject* g_accelerator_error = nullptr;
PyObject* g_oom_error_type = nullptr;
}

void translate_error(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
#ifdef TP_USE_CUDA
  } catch (const cuda::OutOfMemoryError& e) {
    PyErr_SetString(g_oom_error_type, e.what());
  } catch (const cuda::AcceleratorError& e) {
    PyErr_SetString(g_accelerator_error, e.what());
#endif
  } catch (const Error& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.kind()) {
      case ErrorKind::LinAlg: type = g_linalg_error; break;
      case ErrorKind::Type: type = PyExc_TypeError; break;
      case ErrorKind::Value: type = PyExc_ValueError; break;
      case ErrorKind::Index: type = PyExc_IndexError; break;
      case ErrorKind::NotImplemented: type = PyExc_NotImplementedError; break;
      default: break;
    }
    PyErr_SetString(type, e.what());
  }
}

void set_python_error(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (...) {
    translate_error(std::current_exception());
    if (PyErr_Occurred()) return;
    try {
      throw;
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
    }
  }
}

PyObject* dtype_object(DType dt) { return g_dtype_objs[int(dt)]; }

bool scalar_from_python(PyObject* o, Scalar& out) {
  if (PyBool_Check(o)) {
    out = Scalar(o == Py_True);
    return true;
  }
  if (PyFloat_Check(o)) {
    out = Scalar(PyFloat_AS_DOUBLE(o));
    return true;
  }
  if (PyComplex_Check(o)) {
    out = Scalar(complex128_t(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return false;
    out = Scalar(int64_t(v));
    return true;
  }
  if (nb::isinstance<Tensor>(o)) {
    const Tensor& t = *nb::inst_ptr<Tensor>(o);
    if (t.numel() != 1 || !t.device().is_cpu()) return false;
    // the value a conjugate / negated view reads as (Note [Conjugate and negative bits])
    const bool conj = t.impl()->is_conj(), neg = t.impl()->is_neg();
    if (is_complex(t.dtype())) {
      complex128_t v;
      cast_strided(t.data_ptr(), 0, t.dtype(), reinterpret_cast<char*>(&v), 0, DType::Complex128, 1);
      if (conj) v.im = -v.im;
      if (neg) v = complex128_t(-v.re, -v.im);
      out = Scalar(v);
    } else if (is_floating(t.dtype())) {
      double v;
      cast_strided(t.data_ptr(), 0, t.dtype(), reinterpret_cast<char*>(&v), 0, DType::Float64, 1);
      out = Scalar(neg ? -v : v);
    } else if (t.dtype() == DType::Bool) {
      out = Scalar(*t.data<bool>());
    } else {
      int64_t v;
      cast_strided(t.data_ptr(), 0, t.dtype(), reinterpret_cast<char*>(&v), 0, DType::Int64, 1);
      out = Scalar(neg ? -v : v);
    }
    return true;
  }
  // NumPy scalars and other number-likes.
  if (PyIndex_Check(o)) {
    PyObject* i = PyNumber_Index(o);
    if (!i) { PyErr_Clear(); return false; }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) return false;
    out = Scalar(int64_t(v));
    return true;
  }
  if (std::strncmp(Py_TYPE(o)->tp_name, "numpy.complex", 13) == 0) {  // np.complex64 and wider
    Py_complex c = PyComplex_AsCComplex(o);
    if (c.real == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = Scalar(complex128_t(c.real, c.imag));
    return true;
  }
  if (Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float && !PySequence_Check(o)) {
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = Scalar(v);
    return true;
  }
  return false;
}

bool int_list_from_python(PyObject* o, DimVector& out) {
  out.resize(0);
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    out.push_back(PyLong_AsLongLong(o));
    return !PyErr_Occurred();
  }
  if (!PyTuple_Check(o) && !PyList_Check(o)) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* it = items[i];
    if (PyLong_Check(it) && !PyBool_Check(it)) {
      out.push_back(PyLong_AsLongLong(it));
    } else if (nb::isinstance<Tensor>(it) || !PyIndex_Check(it)) {
      Scalar s;
      if (!scalar_from_python(it, s) || !s.is_integral()) return false;
      out.push_back(s.to_int());
    } else {
      PyObject* idx = PyNumber_Index(it);
      if (!idx) { PyErr_Clear(); return false; }
      out.push_back(PyLong_AsLongLong(idx));
      Py_DECREF(idx);
    }
  }
  return true;
}

DimVector size_from_args(nb::args args, const char* op) {
  DimVector storage;
  PyObject* a = args.ptr();
  Py_ssize_t n = PyTuple_GET_SIZE(a);
  PyObject* src = (n == 1 && !PyLong_Check(PyTuple_GET_ITEM(a, 0))) ? PyTuple_GET_ITEM(a, 0) : a;
  if (!int_list_from_python(src, storage))
    throw nb::type_error((std::string(op) + "(): argument 'size' must be tuple of ints, but found element of type " +
                          Py_TYPE(n ? PyTuple_GET_ITEM(a, 0) : a)->tp_name).c_str());
  return storage;
}

nb::args sizes_or_keyword(nb::args args, nb::kwargs kw, const char* name, const char* op) {
  if (kw.size() == 0) return args;
  if (kw.size() != 1 || !kw.contains(name) || args.size() != 0)
    throw nb::type_error((std::string(op) + "() received an invalid combination of arguments").c_str());
  return nb::borrow<nb::args>(nb::make_tuple(kw[name]));
}

namespace {
// op name -> named tuple class (tensorplay.return_types). A raw reference kept for the
// whole process: a C++ global holding a Python object would be released after the
// interpreter has finalised.
PyObject* g_return_types = nullptr;
}

nb::object named_tuple(const char* op, nb::tuple fields) {
  PyObject* cls = g_return_types ? PyDict_GetItemString(g_return_types, op) : nullptr;
  if (!cls) return std::move(fields);
  PyObject* r = PyObject_CallObject(cls, fields.ptr());
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

void check_tuple_out(const char* op, nb::handle out) {
  bool seq = nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out);
  if (!seq)
    throw nb::type_error((std::string(op) + "(): argument 'out' must be tuple of Tensors, not " +
                          nb::cast<std::string>(out.type().attr("__name__"))).c_str());
  if (nb::len(out) != 2 || !nb::isinstance<Tensor>(out[0]) || !nb::isinstance<Tensor>(out[1]))
    throw nb::type_error((std::string(op) + "(): argument 'out' must be a tuple of 2 Tensors").c_str());
}

nb::object tuple_out(const char* op, std::tuple<Tensor, Tensor> r, nb::handle out) {
  check_tuple_out(op, out);
  try {
    write_out(op, std::get<0>(r), OutArg{&nb::cast<Tensor&>(out[0]), false});
    write_out(op, std::get<1>(r), OutArg{&nb::cast<Tensor&>(out[1]), false});
  } catch (Error& e) {
    e.name_op(op);
    throw;
  }
  PyObject* cls = g_return_types ? PyDict_GetItemString(g_return_types, op) : nullptr;
  nb::object a = nb::borrow(out[0]), b = nb::borrow(out[1]);
  return cls ? nb::handle(cls)(a, b) : nb::object(nb::make_tuple(a, b));
}

void reject_number_with_out(const TensorArg& a, const char* op, const char* name, int pos) {
  if (!a.t.impl()->is_wrapped_number()) return;
  DType dt = a.t.dtype();
  const char* type = dt == DType::Bool ? "bool" : dt == DType::Int64 ? "int"
                   : dt == DType::Complex128 ? "complex" : "float";
  throw nb::type_error((std::string(op) + "(): argument '" + name + "' (position " +
                        std::to_string(pos) + ") must be Tensor, not " + type).c_str());
}

nb::object tensor_item(const Tensor& t) {
  TP_CHECK(t.numel() == 1, "a Tensor with ", t.numel(),
           " elements cannot be converted to Scalar");
  if (t.impl()->math_bits()) return tensor_item(resolve_neg(resolve_conj(t)));  // the value it reads as
  if (t.device().is_cuda()) {  // read through a host copy
    Tensor h = empty_tensor(t.sizes(), t.dtype(), Device(DeviceType::CPU));
    copy_impl(h, t, false, {});
    return tensor_item(h);
  }
  TP_CHECK(t.device().type != DeviceType::Meta, "Tensor.item() cannot be called on meta tensors");
  TP_CHECK(t.device().is_cpu(), "item: tensors on ", t.device().str(), " have no data");
  if (!t.data_ptr()) t.no_host_data();  // a wrapper subclass: no storage of its own
  if (t.dtype() == DType::Bool) return nb::bool_(*reinterpret_cast<const uint8_t*>(t.data_ptr()) != 0);  // any nonzero byte
  if (is_floating(t.dtype())) {
    double v;
    cast_strided(t.data_ptr(), 0, t.dtype(), reinterpret_cast<char*>(&v), 0, DType::Float64, 1);
    return nb::float_(v);
  }
  if (is_complex(t.dtype())) {
    complex128_t v;
    cast_strided(t.data_ptr(), 0, t.dtype(), reinterpret_cast<char*>(&v), 0, DType::Complex128, 1);
    return nb::steal(PyComplex_FromDoubles(v.re, v.im));
  }
  int64_t v;
  cast_strided(t.data_ptr(), 0, t.dtype(), reinterpret_cast<char*>(&v), 0, DType::Int64, 1);
  return nb::int_(v);
}

}  // namespace tp::python

namespace nanobind::detail {

bool type_caster<tp::python::DeviceArg>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
  PyObject* o = src.ptr();
  try {
    if (PyUnicode_Check(o)) {
      value.d = tp::Device::parse(PyUnicode_AsUTF8(o));
      return true;
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
      long v = PyLong_AsLong(o);
      if (v < 0) return false;
      value.d = tp::Device(tp::DeviceType::CUDA, int(v));
      return true;
    }
    if (nb::isinstance<tp::Device>(src)) {
      value.d = *nb::inst_ptr<tp::Device>(src);
      return true;
    }
  } catch (...) {
    return false;
  }
  return false;
}

bool type_caster<tp::python::TensorArg>::from_python(handle src, uint8_t, cleanup_list*) noexcept {
  if (nb::isinstance<tp::Tensor>(src)) {
    value.t = *nb::inst_ptr<tp::Tensor>(src);
    return true;
  }
  PyObject* o = src.ptr();
  if (!(PyBool_Check(o) || PyFloat_Check(o) || PyLong_Check(o) || PyComplex_Check(o))) return false;
  tp::Scalar s;
  if (!tp::python::scalar_from_python(o, s)) return false;
  value.t = tp::wrapped_scalar(s);
  return true;
}

}  // namespace nanobind::detail

NB_MODULE(_C, m) {
  using namespace tp;
  using namespace tp::python;
  nb::set_leak_warnings(false);  // dtype singletons live for the whole process
  // Note [Warnings from C++]: a UserWarning through Python's warnings module; an error
  // (warnings filtered to "error") propagates as the op's exception
  set_warning_handler([](const std::string& message) {
    nb::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw nb::python_error();
  });
  register_builtin_ops();
  register_boxed_ops();

  // tp.linalg.LinAlgError (PyTorch's torch._C._LinAlgError): a RuntimeError subclass.
  g_linalg_error = PyErr_NewExceptionWithDoc(
      "tensorplay._C._LinAlgError",
      "Raised when a linear algebra routine fails on its input (singular matrix, matrix not "
      "positive-definite, no convergence).",
      PyExc_RuntimeError, nullptr);
  m.attr("_LinAlgError") = nb::handle(g_linalg_error);
  // torch.AcceleratorError: a failed device runtime call (a CUDA error), a RuntimeError subclass.
  g_accelerator_error = PyErr_NewExceptionWithDoc(
      "tensorplay.AcceleratorError", "Exception raised while executing on device",
      PyExc_RuntimeError, nullptr);
  m.attr("AcceleratorError") = nb::handle(g_accelerator_error);
  // torch.OutOfMemoryError (also torch.cuda.OutOfMemoryError): a RuntimeError subclass.
  static PyObject* g_oom_error = PyErr_NewExceptionWithDoc(
      "tensorplay.OutOfMemoryError", "Raised when device memory runs out.", PyExc_RuntimeError,
      nullptr);
  m.attr("OutOfMemoryError") = nb::handle(g_oom_error);
  g_oom_error_type = g_oom_error;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) { translate_error(p); });

  // ---- dtypes
  nb::class_<DTypeObj>(m, "dtype")
      .def_prop_ro("is_floating_point", [](const DTypeObj& d) { return is_floating(d.dt); })
      .def_prop_ro("is_signed", [](const DTypeObj& d) { return is_signed(d.dt); })
      .def_prop_ro("itemsize", [](const DTypeObj& d) { return element_size(d.dt); })
      .def_prop_ro("is_complex", [](const DTypeObj& d) { return is_complex(d.dt); })
      .def("to_real", [](const DTypeObj& d) { return to_real_dtype(d.dt); })
      .def("to_complex", [](const DTypeObj& d) {
        TP_CHECK(is_floating_or_complex(d.dt), "to_complex is only supported for floating point dtypes");
        return to_complex_dtype(d.dt);
      })
      .def_prop_ro("_name", [](const DTypeObj& d) { return dtype_name(d.dt); })
      .def("__repr__", [](const DTypeObj& d) { return std::string("tensorplay.") + dtype_name(d.dt); })
      .def("__reduce__", [](const DTypeObj& d) { return std::string(dtype_name(d.dt)); });
  for (int i = 0; i < kNumDTypes; ++i) {
    nb::object o = nb::cast(DTypeObj{DType(i)});
    g_dtype_objs[i] = o.release().ptr();
    m.attr(dtype_name(DType(i))) = nb::handle(g_dtype_objs[i]);
  }
  m.def("get_default_dtype", [] { return default_dtype(); });
  m.def("set_default_dtype", [](DType d) { set_default_dtype(d); });
  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); });
  m.def("can_cast", [](DType from, DType to) { return can_cast(from, to); }, nb::arg("from_"), nb::arg("to"));
  m.def("_result_type", [](TensorArg a, TensorArg b) { return result_type({&a.t, &b.t}); });
  m.def("get_num_threads", [] { return get_num_threads(); });
  m.def("set_num_threads", [](int n) { set_num_threads(n); });
  m.def("_get_cpu_capability", [] { return std::string(cpu::capability_name(cpu::capability())); });
  m.def("_supported_cpu_capability",
        [] { return std::string(cpu::capability_name(cpu::supported_capability())); });
  m.def("_get_deterministic_algorithms", [] { return deterministic_algorithms(); });
  m.def("_get_deterministic_algorithms_warn_only", [] { return deterministic_algorithms_warn_only(); });
  m.def("_set_deterministic_algorithms", [](bool enabled, bool warn_only) {
    set_deterministic_algorithms(enabled, warn_only);
  });
  bind_matmul_settings(m);

  // ---- devices
  nb::class_<Device>(m, "device")
      .def("__init__", [](Device* self, const std::string& s) { new (self) Device(Device::parse(s)); },
           nb::arg("type"))
      .def("__init__", [](Device* self, int64_t index) {
        TP_CHECK(index >= 0, "Device index must not be negative");
        new (self) Device(DeviceType::CUDA, int(index));
      })
      .def("__init__", [](Device* self, DeviceArg d) { new (self) Device(d.d); })
      .def("__init__", [](Device* self, const std::string& type, int index) {
        Device d = Device::parse(type);
        TP_CHECK(d.index < 0, "type (string) must not include an index because index was passed explicitly: ", type);
        TP_CHECK(index >= 0, "Device index must not be negative");
        new (self) Device(d.type, index);
      }, nb::arg("type"), nb::arg("index"))
      .def_prop_ro("type", [](const Device& d) { return device_type_name(d.type); })
      .def_prop_ro("index", [](const Device& d) -> nb::object {
        if (d.index < 0) return nb::none();
        return nb::int_(d.index);
      })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; }, nb::is_operator())
      .def("__hash__", [](const Device& d) { return int(d.type) * 1000 + d.index; })
      .def("__str__", &Device::str)
      // pickle: device("cuda:1"), as PyTorch's
      .def("__reduce__", [](const Device& d) { return nb::make_tuple(nb::type<Device>(), nb::make_tuple(d.str())); })
      .def("__repr__", [](const Device& d) {
        std::string r = std::string("device(type='") + device_type_name(d.type) + "'";
        if (d.index >= 0) r += ", index=" + std::to_string(d.index);
        return r + ")";
      });
  nb::implicitly_convertible<std::string, Device>();

  // ---- tensors
  // weakref.ref(t), as PyTorch's; a GC type (Note [Tensors and the cycle collector])
  static PyType_Slot tensor_slots[] = {
      {Py_tp_traverse, reinterpret_cast<void*>(tensor_traverse)}, {0, nullptr}};
  nb::class_<Tensor> cls(m, "Tensor", nb::is_weak_referenceable(), nb::type_slots(tensor_slots));
  bind_generator(m);
  bind_philox_reference(m);
  bind_generated_ops(m, cls);
  bind_tensor(m, cls);  // after: its fill_(Tensor) overload must come second
  bind_creation(m);
  bind_dlpack(m, cls);
  bind_autograd(m, cls);
  bind_function(m);
  bind_cuda(m);
  bind_autocast(m);
  bind_dispatch(m);
  bind_python_dispatch(m);
  bind_torch_function(m, cls);

  m.def("_set_return_type", [](const std::string& op, nb::handle cls) {
    if (!g_return_types) g_return_types = PyDict_New();
    PyDict_SetItemString(g_return_types, op.c_str(), cls.ptr());
  });

  // ---- the op registry, for introspection and tests
  m.def("_registered_ops", [] {
    nb::list out;
    for (const OpDef& d : op_registry()) {
      nb::list keys;
      for (int k = 0; k < kNumBackendKeys; ++k)
        if (d.kernels[k]) keys.append(dispatch_key_name(DispatchKey(k)));
      out.append(nb::make_tuple(d.name, d.schema, d.tags, d.doc, keys));
    }
    return out;
  });
}
