// tensor(data) from nested Python sequences and numbers, and zero-copy wrapping of
// foreign buffers (NumPy arrays through their array interface).
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/tensor_iterator.h"
#include "ops/pointwise.h"
#include "python/bindings.h"
#include "tensorplay/ops_api.h"

namespace tp::python {

namespace {

enum class Kind { Bool = 0, Int = 1, Float = 2, Complex = 3 };

bool is_sequence(PyObject* o) {
  return PyList_Check(o) || PyTuple_Check(o) ||
         (!PyUnicode_Check(o) && !PyBytes_Check(o) && !nb::isinstance<Tensor>(o) &&
          PySequence_Check(o) && !PyIndex_Check(o) && PyObject_HasAttrString(o, "__len__"));
}

// Walks the first element of each level to find the shape.
void infer_shape(PyObject* o, DimVector& shape) {
  if (nb::isinstance<Tensor>(o)) {
    for (int64_t s : nb::inst_ptr<Tensor>(o)->sizes()) shape.push_back(s);
    return;
  }
  if (!is_sequence(o)) return;
  Py_ssize_t n = PySequence_Size(o);
  if (n < 0) throw nb::python_error();
  shape.push_back(n);
  if (n == 0) return;
  nb::object first = nb::steal(PySequence_GetItem(o, 0));
  infer_shape(first.ptr(), shape);
}

struct Leaves {
  std::vector<double> f;
  std::vector<int64_t> i;
  std::vector<double> im;  // imaginary parts, of the complex leaves (0 for the others)
  std::vector<uint8_t> kind;
  /// The promotion of every leaf's dtype (PyTorch's inference): a tensor's or a NumPy
  /// scalar's own dtype, bool, int64, or the default dtype for a Python float.
  DType dtype = DType::Undefined;
};

/// The dtype of a NumPy scalar (np.float64(1), np.int32(2), np.bool_(True)), if it is one
/// of ours; Undefined otherwise.
DType numpy_scalar_dtype(PyObject* o) {
  const char* type_name = Py_TYPE(o)->tp_name;
  if (std::strncmp(type_name, "numpy.", 6) != 0 || !PyObject_HasAttrString(o, "dtype"))
    return DType::Undefined;
  std::string name = nb::cast<std::string>(nb::handle(o).attr("dtype").attr("name"));
  static const std::pair<const char*, DType> known[] = {
      {"bool", DType::Bool},       {"uint8", DType::UInt8},     {"int8", DType::Int8},
      {"int16", DType::Int16},     {"int32", DType::Int32},     {"int64", DType::Int64},
      {"float16", DType::Float16}, {"float32", DType::Float32}, {"float64", DType::Float64},
      {"complex64", DType::Complex64}, {"complex128", DType::Complex128}};
  for (const auto& [n, dt] : known)
    if (name == n) return dt;
  return DType::Undefined;
}

void collect(PyObject* o, const DimVector& shape, size_t d, Leaves& out) {
  if (d == shape.size()) {
    Scalar s;
    if (nb::isinstance<Tensor>(o)) {
      const Tensor& t = *nb::inst_ptr<Tensor>(o);
      TP_CHECK_VALUE(t.numel() == 1, "only one element tensors can be converted to Python scalars");
    }
    if (!scalar_from_python(o, s))
      TP_CHECK_TYPE(false, "invalid data type '", Py_TYPE(o)->tp_name, "'");
    Kind k = s.is_bool() ? Kind::Bool : s.is_integral() ? Kind::Int : s.is_complex() ? Kind::Complex : Kind::Float;
    DType leaf = nb::isinstance<Tensor>(o) ? nb::inst_ptr<Tensor>(o)->dtype() : numpy_scalar_dtype(o);
    if (leaf == DType::Undefined)
      leaf = k == Kind::Bool ? DType::Bool : k == Kind::Int ? DType::Int64
           : k == Kind::Complex ? to_complex_dtype(default_dtype()) : default_dtype();
    out.dtype = out.dtype == DType::Undefined ? leaf : promote_types(out.dtype, leaf);
    out.kind.push_back(uint8_t(k));
    out.f.push_back(s.to_double());
    out.i.push_back(k == Kind::Float || k == Kind::Complex ? 0 : s.to_int());
    out.im.push_back(s.imag());
    return;
  }
  if (nb::isinstance<Tensor>(o) && d < shape.size()) {
    const Tensor& t = *nb::inst_ptr<Tensor>(o);
    TP_CHECK_VALUE(size_t(t.dim()) == shape.size() - d, "expected sequence of length ", shape[d],
                   " at dim ", d, " (got tensor)");
    nb::object l = nb::handle(o).attr("tolist")();
    collect(l.ptr(), shape, d, out);
    return;
  }
  TP_CHECK_VALUE(is_sequence(o), "expected sequence of length ", shape[d], " at dim ", d,
                 " (got ", Py_TYPE(o)->tp_name, ")");
  Py_ssize_t n = PySequence_Size(o);
  TP_CHECK_VALUE(n == shape[d], "expected sequence of length ", shape[d], " at dim ", d, " (got ", n, ")");
  for (Py_ssize_t k = 0; k < n; ++k) {
    nb::object item = nb::steal(PySequence_GetItem(o, k));
    collect(item.ptr(), shape, d + 1, out);
  }
}

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype) {
  if (nb::isinstance<Tensor>(data)) {
    const Tensor& src = *nb::inst_ptr<Tensor>(data);
    Tensor out = empty_tensor(src.sizes(), dtype.value_or(src.dtype()), src.device());
    copy_(out, src);
    return out;
  }
  DimVector shape;
  infer_shape(data.ptr(), shape);
  Leaves leaves;
  collect(data.ptr(), shape, 0, leaves);
  DType inferred = leaves.kind.empty() ? default_dtype() : leaves.dtype;
  DType dt = dtype.value_or(inferred);
  Tensor out = empty_tensor(shape, dt);
  size_t n = leaves.kind.size();
  char* dst = out.data_ptr();
  size_t es = element_size(dt);
  for (size_t k = 0; k < n; ++k) {
    if (leaves.kind[k] == uint8_t(Kind::Complex)) {
      complex128_t c(leaves.f[k], leaves.im[k]);
      cast_strided(reinterpret_cast<const char*>(&c), 0, DType::Complex128, dst + k * es, 0, dt, 1);
    } else if (leaves.kind[k] == uint8_t(Kind::Float))
      cast_strided(reinterpret_cast<const char*>(&leaves.f[k]), 0, DType::Float64, dst + k * es, 0, dt, 1);
    else
      cast_strided(reinterpret_cast<const char*>(&leaves.i[k]), 0, DType::Int64, dst + k * es, 0, dt, 1);
  }
  return out;
}

void release_pyobject(void* ctx, void*) {
  nb::gil_scoped_acquire gil;
  Py_DECREF(static_cast<PyObject*>(ctx));
}

}  // namespace

void bind_creation(nb::module_& m) {
  // `op` names the public function in errors (tensor, as_tensor, asarray).
  m.def("_tensor", [](nb::handle data, std::optional<DType> dtype, std::optional<DeviceArg> device,
                      bool requires_grad, const char* op) {
    Tensor t;
    try {
      t = tensor_from_data(data, dtype);
    } catch (Error& e) {
      e.name_op(op);
      throw;
    }
    if (device && device->d.type == DeviceType::Meta) {
      t = empty_tensor(t.sizes(), t.dtype(), device->d);  // the data's shape and dtype only
    } else {
#ifdef TP_USE_CUDA
      if (device && device->d.is_cuda()) {  // built on the host, then copied over
        Tensor d = empty_tensor(t.sizes(), t.dtype(), device->d);
        copy_impl(d, t, false, {});
        t = d;
      }
      TP_CHECK(!device || device->d.is_cpu() || device->d.is_cuda(), "tensor: device '",
               device->d.str(), "' is not supported");
#else
      TP_CHECK(!device || device->d.is_cpu(), "tensor: device '", device ? device->d.str() : "",
               "' arrives with the CUDA backend");
#endif
    }
    if (requires_grad) {
      TP_CHECK(is_floating_or_complex(t.dtype()),
               "Only Tensors of floating point and complex dtype can require gradients");
      t.impl()->set_requires_grad(true);
    }
    return t;
  }, nb::arg("data"), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
     nb::arg("requires_grad") = false, nb::arg("op") = "tensor");

  // Wraps memory owned by `owner` (kept alive while the storage lives).
  m.def("_from_buffer", [](uintptr_t ptr, IntList shape, IntList byte_strides, DType dtype,
                           nb::handle owner) {
    int64_t es = int64_t(element_size(dtype));
    DimVector strides(shape.v.size());
    int64_t extent = 1;
    bool empty = false;
    for (size_t i = 0; i < shape.v.size(); ++i) {
      TP_CHECK_VALUE(byte_strides.v[i] % es == 0, "from_numpy: strides must be a multiple of the element size");
      strides[i] = byte_strides.v[i] / es;
      empty |= shape.v[i] == 0;
      extent += (shape.v[i] - 1) * strides[i];
    }
    size_t nbytes = empty ? 0 : size_t(extent) * size_t(es);
    Py_INCREF(owner.ptr());
    auto storage = make_intrusive<StorageImpl>(reinterpret_cast<void*>(ptr), nbytes,
                                               Device(DeviceType::CPU), &release_pyobject, owner.ptr());
    return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, shape.v, strides, 0));
  });
}

}  // namespace tp::python
