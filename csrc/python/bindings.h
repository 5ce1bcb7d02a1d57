// Shared pieces of the nanobind module: argument casters for numbers, dtypes, devices,
// sizes and "tensor or number" arguments, and the entry points of each binding file.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "core/generator.h"
#include "core/scalar.h"
#include "core/tensor_impl.h"

namespace nb = nanobind;

namespace tp::python {

/// A Tensor argument that also takes a Python number (wrapped as a 0-dim tensor).
struct TensorArg { Tensor t; };
/// A size argument: an int or a sequence of ints.
struct IntList { DimVector v; };
/// A device argument: a tp.device, a string or a CUDA ordinal.
struct DeviceArg { Device d; };
/// The Python object behind tp.float32 and friends.
struct DTypeObj { DType dt; };

/// The singleton Python object for `dt` (borrowed).
PyObject* dtype_object(DType dt);
/// Reads a Python number (or 1-element tensor) into a Scalar; false if `o` is none.
bool scalar_from_python(PyObject* o, Scalar& out);
/// Parses a sequence of ints (or one int) into `out`; false if it is not one.
bool int_list_from_python(PyObject* o, DimVector& out);
/// Sizes from *args: zeros(2, 3), zeros((2, 3)) and zeros([2, 3]).
DimVector size_from_args(nb::args args, const char* op);
/// `args`, or (kw[name],) when the sizes came as the keyword `name` (t.flip(dims=(0,))).
nb::args sizes_or_keyword(nb::args args, nb::kwargs kw, const char* name, const char* op);
/// PyTorch's out= overloads take tensors only: raises TypeError if `a` was a number.
void reject_number_with_out(const TensorArg& a, const char* op, const char* name, int pos);
/// `fields` as op's tp.return_types named tuple (registered from Python), else as is.
nb::object named_tuple(const char* op, nb::tuple fields);
/// A field of a tuple result: an undefined tensor (a gradient not asked for) is None.
template <class T>
nb::object result_field(T&& v) {
  if constexpr (std::is_same_v<std::decay_t<T>, Tensor>)
    if (!v.defined()) return nb::none();
  return nb::cast(std::forward<T>(v));
}
/// A tuple result as its tp.return_types named tuple.
template <class... Ts>
nb::object named_result(const char* op, std::tuple<Ts...> r) {
  return std::apply([op](auto&... t) { return named_tuple(op, nb::make_tuple(result_field(std::move(t))...)); }, r);
}
/// out= of a two-tensor op: copies `r` into the tensors of the sequence `out` (resized when
/// their shape differs; their dtypes must match) and returns them as the op's named tuple.
/// Raises PyTorch's TypeError unless `out` is a tuple (or list) of 2 Tensors.
void check_tuple_out(const char* op, nb::handle out);
nb::object tuple_out(const char* op, std::tuple<Tensor, Tensor> r, nb::handle out);
/// Python number for element 0 of `t`, by its dtype.
nb::object tensor_item(const Tensor& t);

/// Note [Tensor subclasses in C++]: what a tensor of a Python subclass keeps (its
/// TensorImpl::python_state), so it reaches Python again as an instance of that subclass
/// with the same attributes (the instance itself is not kept: that would be a reference
/// cycle through C++, invisible to Python's collector).
struct SubclassState {
  PyObject* type;  // strong
  PyObject* dict;  // strong: the instances' shared __dict__ (null if the type has none)
};
/// Gives `obj` (a fresh instance of a Tensor subclass) a SubclassState, and the Python
/// dispatch key when its type overrides __torch_dispatch__.
void attach_subclass_state(nb::handle obj);
/// An instance of the tensor's subclass sharing its attributes (a new reference).
PyObject* subclass_instance(const Tensor& t);
/// The Python type a tensor reaches Python as (its subclass, else tp.Tensor).
nb::handle python_type_of(const Tensor& t);
/// Tensor's tp_traverse (Note [Tensors and the cycle collector] in autograd.cpp).
int tensor_traverse(PyObject* self, visitproc visit, void* arg);
/// Hands a tensor object to the cycle collector (once it may close a cycle).
inline void gc_track(PyObject* o) {
  if (!PyObject_GC_IsTracked(o)) PyObject_GC_Track(o);
}
/// Whether a Tensor subclass overrides __torch_dispatch__ (so its tensors take the Python key).
bool overrides_torch_dispatch(nb::handle type);

/// Sets the Python error for a C++ exception (tp::Error by its kind, python_error restored).
void set_python_error(const std::exception_ptr& p);
/// The translation of tp::Error (and CUDA's out-of-memory) registered with nanobind.
void translate_error(const std::exception_ptr& p);

void bind_dispatch(nb::module_& m);
void bind_python_dispatch(nb::module_& m);
void bind_torch_function(nb::module_& m, nb::handle tensor_type);
void bind_generator(nb::module_& m);
void bind_philox_reference(nb::module_& m);
void bind_generated_ops(nb::module_& m, nb::class_<Tensor>& cls);
void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls);
void bind_creation(nb::module_& m);
void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls);
void bind_autograd(nb::module_& m, nb::class_<Tensor>& cls);
void bind_function(nb::module_& m);
void bind_cuda(nb::module_& m);
void bind_matmul_settings(nb::module_& m);
void bind_autocast(nb::module_& m);

}  // namespace tp::python

namespace nanobind::detail {

template <> struct type_caster<tp::Scalar> {
  NB_TYPE_CASTER(tp::Scalar, const_name("Number"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    return tp::python::scalar_from_python(src.ptr(), value);
  }
  static handle from_cpp(const tp::Scalar& s, rv_policy, cleanup_list*) noexcept {
    if (s.is_bool()) return PyBool_FromLong(s.to_bool());
    if (s.is_integral()) return PyLong_FromLongLong(s.to_int());
    return PyFloat_FromDouble(s.to_double());
  }
};

template <> struct type_caster<tp::DType> {
  NB_TYPE_CASTER(tp::DType, const_name("dtype"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    if (!nb::isinstance<tp::python::DTypeObj>(src)) return false;
    value = nb::inst_ptr<tp::python::DTypeObj>(src)->dt;
    return true;
  }
  static handle from_cpp(tp::DType dt, rv_policy, cleanup_list*) noexcept {
    PyObject* o = tp::python::dtype_object(dt);
    Py_INCREF(o);
    return o;
  }
};

template <> struct type_caster<tp::python::IntList> {
  NB_TYPE_CASTER(tp::python::IntList, const_name("Sequence[int]"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    return tp::python::int_list_from_python(src.ptr(), value.v);
  }
  static handle from_cpp(const tp::python::IntList&, rv_policy, cleanup_list*) noexcept {
    return nullptr;
  }
};

template <> struct type_caster<tp::python::DeviceArg> {
  NB_TYPE_CASTER(tp::python::DeviceArg, const_name("device"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cl) noexcept;
  static handle from_cpp(const tp::python::DeviceArg&, rv_policy, cleanup_list*) noexcept {
    return nullptr;
  }
};

// Tensors of a Python subclass (those with a SubclassState) come back as that subclass.
template <> struct type_caster<tp::Tensor> : type_caster_base<tp::Tensor> {
  template <typename T>
  NB_INLINE static handle from_cpp(T&& value, rv_policy policy, cleanup_list* cleanup) noexcept {
    const tp::Tensor* t;
    if constexpr (is_pointer_v<T>) t = value;
    else t = &value;
    if (t && t->defined() && t->impl()->python_state()) [[unlikely]]
      return tp::python::subclass_instance(*t);
    handle h = type_caster_base<tp::Tensor>::from_cpp(std::forward<T>(value), policy, cleanup);
    // a new object starts untracked (Note [Tensors and the cycle collector])
    if (h.ptr() && Py_REFCNT(h.ptr()) == 1) PyObject_GC_UnTrack(h.ptr());
    return h;
  }
};

template <> struct type_caster<tp::python::TensorArg> {
  NB_TYPE_CASTER(tp::python::TensorArg, const_name("Tensor | Number"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cl) noexcept;
  static handle from_cpp(const tp::python::TensorArg&, rv_policy, cleanup_list*) noexcept {
    return nullptr;
  }
};

}  // namespace nanobind::detail
