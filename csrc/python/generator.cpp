// tp.Generator: a handle to a CPU generator (csrc/random/cpu_generator.h) or a CUDA one
// (csrc/cuda/generator.h), and the default generators behind tp.manual_seed and friends.
#include <cstring>

#include "core/error.h"
#include "python/bindings.h"
#include "random/cpu_generator.h"
#ifdef TP_USE_CUDA
#include "cuda/generator.h"
#include "cuda/random.h"
#include "cuda/runtime.h"
#endif

namespace tp::python {

namespace {

/// A seed as PyTorch reads it: any int in [-2^63, 2^64); negatives wrap to 64 bits.
uint64_t seed_from_python(nb::handle o) {
  if (!PyLong_Check(o.ptr()) || PyBool_Check(o.ptr()))
    throw nb::type_error(("manual_seed expected a long, but got " +
                          std::string(Py_TYPE(o.ptr())->tp_name)).c_str());
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
  if (overflow == 0) return uint64_t(v);
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(o.ptr());
    if (!PyErr_Occurred()) return uint64_t(u);
    PyErr_Clear();
  }
  throw nb::value_error("Overflow when unpacking long long");
}

/// A new generator of device d: PyTorch's default seed (and offset 0 on CUDA).
Generator new_generator(const Device& d) {
  if (d.is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::lazy_init();
    const int idx = d.index < 0 ? cuda::current_device() : d.index;
    TP_CHECK(idx < cuda::device_count(), "The device_index is invalid.");
    return Generator(make_intrusive<cuda::CUDAGenerator>(idx));
#else
    TP_FAIL("Cannot get CUDA generator: TensorPlay was built without CUDA support");
#endif
  }
  TP_CHECK(d.is_cpu(), "Generator: no ", d.str(), " generator (only 'cpu' and 'cuda')");
  return Generator(make_intrusive<random::CPUGenerator>());
}

}  // namespace

void bind_generator(nb::module_& m) {
  nb::class_<Generator>(m, "Generator", "A stream of random numbers: tp.Generator(device='cpu').")
      .def("__init__", [](Generator* self, std::optional<DeviceArg> device) {
        new (self) Generator(new_generator(device ? device->d : Device(DeviceType::CPU)));
      }, nb::arg("device").none() = nb::none())
      .def_prop_ro("device", [](const Generator& g) { return g->device(); })
      .def("manual_seed", [](nb::handle self, nb::handle seed) {
        Generator& g = nb::cast<Generator&>(self);
        uint64_t s = seed_from_python(seed);
        std::lock_guard<std::mutex> lock(g->mutex);
        g->set_current_seed(s);
        return self;
      }, nb::arg("seed"), "Restarts the stream from `seed`; returns the generator.",
         nb::rv_policy::reference)
      .def("seed", [](Generator& g) {
        std::lock_guard<std::mutex> lock(g->mutex);
        return g->seed();
      }, "Seeds from a nondeterministic source; returns the seed.")
      .def("initial_seed", [](const Generator& g) { return g->current_seed(); },
           "The seed the stream started from.")
      .def("get_state", [](const Generator& g) {
        std::lock_guard<std::mutex> lock(g->mutex);
        return g->get_state();
      }, "The state as a uint8 tensor, PyTorch's layout: 5056 bytes on the CPU, 16 on CUDA "
         "(seed, offset).")
      .def("set_state", [](nb::handle self, const Tensor& state) {
        Generator& g = nb::cast<Generator&>(self);
        std::lock_guard<std::mutex> lock(g->mutex);
        g->set_state(state);
        return self;
      }, nb::arg("new_state"), "Restores a state from get_state (or torch's); returns the generator.",
         nb::rv_policy::reference)
      .def("clone_state", [](const Generator& g) {
        std::lock_guard<std::mutex> lock(g->mutex);
        return Generator(g->clone());
      }, "A new generator in this one's state.")
      .def("__getstate__", [](const Generator& g) {
        std::lock_guard<std::mutex> lock(g->mutex);
        Tensor s = g->get_state();
        return nb::make_tuple(g->device().str(), nb::bytes(s.data_ptr(), size_t(s.numel())));
      })
      .def("__setstate__", [](Generator* self, nb::tuple st) {
        new (self) Generator(new_generator(Device::parse(nb::cast<std::string>(st[0]))));
        nb::bytes b = nb::cast<nb::bytes>(st[1]);
        const int64_t size[1] = {int64_t(b.size())};
        Tensor s = empty_tensor(size, DType::UInt8);
        std::memcpy(s.data_ptr(), b.c_str(), b.size());
        (*self)->set_state(s);
      })
      .def("__eq__", [](const Generator& a, const Generator& b) { return a == b; }, nb::is_operator())
      .def("__hash__", [](const Generator& g) { return reinterpret_cast<uintptr_t>(g.impl()); });
  m.def("_default_cpu_generator", [] { return random::default_cpu_generator_handle(); },
        "The default CPU generator (tp.default_generator).");
#ifdef TP_USE_CUDA
  m.def("_cuda_default_generator", [](int device) { return cuda::default_generator_handle(device); },
        "The default generator of a GPU (tp.cuda.default_generators[device]).");
  m.def("_cuda_set_philox_grid_limit", [](int blocks) { cuda::set_philox_grid_limit(blocks); },
        "Test hook: caps the grid of the random kernels (0: default); values never change.");
#endif
}

}  // namespace tp::python
