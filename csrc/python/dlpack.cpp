// DLPack exchange (__dlpack__, __dlpack_device__, from_dlpack): zero-copy with NumPy,
// PyTorch and anything else that speaks the protocol, legacy and versioned capsules.
#include <cstring>

#include "core/error.h"
#include "python/bindings.h"
#ifdef TP_USE_CUDA
#include "cuda/runtime.h"
#endif

namespace tp::python {

namespace {

// The DLPack ABI (v1.0), declared here from the specification.
struct DLDevice { int32_t device_type; int32_t device_id; };
struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion { uint32_t major; uint32_t minor; };
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };

DLDataType to_dl(DType dt) {
  uint8_t bits = uint8_t(element_size(dt) * 8);
  switch (dt) {
    case DType::Bool: return {kDLBool, 8, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::Float16: case DType::Float32: case DType::Float64: return {kDLFloat, bits, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
    case DType::Complex64: case DType::Complex128: return {kDLComplex, bits, 1};
    default: return {kDLInt, bits, 1};
  }
}

DType from_dl(DLDataType t) {
  TP_CHECK(t.lanes == 1, "from_dlpack: vector types (lanes=", t.lanes, ") are not supported");
  switch (t.code) {
    case kDLBool: return DType::Bool;
    case kDLUInt: if (t.bits == 8) return DType::UInt8; break;
    case kDLInt:
      if (t.bits == 8) return DType::Int8;
      if (t.bits == 16) return DType::Int16;
      if (t.bits == 32) return DType::Int32;
      if (t.bits == 64) return DType::Int64;
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::Float16;
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      break;
    case kDLBfloat: if (t.bits == 16) return DType::BFloat16; break;
    case kDLComplex:
      if (t.bits == 64) return DType::Complex64;
      if (t.bits == 128) return DType::Complex128;
      break;
  }
  TP_FAIL_NOT_IMPLEMENTED("from_dlpack: unsupported DLPack dtype (code ", int(t.code), ", bits ",
                          int(t.bits), ")");
}

// Keeps the tensor and the shape/stride arrays alive for the consumer.
struct ExportCtx {
  Tensor tensor;
  DimVector shape, strides;
};

template <class M>
M* make_managed(const Tensor& t) {
  auto* ctx = new ExportCtx{t, DimVector(t.sizes().data(), t.dim()), DimVector(t.strides().data(), t.dim())};
  auto* m = new M{};
  DLTensor& d = m->dl_tensor;
  // element 0's address with byte_offset 0, as PyTorch exports: consumers such as tvm-ffi's
  // TensorView::data_ptr() read `data` alone
  d.data = t.data_ptr();
  d.byte_offset = 0;
  d.device = t.device().is_cuda() ? DLDevice{kDLCUDA, std::max<int32_t>(0, t.device().index)}
                                  : DLDevice{kDLCPU, 0};
  d.ndim = int32_t(t.dim());
  d.dtype = to_dl(t.dtype());
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  m->manager_ctx = ctx;
  m->deleter = [](M* self) {
    delete static_cast<ExportCtx*>(self->manager_ctx);
    delete self;
  };
  return m;
}

template <class M>
void capsule_destructor(PyObject* cap, const char* name) {
  // Only a capsule nobody consumed still owns its tensor.
  if (!PyCapsule_IsValid(cap, name)) return;
  auto* m = static_cast<M*>(PyCapsule_GetPointer(cap, name));
  if (m && m->deleter) m->deleter(m);
}

template <class M>
Tensor import_managed(M* m) {
  DLTensor& d = m->dl_tensor;
  const bool on_gpu = d.device.device_type == kDLCUDA;
  TP_CHECK(d.device.device_type == kDLCPU || d.device.device_type == kDLCUDAHost || on_gpu,
           "from_dlpack: unsupported device type ", d.device.device_type,
           " (CPU, CUDA and CUDA host memory can be imported)");
#ifndef TP_USE_CUDA
  TP_CHECK(!on_gpu, "from_dlpack: a CUDA tensor needs a CUDA build of TensorPlay");
#endif
  const Device device = on_gpu ? Device(DeviceType::CUDA, d.device.device_id) : Device(DeviceType::CPU);
  DType dt = from_dl(d.dtype);
  DimVector shape(d.shape, size_t(d.ndim));
  DimVector strides = d.strides ? DimVector(d.strides, size_t(d.ndim)) : contiguous_strides(shape);
  int64_t es = int64_t(element_size(dt));
  int64_t extent = 1;
  bool empty = false;
  for (int32_t i = 0; i < d.ndim; ++i) {
    empty |= shape[i] == 0;
    extent += (shape[i] - 1) * strides[i];
  }
  char* base = static_cast<char*>(d.data) + d.byte_offset;
  auto storage = make_intrusive<StorageImpl>(
      base, empty ? 0 : size_t(extent * es), device,
      [](void* ctx, void*) {
        auto* mm = static_cast<M*>(ctx);
        if (mm->deleter) mm->deleter(mm);
      },
      m);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dt, std::move(shape), std::move(strides), 0));
}

// Note [DLPack exchange API]
// DLPack 1.2's C exchange API: a static table of C functions a consumer (tvm-ffi) reaches
// through the class attribute Tensor.__dlpack_c_exchange_api__ (a PyCapsule named
// "dlpack_exchange_api"). With it, a tvm-ffi function called with our tensors reads them in
// C (no __dlpack__ call, no capsule, no Python per argument), launches on our current CUDA
// stream (current_work_stream), and can have its outputs allocated by us. The "no_sync"
// functions do no stream synchronisation: the caller runs on the stream it asked for.
struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  DLPackExchangeAPIHeader* prev_api;
};
struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  int (*managed_tensor_allocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                  void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind, const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned* tensor, void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_current_stream);
};

Device device_of(const DLDevice& d) {
  if (d.device_type == kDLCUDA) return Device(DeviceType::CUDA, d.device_id);
  TP_CHECK(d.device_type == kDLCPU, "DLPack: unsupported device type ", d.device_type);
  return Device(DeviceType::CPU);
}

/// A Python object argument as our Tensor, else nullptr (with a Python TypeError set).
const Tensor* tensor_of(void* py_object) {
  nb::handle h(static_cast<PyObject*>(py_object));
  if (!nb::isinstance<Tensor>(h)) {
    PyErr_Format(PyExc_TypeError, "DLPack exchange: expected a tensorplay.Tensor, got %s",
                 Py_TYPE(h.ptr())->tp_name);
    return nullptr;
  }
  return nb::inst_ptr<Tensor>(h);
}

int exchange_allocate(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                      void (*set_error)(void*, const char*, const char*)) {
  try {
    DimVector shape(prototype->shape, size_t(prototype->ndim));
    Tensor t = empty_tensor(shape, from_dl(prototype->dtype), device_of(prototype->device));
    *out = make_managed<DLManagedTensorVersioned>(t);
    (*out)->version = {1, 0};
    (*out)->flags = 0;
    return 0;
  } catch (const std::exception& e) {
    set_error(error_ctx, "RuntimeError", e.what());
    *out = nullptr;
    return -1;
  }
}

/// PyTorch's refusal to export a conjugated or negated view (Note [Conjugate and negative
/// bits]): DLPack has no flag for them, so a consumer would read the storage's values.
const char* math_bit_refusal(const Tensor& t) {
  if (t.impl()->is_conj()) return "Can't export tensors with the conjugate bit set";
  if (t.impl()->is_neg()) return "Can't export tensors with the negative bit set";
  return nullptr;
}

int exchange_from_py(void* py_object, DLManagedTensorVersioned** out) {
  const Tensor* t = tensor_of(py_object);
  if (!t) return -1;
  if (const char* why = math_bit_refusal(*t)) {
    PyErr_SetString(PyExc_BufferError, why);
    return -1;
  }
  *out = make_managed<DLManagedTensorVersioned>(*t);
  (*out)->version = {1, 0};
  (*out)->flags = 0;
  return 0;
}

int exchange_to_py(DLManagedTensorVersioned* tensor, void** out_py_object) {
  try {
    *out_py_object = nb::cast(import_managed(tensor)).release().ptr();
    return 0;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return -1;
  }
}

int exchange_dltensor_from_py(void* py_object, DLTensor* out) {
  const Tensor* t = tensor_of(py_object);
  if (!t) return -1;
  if (const char* why = math_bit_refusal(*t)) {
    PyErr_SetString(PyExc_BufferError, why);
    return -1;
  }
  out->data = t->data_ptr();  // element 0, byte_offset 0 (see make_managed)
  out->byte_offset = 0;
  out->device = t->device().is_cuda() ? DLDevice{kDLCUDA, std::max<int32_t>(0, t->device().index)}
                                      : DLDevice{kDLCPU, 0};
  out->ndim = int32_t(t->dim());
  out->dtype = to_dl(t->dtype());
  // borrowed: the tensor (kept alive by the Python object) owns its sizes and strides
  out->shape = const_cast<int64_t*>(t->sizes().data());
  out->strides = const_cast<int64_t*>(t->strides().data());
  return 0;
}

int exchange_current_stream(int32_t device_type, int32_t device_id, void** out_current_stream) {
  *out_current_stream = nullptr;  // CPU: no stream
#ifdef TP_USE_CUDA
  if (device_type == kDLCUDA) {
    try {
      *out_current_stream = cuda::current_stream(device_id).handle;
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      return -1;
    }
  }
#else
  (void)device_type;
  (void)device_id;
#endif
  return 0;
}

constinit DLPackExchangeAPI g_exchange_api = {
    {{1, 2}, nullptr}, &exchange_allocate, &exchange_from_py, &exchange_to_py,
    &exchange_dltensor_from_py, &exchange_current_stream};

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.attr("__dlpack_c_exchange_api__") =
      nb::steal(PyCapsule_New(&g_exchange_api, "dlpack_exchange_api", nullptr));
  cls.def("__dlpack__", [](const Tensor& t, nb::handle stream, nb::handle max_version,
                           nb::handle dl_device, nb::handle copy) -> nb::object {
    (void)dl_device;
#ifdef TP_USE_CUDA
    // The consumer reads on `stream` (DLPack: 1 = the legacy default stream, 2 = the
    // per-thread default): it must see the work queued on ours so far.
    if (t.device().is_cuda() && !stream.is_none()) {
      const intptr_t h = nb::cast<intptr_t>(stream);
      TP_CHECK(h != 0, "__dlpack__: stream 0 is disallowed by the DLPack protocol for CUDA");
      const cuda::Stream ours = cuda::current_stream(t.device().index);
      const auto theirs = h == 1   ? cudaStreamLegacy
                          : h == 2 ? cudaStreamPerThread
                                   : reinterpret_cast<cudaStream_t>(h);
      const bool ours_legacy = ours.handle == nullptr || ours.handle == cudaStreamLegacy;
      if (h != -1 && !(ours_legacy && theirs == cudaStreamLegacy) && theirs != ours.handle) {
        cuda::Event e;
        e.record(ours);
        e.wait(cuda::Stream{theirs, t.device().index, 0});
      }
    }
#else
    (void)stream;
#endif
    if (const char* why = math_bit_refusal(t)) throw nb::buffer_error(why);
    TP_CHECK(copy.is_none() || !nb::cast<bool>(copy), "__dlpack__: copy=True is not supported");
    TP_CHECK(!t.impl()->requires_grad(), "Can't export tensors that require gradient, use tensor.detach()");
    bool versioned = !max_version.is_none() && nb::cast<int>(max_version[0]) >= 1;
    if (versioned) {
      auto* mt = make_managed<DLManagedTensorVersioned>(t);
      mt->version = {1, 0};
      mt->flags = 0;
      return nb::steal(PyCapsule_New(mt, "dltensor_versioned", [](PyObject* c) {
        capsule_destructor<DLManagedTensorVersioned>(c, "dltensor_versioned");
      }));
    }
    auto* mt = make_managed<DLManagedTensor>(t);
    return nb::steal(PyCapsule_New(mt, "dltensor", [](PyObject* c) {
      capsule_destructor<DLManagedTensor>(c, "dltensor");
    }));
  }, nb::kw_only(), nb::arg("stream").none() = nb::none(), nb::arg("max_version").none() = nb::none(),
     nb::arg("dl_device").none() = nb::none(), nb::arg("copy").none() = nb::none());

  cls.def("__dlpack_device__", [](const Tensor& t) {
    if (t.device().is_cuda()) return nb::make_tuple(int(kDLCUDA), std::max<int>(0, t.device().index));
    return nb::make_tuple(int(kDLCPU), 0);
  });

  m.def("_from_dlpack_capsule", [](nb::handle cap) {
    PyObject* c = cap.ptr();
    if (PyCapsule_IsValid(c, "dltensor_versioned")) {
      auto* mt = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
      TP_CHECK(mt->version.major == 1, "from_dlpack: unsupported DLPack version ", mt->version.major);
      Tensor t = import_managed(mt);
      PyCapsule_SetName(c, "used_dltensor_versioned");
      return t;
    }
    TP_CHECK(PyCapsule_IsValid(c, "dltensor"),
             "from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
             "consumed only once, so you might have already constructed a tensor from it once.");
    auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    Tensor t = import_managed(mt);
    PyCapsule_SetName(c, "used_dltensor");
    return t;
  });
}

}  // namespace tp::python
