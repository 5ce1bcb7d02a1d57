// Factory ops: empty, empty_strided, zeros, ones, full, arange, linspace, logspace, eye.
#include <cmath>

#include "core/error.h"
#include "kernels/tensor_iterator.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

void check_not_bool(DType dt, const char* kernel) {
  if (dt == DType::Bool) TP_FAIL_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for 'Bool'");
}

Device device_or_cpu(const std::optional<Device>& d) {
  return d ? *d : Device(DeviceType::CPU);
}

/// PyTorch's checks of a factory's out=: an explicit dtype= or device= must be out's.
void check_factory_out(const std::optional<DType>& dtype, const std::optional<Device>& device,
                       OutArg out) {
  if (!out.tensor) return;
  const Tensor& o = *out.tensor;
  TP_CHECK(!dtype || *dtype == o.dtype(), "dtype ", dtype_scalar_name(*dtype),
           " does not match dtype of out parameter (", dtype_scalar_name(o.dtype()), ")");
  TP_CHECK(!device || device->type == o.device().type, "device type ",
           device_type_name(device->type), " does not match device type of out parameter (",
           device_type_name(o.device().type), ")");
}

/// The result tensor of a factory: `out` resized to `size`, or a new tensor.
Tensor factory_result(IntArrayRef size, DType dtype, const std::optional<Device>& device,
                      bool requires_grad, OutArg out) {
  if (out.tensor) {
    resize_out(*out.tensor, size);
    return *out.tensor;
  }
  Tensor t = empty_tensor(size, dtype, device_or_cpu(device));
  if (requires_grad) {
    TP_CHECK(is_floating_or_complex(dtype),
             "Only Tensors of floating point and complex dtype can require gradients");
    t.impl()->set_requires_grad(true);
  }
  return t;
}

/// Writes f(i) for i in [0, n) into the contiguous tensor `t`, computing in double.
template <class F>
void fill_indexed(const Tensor& t, int64_t n, F f) {
  visit_dtype(t.dtype(), [&](auto v) {
    using T = decltype(v);
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = T(f(i));
  });
}

/// Whether a factory call makes (or writes) a CUDA tensor.
bool wants_cuda(const std::optional<Device>& device, OutArg out) {
  return out.tensor ? out.tensor->device().is_cuda() : device && device->is_cuda();
}

/// A sequence factory on CUDA: `make(out)` computes the values on the host (into a CPU
/// tensor of out's dtype, or a new one), then they are copied to the device.
template <class F>
Tensor via_host(const std::optional<Device>& device, bool requires_grad, OutArg out, F make) {
  if (out.tensor) {
    int64_t zero[1] = {0};
    Tensor host = empty_tensor(zero, out.tensor->dtype());
    make(OutArg{&host, false});
    resize_out(*out.tensor, host.sizes());
    copy_impl(*out.tensor, host, false, {});
    return *out.tensor;
  }
  Tensor host = make(OutArg::none());
  Tensor t = factory_result(host.sizes(), host.dtype(), device, requires_grad, OutArg::none());
  copy_impl(t, host, false, {});
  t.impl()->storage()->reset_fresh_version();  // a new tensor is at version 0, as on the CPU
  return t;
}

}  // namespace

Tensor empty_impl(IntArrayRef size, const std::optional<DType>& dtype,
                  const std::optional<Device>& device, bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  return factory_result(size, dtype.value_or(default_dtype()), device, requires_grad, out);
}

Tensor empty_strided_impl(IntArrayRef size, IntArrayRef stride, const std::optional<DType>& dtype,
                          const std::optional<Device>& device, bool requires_grad, OutArg) {
  Tensor t = empty_strided_tensor(size, stride, dtype.value_or(default_dtype()),
                                  device_or_cpu(device));
  t.impl()->set_requires_grad(requires_grad);
  return t;
}

Tensor full_impl(IntArrayRef size, const Scalar& fill_value, const std::optional<DType>& dtype,
                 const std::optional<Device>& device, bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  DType dt = dtype ? *dtype
             : fill_value.is_bool() ? DType::Bool
             : fill_value.is_integral() ? DType::Int64
             : fill_value.is_complex() ? to_complex_dtype(default_dtype())
                                        : default_dtype();
  Tensor t = factory_result(size, dt, device, requires_grad, out);
  fill_impl(t, fill_value, OutArg{&t, true, out.tensor != nullptr});  // out= is a visible write
  return t;
}

Tensor zeros_impl(IntArrayRef size, const std::optional<DType>& dtype,
                  const std::optional<Device>& device, bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  // without dtype=, an out= keeps its own dtype
  DType dt = dtype ? *dtype : out.tensor ? out.tensor->dtype() : default_dtype();
  return full_impl(size, Scalar(int64_t(0)), dt, device, requires_grad, out);
}

Tensor ones_impl(IntArrayRef size, const std::optional<DType>& dtype,
                 const std::optional<Device>& device, bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  // without dtype=, an out= keeps its own dtype
  DType dt = dtype ? *dtype : out.tensor ? out.tensor->dtype() : default_dtype();
  return full_impl(size, Scalar(int64_t(1)), dt, device, requires_grad, out);
}

Tensor arange_impl(const Scalar& start, const Scalar& end, const Scalar& step,
                   const std::optional<DType>& dtype, const std::optional<Device>& device,
                   bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  if (wants_cuda(device, out))
    return via_host(device, requires_grad, out, [&](OutArg o) {
      return arange_impl(start, end, step, dtype, std::nullopt, false, o);
    });
  bool floating = start.is_floating() || end.is_floating() || step.is_floating();
  DType dt = dtype ? *dtype : floating ? default_dtype() : DType::Int64;
  check_not_bool(dt, "arange_cpu");
  double xs = start.to_double(), xe = end.to_double(), st = step.to_double();
  TP_CHECK(st != 0, "arange: step must be nonzero");
  TP_CHECK(std::isfinite(xs) && std::isfinite(xe), "arange: unsupported range: ", xs, " -> ", xe);
  TP_CHECK((st > 0 && xe >= xs) || (st < 0 && xe <= xs),
           "arange: upper bound and lower bound inconsistent with step sign");
  int64_t n;
  if (!floating && !dtype) {
    int64_t a = start.to_int(), b = end.to_int(), s = step.to_int();
    n = (b - a + s + (s > 0 ? -1 : 1)) / s;
  } else {
    n = int64_t(std::ceil((xe - xs) / st));
  }
  int64_t sz[1] = {n};
  Tensor t = factory_result(sz, dt, device, requires_grad, out);
  if (is_meta(t)) return t;
  if (is_integral(dt, false) && !floating) {
    int64_t a = start.to_int(), s = step.to_int();
    fill_indexed(t, n, [&](int64_t i) { return a + s * i; });
  } else {
    fill_indexed(t, n, [&](int64_t i) { return xs + st * double(i); });
  }
  return t;
}

namespace {

/// linspace's values (or base ** them, for logspace): halves computed from each end, as
/// PyTorch does, so both endpoints are exact; float32 results compute in float.
Tensor spaced(const char* kernel, const Scalar& start, const Scalar& end, int64_t steps,
              std::optional<double> base, const std::optional<DType>& dtype,
              const std::optional<Device>& device, bool requires_grad, OutArg out) {
  TP_CHECK(steps >= 0, "number of steps must be non-negative");
  // complex ends without a dtype give the default dtype's complex counterpart (PyTorch)
  const DType fallback = start.is_complex() || end.is_complex()
                             ? (default_dtype() == DType::Float64 ? DType::Complex128 : DType::Complex64)
                             : default_dtype();
  if (steps > 1) check_not_bool(dtype.value_or(fallback), kernel);
  int64_t sz[1] = {steps};
  Tensor t = factory_result(sz, dtype.value_or(fallback), device, requires_grad, out);
  if (steps == 0 || is_meta(t)) return t;
  if (is_complex(t.dtype())) {  // complex64 steps in complex<float> (logspace's powers in double)
    auto fill = [&](auto zero) {
      using C = decltype(zero);
      using R = typename C::value_type;
      const complex128_t s0 = start.to_complex(), s1 = end.to_complex();
      const C a(R(s0.re), R(s0.im)), b(R(s1.re), R(s1.im));
      const C step = steps > 1 ? (b - a) / C(R(steps - 1)) : C(0);
      const int64_t half = steps == 1 ? 1 : steps / 2;
      auto* p = t.data<Complex<R>>();
      for (int64_t i = 0; i < steps; ++i) {
        const C x = i < half ? a + step * C(R(i)) : b - step * C(R(steps - i - 1));
        if (!base) {
          p[i] = Complex<R>(x);
        } else {
          const std::complex<double> v = std::pow(std::complex<double>(*base), std::complex<double>(x));
          p[i] = Complex<R>(R(v.real()), R(v.imag()));
        }
      }
    };
    if (t.dtype() == DType::Complex128) fill(std::complex<double>{});
    else fill(std::complex<float>{});
    return t;
  }
  auto run = [&](auto zero) {
    using A = decltype(zero);
    A a = A(start.to_double()), b = A(end.to_double());
    A step = steps > 1 ? (b - a) / A(steps - 1) : A(0);
    int64_t half = steps == 1 ? 1 : steps / 2;  // one step is start (PyTorch fills it)
    fill_indexed(t, steps, [&](int64_t i) {
      A x = i < half ? a + step * A(i) : b - step * A(steps - i - 1);
      return base ? std::pow(A(*base), x) : x;
    });
  };
  if (t.dtype() == DType::Float64 || is_integral(t.dtype(), true)) run(double{});
  else run(float{});
  return t;
}

}  // namespace

Tensor linspace_impl(const Scalar& start, const Scalar& end, int64_t steps,
                     const std::optional<DType>& dtype, const std::optional<Device>& device,
                     bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  if (wants_cuda(device, out))
    return via_host(device, requires_grad, out, [&](OutArg o) {
      return linspace_impl(start, end, steps, dtype, std::nullopt, false, o);
    });
  return spaced("linspace_cpu", start, end, steps, std::nullopt, dtype, device, requires_grad, out);
}

Tensor logspace_impl(const Scalar& start, const Scalar& end, int64_t steps, double base,
                     const std::optional<DType>& dtype, const std::optional<Device>& device,
                     bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  if (wants_cuda(device, out))
    return via_host(device, requires_grad, out, [&](OutArg o) {
      return logspace_impl(start, end, steps, base, dtype, std::nullopt, false, o);
    });
  return spaced("logspace_cpu", start, end, steps, base, dtype, device, requires_grad, out);
}

Tensor eye_impl(int64_t n, const std::optional<int64_t>& m, const std::optional<DType>& dtype,
                const std::optional<Device>& device, bool requires_grad, OutArg out) {
  check_factory_out(dtype, device, out);
  if (wants_cuda(device, out))
    return via_host(device, requires_grad, out, [&](OutArg o) {
      return eye_impl(n, m, dtype, std::nullopt, false, o);
    });
  int64_t cols = m.value_or(n);
  TP_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TP_CHECK(cols >= 0, "m must be greater or equal to 0, got ", cols);
  int64_t sz[2] = {n, cols};
  Tensor t = factory_result(sz, dtype.value_or(default_dtype()), device, requires_grad, out);
  fill_impl(t, Scalar(int64_t(0)), OutArg{&t, true, out.tensor != nullptr});
  if (is_meta(t)) return t;
  int64_t k = std::min(n, cols);
  Tensor one = wrapped_scalar(Scalar(int64_t(1)));
  char* base = t.data_ptr();
  size_t es = t.itemsize();
  for (int64_t i = 0; i < k; ++i)
    cast_strided(one.data_ptr(), 0, DType::Int64, base + (i * t.stride(0) + i * t.stride(1)) * es,
                 0, t.dtype(), 1);
  return t;
}

}  // namespace tp
