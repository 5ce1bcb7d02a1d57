// TensorBase: metadata properties, conversions to Python, and the operator dunders
// (bound in C++ so `a + b` costs one call).
#include <nanobind/stl/vector.h>

#include "autograd/variable.h"
#include "core/error.h"
#include "core/shared_memory.h"
#include "kernels/tensor_iterator.h"
#include "ops/pointwise.h"
#include "python/bindings.h"
#include "tensorplay/ops_api.h"

namespace tp::python {

namespace {

PyObject* g_size_type = nullptr;  // tensorplay.Size, set from Python; kept for the process

nb::object make_size(IntArrayRef sizes) {
  // tensorplay.Size subclasses tuple without a __new__ of its own: allocated as its type
  // and filled in place (as tuple's own subclass constructor does, without the extra tuple)
  auto* type = reinterpret_cast<PyTypeObject*>(g_size_type ? g_size_type : reinterpret_cast<PyObject*>(&PyTuple_Type));
  PyObject* t = type == &PyTuple_Type ? PyTuple_New(Py_ssize_t(sizes.size()))
                                      : type->tp_alloc(type, Py_ssize_t(sizes.size()));
  if (!t) throw nb::python_error();
  for (size_t i = 0; i < sizes.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(sizes[i]));
  return nb::steal(t);
}

template <class T>
PyObject* to_py(T v) {
  if constexpr (std::is_same_v<T, bool>) return PyBool_FromLong(v);
  else if constexpr (std::is_integral_v<T>) return PyLong_FromLongLong(v);
  else if constexpr (kComplex<T>) return PyComplex_FromDoubles(double(v.re), double(v.im));
  else return PyFloat_FromDouble(double(float(v)));
}
template <>
PyObject* to_py<double>(double v) { return PyFloat_FromDouble(v); }

template <class T>
PyObject* to_list(const char* p, IntArrayRef sizes, IntArrayRef strides, size_t d) {
  if (d == sizes.size()) {
    // a bool tensor viewed from bytes (x.view(tp.bool)) may hold any byte: nonzero is True,
    // read as a byte (loading a bool that is not 0 or 1 is undefined: UBSan)
    if constexpr (std::is_same_v<T, bool>) return to_py(*reinterpret_cast<const uint8_t*>(p) != 0);
    else return to_py(*reinterpret_cast<const T*>(p));
  }
  PyObject* l = PyList_New(Py_ssize_t(sizes[d]));
  for (int64_t i = 0; i < sizes[d]; ++i)
    PyList_SET_ITEM(l, i, to_list<T>(p + i * strides[d] * int64_t(sizeof(T)), sizes, strides, d + 1));
  return l;
}

void check_single(const Tensor& t, const char* what) {
  TP_CHECK(t.numel() == 1, what);
}

void release_subclass_state(void* p) {
  auto* st = static_cast<SubclassState*>(p);
  if (Py_IsInitialized()) {  // at interpreter exit the objects are gone already
    nb::gil_scoped_acquire gil;
    Py_XDECREF(st->dict);
    Py_XDECREF(st->type);
  }
  delete st;
}

PyObject* g_disabled_torch_dispatch = nullptr;  // Tensor.__torch_dispatch__, set from Python

}  // namespace

// Note [Tensor subclasses in C++]
// A Python tensor object owns its C++ Tensor; the TensorImpl does not point back to it. A
// plain tensor needs nothing more: any Python object for it will do. A subclass instance
// made by _make_subclass (with __torch_dispatch__), _make_wrapper_subclass or as_subclass
// gets a SubclassState on its TensorImpl: its type and its __dict__, shared by every
// instance later made for the same TensorImpl (type_caster<Tensor> makes one whenever C++
// hands the tensor back, e.g. as an argument of __torch_dispatch__). Attributes set on one
// instance are seen on all; `a is b` may be false for two instances of one tensor (PyTorch
// keeps one object per tensor). A type that overrides __torch_dispatch__ also sets the
// tensor's Python key bit, so every op on it reaches the Python dispatch key.
void attach_subclass_state(nb::handle obj) {
  const Tensor& t = *nb::inst_ptr<Tensor>(obj);
  nb::handle type = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())));
  PyObject* dict = PyObject_GenericGetDict(obj.ptr(), nullptr);  // made now, shared later
  if (!dict) PyErr_Clear();
  if (auto* old = static_cast<SubclassState*>(t.impl()->python_state())) release_subclass_state(old);
  t.impl()->set_python_state(new SubclassState{type.inc_ref().ptr(), dict});
  t.impl()->set_python_key(overrides_torch_dispatch(type));
}

bool overrides_torch_dispatch(nb::handle type) {
  static PyObject* name = PyUnicode_InternFromString("__torch_dispatch__");
  PyObject* d = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type.ptr()), name);  // borrowed
  if (d && Py_IS_TYPE(d, &PyClassMethod_Type)) d = PyObject_GetAttrString(d, "__func__"), Py_XDECREF(d);
  return d && d != g_disabled_torch_dispatch;
}

PyObject* subclass_instance(const Tensor& t) {
  auto* st = static_cast<SubclassState*>(t.impl()->python_state());
  nb::object obj = nb::inst_alloc(nb::handle(st->type));
  new (nb::inst_ptr<Tensor>(obj)) Tensor(t);
  nb::inst_mark_ready(obj);
  if (st->dict && PyObject_GenericSetDict(obj.ptr(), st->dict, nullptr) < 0) return nullptr;
  return obj.release().ptr();
}

nb::handle python_type_of(const Tensor& t) {
  if (auto* st = static_cast<SubclassState*>(t.impl()->python_state())) return st->type;
  return nb::type<Tensor>();
}

void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls) {
  m.def("_set_size_type", [](nb::handle t) { g_size_type = t.inc_ref().ptr(); });
  release_python_state = &release_subclass_state;
  m.def("_set_disabled_torch_dispatch", [](nb::handle f) { g_disabled_torch_dispatch = f.inc_ref().ptr(); });
  // an id of the tensor's storage: equal for tensors that alias (tests of the meta device)
  m.def("_storage_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()->storage().get()); });
  // ---- storages (Tensor.set_, resize_, share_memory_; UntypedStorage; multiprocessing)
  // a 1-D tensor of `dtype` over t's whole storage from offset 0 (no autograd view): what
  // set_(Storage, ...) takes its storage from
  m.def("_storage_tensor", [](const Tensor& t, DType dtype) {
    const int64_t n = int64_t(t.impl()->storage()->nbytes() / element_size(dtype));
    auto impl = make_intrusive<TensorImpl>(t.impl()->storage(), dtype, DimVector{n}, DimVector{1}, 0);
    return Tensor(std::move(impl));
  });
  // new sizes, strides and offset for t itself, no version bump and no dispatch: resize_'s
  // memory_format, a vmap BatchedTensor's metadata after an in-place view of its batch
  m.def("_set_geometry", [](const Tensor& t, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                            int64_t offset) {
    TP_CHECK(sizes.size() == strides.size(), "_set_geometry: one stride per dim");
    t.impl()->set_sizes_and_strides(DimVector(sizes.data(), sizes.size()),
                                    DimVector(strides.data(), strides.size()), offset);
  });
  m.def("_storage_resize_", [](const Tensor& t, size_t nbytes) { t.impl()->storage()->resize(nbytes); });
  m.def("_storage_resizable", [](const Tensor& t) { return t.impl()->storage()->resizable(); });
  m.def("_share_memory_", [](const Tensor& t) {
    if (t.device().type == DeviceType::CUDA) return;  // CUDA memory is shared already (IPC)
    share_memory(*t.impl()->storage());
  });
  m.def("_is_shared", [](const Tensor& t) {
    return t.device().type == DeviceType::CUDA || is_shared(*t.impl()->storage());
  });
  // (fd, nbytes) of t's storage, moved into shared memory first; the fd stays the storage's
  m.def("_share_fd", [](const Tensor& t) {
    share_memory(*t.impl()->storage());
    return nb::make_tuple(shared_fd(*t.impl()->storage()), t.impl()->storage()->nbytes());
  });
  // a uint8 tensor over the shared-memory file `fd` (the caller keeps and closes fd)
  m.def("_tensor_from_shared_fd", [](int fd, size_t nbytes) {
    auto storage = storage_from_shared_fd(fd, nbytes);
    const int64_t n = int64_t(storage->nbytes());
    return Tensor(make_intrusive<TensorImpl>(std::move(storage), DType::UInt8, DimVector{n}, DimVector{1}, 0));
  });
  m.def("_preserving_strides", [](const Tensor& t) {
    nb::list out;
    for (int64_t s : preserving_strides(t.sizes(), t.strides())) out.append(s);
    return out;
  });
  // Tensor subclasses (nn.Parameter): an instance of `cls` aliasing `data` (a detached
  // view of it), with requires_grad set.
  m.def("_make_subclass", [](nb::handle cls, const Tensor& data, bool requires_grad) {
    TP_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                  PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                                   reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr())),
                  "_make_subclass: cls must be a subclass of Tensor");
    Tensor alias = detach(data);
    if (requires_grad) {
      TP_CHECK(is_floating_or_complex(alias.dtype()),
               "Only Tensors of floating point and complex dtype can require gradients");
      alias.impl()->set_requires_grad(true);
    }
    nb::object obj = nb::inst_alloc(cls);
    new (nb::inst_ptr<Tensor>(obj)) Tensor(std::move(alias));
    nb::inst_mark_ready(obj);
    if (overrides_torch_dispatch(cls)) attach_subclass_state(obj);
    return obj;
  }, nb::arg("cls"), nb::arg("data"), nb::arg("requires_grad") = false);
  // Tensor._make_wrapper_subclass: an instance of `cls` with the given geometry and no data
  // of its own (a wrapper such as a logging or quantized-weight tensor keeps its data in
  // attributes and computes in __torch_dispatch__).
  m.def("_make_wrapper_subclass", [](nb::handle cls, IntList size, std::optional<IntList> strides,
                                     std::optional<int64_t> storage_offset, std::optional<DType> dtype,
                                     std::optional<DeviceArg> device, bool requires_grad) {
    TP_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                  PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                                   reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr())),
                  "_make_wrapper_subclass: cls must be a subclass of Tensor");
    DType dt = dtype.value_or(default_dtype());
    Device dev = device ? device->d : Device(DeviceType::CPU);
    DimVector st = strides ? strides->v : contiguous_strides(size.v);
    TP_CHECK(st.size() == size.v.size(), "_make_wrapper_subclass: ", size.v.size(),
             " sizes but ", st.size(), " strides");
    auto storage = make_intrusive<StorageImpl>(nullptr, 0, dev, nullptr, nullptr);
    Tensor t(make_intrusive<TensorImpl>(std::move(storage), dt, size.v, std::move(st),
                                        storage_offset.value_or(0)));
    if (requires_grad) {
      TP_CHECK(is_floating_or_complex(dt), "Only Tensors of floating point and complex dtype can require gradients");
      t.impl()->set_requires_grad(true);
    }
    nb::object obj = nb::inst_alloc(cls);
    new (nb::inst_ptr<Tensor>(obj)) Tensor(std::move(t));
    nb::inst_mark_ready(obj);
    attach_subclass_state(obj);
    return obj;
  }, nb::arg("cls"), nb::arg("size"), nb::arg("strides") = nb::none(),
     nb::arg("storage_offset") = nb::none(), nb::arg("dtype") = nb::none(),
     nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  // Tensor.__init__: builds tp.Tensor(2, 3) / tp.Tensor(data) (via _tensor_new); an instance
  // a subclass's __new__ made (_make_subclass, _make_wrapper_subclass) is complete already.
  cls.def("__init__", [](nb::handle self, nb::args args, nb::kwargs) {
    if (nb::inst_ready(self)) return;
    nb::object made = nb::module_::import_("tensorplay._C").attr("_tensor_new")(nb::type<Tensor>(), *args);
    new (nb::inst_ptr<Tensor>(self)) Tensor(nb::cast<Tensor>(made));
    nb::inst_mark_ready(self);
  });
  // Tensor.__new__: tp.Tensor(2, 3) is PyTorch's legacy constructor (an uninitialised tensor
  // of the default dtype), tp.Tensor(data) a copy of `data` in it; `cls` may be a subclass.
  m.def("_tensor_new", [](nb::handle cls, nb::args args) {
    Tensor t;
    bool sizes = true;
    for (nb::handle a : args) sizes &= PyLong_Check(a.ptr()) && !PyBool_Check(a.ptr());
    if (sizes) {
      DimVector v;
      for (nb::handle a : args) v.push_back(nb::cast<int64_t>(a));
      t = empty_tensor(v, default_dtype());
    } else {
      TP_CHECK_TYPE(args.size() == 1, "Tensor(): expected sizes or one sequence of data");
      nb::object made = nb::module_::import_("tensorplay").attr("tensor")(
          args[0], nb::arg("dtype") = nb::borrow(dtype_object(default_dtype())));
      t = nb::cast<Tensor>(made);
    }
    nb::object obj = nb::inst_alloc(cls);
    new (nb::inst_ptr<Tensor>(obj)) Tensor(std::move(t));
    nb::inst_mark_ready(obj);
    return obj;
  });
  // The tensor itself (no alias) as an instance of `cls` with attributes `attrs`: a result
  // an op just made, turned into a tensor subclass (fake tensors; Note [Fake tensors]).
  m.def("_as_subclass_inplace", [](const Tensor& t, nb::handle cls, nb::dict attrs) {
    TP_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                  PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                                   reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr())),
                  "_as_subclass_inplace: cls must be a subclass of Tensor");
    nb::object obj = nb::inst_alloc(cls);
    new (nb::inst_ptr<Tensor>(obj)) Tensor(t);
    nb::inst_mark_ready(obj);
    if (PyObject_GenericSetDict(obj.ptr(), attrs.ptr(), nullptr) < 0) throw nb::python_error();
    attach_subclass_state(obj);
    return obj;
  });
  // Tensor.as_subclass: an instance of `cls` sharing the tensor (and its autograd history).
  cls.def("as_subclass", [](const Tensor& self, nb::handle cls) {
    TP_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                  PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()),
                                   reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr())),
                  "as_subclass(): argument 'cls' must be a subclass of Tensor");
    nb::object obj = nb::inst_alloc(cls);
    new (nb::inst_ptr<Tensor>(obj)) Tensor(tp::view(self, self.sizes()));  // keeps the history
    nb::inst_mark_ready(obj);
    attach_subclass_state(obj);
    return obj;
  }, nb::arg("cls"));
  cls.def_prop_rw("data", [](const Tensor& t) { return detach(t); },
                  [](Tensor& t, const Tensor& src) { autograd::set_data(t, src); },
                  "The tensor's values without autograd history; assigning swaps them.");
  cls.def_prop_ro("shape", [](const Tensor& t) { return make_size(t.sizes()); })
      .def("size", [](const Tensor& t, nb::object dim) -> nb::object {
        if (dim.is_none()) return make_size(t.sizes());
        int64_t d = nb::cast<int64_t>(dim), n = t.dim();
        TP_CHECK_INDEX(d >= -std::max<int64_t>(n, 1) && d < std::max<int64_t>(n, 1),
                       "Dimension out of range (expected to be in range of [", -std::max<int64_t>(n, 1),
                       ", ", std::max<int64_t>(n, 1) - 1, "], but got ", d, ")");
        TP_CHECK_INDEX(n > 0, "dimension specified as ", d, " but tensor has no dimensions");
        return nb::int_(t.size(d < 0 ? d + n : d));
      }, nb::arg("dim") = nb::none())
      .def("stride", [](const Tensor& t, nb::object dim) -> nb::object {
        if (dim.is_none()) {
          nb::list l;
          for (int64_t s : t.strides()) l.append(s);
          return nb::tuple(l);
        }
        int64_t d = nb::cast<int64_t>(dim), n = t.dim();
        TP_CHECK_INDEX(n > 0 && d >= -n && d < n, "Dimension out of range (expected to be in range of [",
                       -std::max<int64_t>(n, 1), ", ", std::max<int64_t>(n, 1) - 1, "], but got ", d, ")");
        return nb::int_(t.stride(d < 0 ? d + n : d));
      }, nb::arg("dim") = nb::none())
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def_prop_ro("ndim", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); })
      .def_prop_ro("device", [](const Tensor& t) { return t.device(); })
      .def_prop_ro("is_cuda", [](const Tensor& t) { return t.device().is_cuda(); })
      .def_prop_ro("is_cpu", [](const Tensor& t) { return t.device().is_cpu(); })
      .def_prop_ro("is_meta", [](const Tensor& t) { return t.device().type == DeviceType::Meta; })
      .def("get_device", [](const Tensor& t) { return t.device().is_cpu() ? -1 : int(t.device().index); })
      .def("element_size", [](const Tensor& t) { return t.itemsize(); })
      .def_prop_ro("itemsize", [](const Tensor& t) { return t.itemsize(); })
      .def_prop_ro("nbytes", [](const Tensor& t) { return size_t(t.numel()) * t.itemsize(); })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); })
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t.dtype()); })
      .def("is_complex", [](const Tensor& t) { return is_complex(t.dtype()); })
      .def("is_conj", [](const Tensor& t) { return t.impl()->is_conj(); })
      .def("is_neg", [](const Tensor& t) { return t.impl()->is_neg(); })
      .def("is_signed", [](const Tensor& t) { return is_signed(t.dtype()); })
      .def("_is_contiguous", &Tensor::is_contiguous)
      .def("_is_non_overlapping_and_dense", [](const Tensor& t) { return t.impl()->is_non_overlapping_and_dense(); })
      .def_prop_ro("_version", [](const Tensor& t) { return t.impl()->version(); })
      .def_prop_ro("_storage_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.impl()->storage()->data()); })
      .def_prop_ro("_storage_nbytes", [](const Tensor& t) { return t.impl()->storage()->nbytes(); })
      .def_prop_ro("_is_wrapped_number", [](const Tensor& t) { return t.impl()->is_wrapped_number(); })
      .def_prop_rw("requires_grad", [](const Tensor& t) { return t.impl()->requires_grad(); },
                   [](Tensor& t, bool r) {
                     TP_CHECK(!r || is_floating_or_complex(t.dtype()),
                              "only Tensors of floating point and complex dtype can require gradients");
                     TP_CHECK(!r || !t.impl()->is_inference() || inference_mode_enabled(),
                              "Setting requires_grad=True on inference tensor outside "
                              "InferenceMode is not allowed.");
                     if (!autograd::is_leaf(t)) {
                       TP_CHECK(r, "you can only change requires_grad flags of leaf variables. If "
                                "you want to use a computed variable in a subgraph that doesn't "
                                "require differentiation use var_no_grad = var.detach().");
                       return;
                     }
                     t.impl()->set_requires_grad(r);
                   })
      .def("_as_strided", [](const Tensor& t, IntList sizes, IntList strides, int64_t offset) {
        return make_view(t, sizes.v, strides.v, offset);
      })
      .def("item", [](const Tensor& t) { return tensor_item(t); })
      .def("tolist", [](const Tensor& t) -> nb::object {
        Tensor h = t.impl()->math_bits() ? resolve_neg(resolve_conj(t)) : t;  // the values it reads as
        if (t.device().is_cuda()) {  // read through a host copy
          Tensor d = h;
          h = empty_tensor(t.sizes(), t.dtype(), Device(DeviceType::CPU));
          copy_impl(h, d, false, {});
        }
        TP_CHECK_KIND(ErrorKind::NotImplemented, t.device().type != DeviceType::Meta, "Cannot copy out of meta tensor; no data!");
        TP_CHECK(h.device().is_cpu(), "tolist: tensors on ", t.device().str(), " have no data");
        if (!h.data_ptr() && h.numel()) h.no_host_data();  // a wrapper subclass: no storage of its own
        return visit_dtype_with_complex(h.dtype(), [&](auto v) {
          using T = decltype(v);
          return nb::steal(to_list<T>(reinterpret_cast<const char*>(h.data<T>()), h.sizes(), h.strides(), 0));
        });
      })
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw nb::type_error("len() of a 0-d tensor");
        return t.size(0);
      })
      .def("__bool__", [](const Tensor& t) {
        check_single(t, "Boolean value of Tensor with more than one value is ambiguous");
        return nb::cast<bool>(nb::bool_(tensor_item(t)));
      })
      .def("__float__", [](const Tensor& t) {
        if (t.numel() != 1) throw nb::value_error("only one element tensors can be converted to Python scalars");
        return nb::cast<double>(nb::float_(tensor_item(t)));
      })
      .def("__int__", [](const Tensor& t) {
        if (t.numel() != 1) throw nb::value_error("only one element tensors can be converted to Python scalars");
        return nb::int_(tensor_item(t));
      })
      .def("__index__", [](const Tensor& t) {
        if (t.numel() != 1 || !is_integral(t.dtype(), true))
          throw nb::type_error("only integer tensors of a single element can be converted to an index");
        return nb::int_(tensor_item(t));
      })
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()) >> 4; });

  // Binary operator dunders with reflected and in-place forms.
#define TP_BINARY_DUNDER(name, fn)                                                           \
  cls.def("__" name "__", [](const Tensor& a, TensorArg b) { return fn(a, b.t); },           \
          nb::is_operator());                                                                \
  cls.def("__r" name "__", [](const Tensor& a, TensorArg b) { return fn(b.t, a); },          \
          nb::is_operator());                                                                \
  cls.def("__i" name "__", [](nb::handle self, TensorArg b) {                                \
    Tensor& a = nb::cast<Tensor&>(self);                                                     \
    fn##_(a, b.t);                                                                           \
    return self;                                                                             \
  }, nb::is_operator(), nb::rv_policy::reference);
  TP_BINARY_DUNDER("add", tp::add)
  TP_BINARY_DUNDER("sub", tp::sub)
  TP_BINARY_DUNDER("mul", tp::mul)
  TP_BINARY_DUNDER("truediv", tp::true_divide)
  TP_BINARY_DUNDER("floordiv", tp::floor_divide)
  TP_BINARY_DUNDER("mod", tp::remainder)
  TP_BINARY_DUNDER("and", tp::bitwise_and)
  TP_BINARY_DUNDER("or", tp::bitwise_or)
  TP_BINARY_DUNDER("xor", tp::bitwise_xor)
  TP_BINARY_DUNDER("lshift", tp::bitwise_left_shift)
  TP_BINARY_DUNDER("rshift", tp::bitwise_right_shift)
#undef TP_BINARY_DUNDER
  // Only tensors: `t @ 2` is a TypeError (nanobind answers NotImplemented).
  cls.def("__matmul__", [](const Tensor& a, const Tensor& b) { return tp::matmul(a, b); },
          nb::is_operator());
  cls.def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return tp::matmul(b, a); },
          nb::is_operator());
  cls.def("__pow__", [](const Tensor& a, TensorArg b) { return tp::pow(a, b.t); }, nb::is_operator());
  cls.def("__rpow__", [](const Tensor& a, Scalar b) { return tp::pow(b, a); }, nb::is_operator());
  cls.def("__ipow__", [](nb::handle self, TensorArg b) {
    tp::pow_(nb::cast<Tensor&>(self), b.t);
    return self;
  }, nb::is_operator(), nb::rv_policy::reference);
#define TP_COMPARE_DUNDER(name, fn) \
  cls.def("__" name "__", [](const Tensor& a, TensorArg b) { return fn(a, b.t); }, nb::is_operator());
  TP_COMPARE_DUNDER("eq", tp::eq)
  TP_COMPARE_DUNDER("ne", tp::ne)
  TP_COMPARE_DUNDER("lt", tp::lt)
  TP_COMPARE_DUNDER("le", tp::le)
  TP_COMPARE_DUNDER("gt", tp::gt)
  TP_COMPARE_DUNDER("ge", tp::ge)
#undef TP_COMPARE_DUNDER
  cls.def("__neg__", [](const Tensor& a) { return tp::neg(a); });
  cls.def("__abs__", [](const Tensor& a) { return tp::abs(a); });
  cls.def("__invert__", [](const Tensor& a) {
    if (is_floating(a.dtype()))
      throw nb::type_error("~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return tp::bitwise_not(a);
  });
  // Note [fill_ with a tensor value]
  // PyTorch's fill_.Tensor copies its 0-d value into self (copy_: any dtype, the value's
  // gradient, and the written-to tensor's overlap check: an expanded self raises "unsupported
  // operation: more than one element of the written-to tensor refers to a single memory
  // location"), where fill_.Scalar is idempotent and takes an expanded self. The generated
  // fill_(Scalar) binding would read a 0-d tensor as a number, so the tensor overload is
  // registered in front of it (both, for the method and for tp.fill_).
  // one binding (no overload resolution: fill_ with a number is a hot call)
  auto fill = [](nb::handle_t<Tensor> self_obj, nb::handle value) -> nb::handle {
    const Tensor& self = *nb::inst_ptr<Tensor>(self_obj);  // nanobind checked its type
    PyObject* v = value.ptr();
    if (PyFloat_Check(v) || PyLong_Check(v) || PyComplex_Check(v)) {  // the hot call first
      Scalar s;
      if (!scalar_from_python(v, s)) throw nb::type_error("fill_(): argument 'value' must be Number or Tensor");
      tp::fill_(self, s);
      return self_obj;
    }
    if (nb::isinstance<Tensor>(value)) {
      const Tensor& v = nb::cast<const Tensor&>(value);
      TP_CHECK(v.dim() == 0, "fill_: fill_ only supports 0-dimension value tensor but got tensor with ", v.dim(),
               " dimensions.");
      tp::copy_(self, v);
      return self_obj;
    }
    Scalar s;
    if (!scalar_from_python(value.ptr(), s))
      throw nb::type_error("fill_(): argument 'value' must be Number or Tensor");
    tp::fill_(self, s);
    return self_obj;
  };
  nb::delattr(cls, "fill_");
  cls.def("fill_", fill, nb::arg("value"), nb::rv_policy::reference, "Fills self with `value`.");
  nb::delattr(m, "fill_");
  m.def("fill_", fill, nb::arg("input"), nb::arg("value"), nb::rv_policy::reference, "Fills self with `value`.");
  cls.def("__pos__", [](const Tensor& a) {
    TP_CHECK(a.dtype() != DType::Bool, "The `+` operator, on a bool tensor is not supported.");
    return a;
  });
}

}  // namespace tp::python
