// Hand-written parts of csrc/ops/special.yaml: argument checks, the composites PyTorch
// also composes (mvlgamma, ndtr, ldexp, float_power) and frexp's two outputs.
#include <cmath>

#include "core/error.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

bool is_half(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }

/// PyTorch's CPU kernels of these ops have no float16/bfloat16 instance: NotImplementedError
/// naming the kernel (`<name>_cpu`) and the promoted dtype. Meta tensors reach no kernel there
/// (a float16 meta input gives a float16 meta result).
void no_half(const char* name, std::initializer_list<const Tensor*> inputs, bool int_to_float) {
  for (const Tensor* t : inputs)
    if (is_meta(*t)) return;
  DType dt = result_type(inputs);
  if (int_to_float && !is_floating(dt)) dt = default_dtype();
  if (is_half(dt))
    TP_FAIL_NOT_IMPLEMENTED("\"", name, "_cpu\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// The result of a composite written into out= (resized, dtype cast checked) or self.
Tensor write_result(OutArg out, const Tensor& res, const char* name) {
  if (!out.tensor) return res;
  TP_CHECK(can_cast(res.dtype(), out.tensor->dtype()), name, ": result type ",
           dtype_scalar_name(res.dtype()), " can't be cast to the desired output type ",
           dtype_scalar_name(out.tensor->dtype()));
  if (!out.inplace) resize_out(*out.tensor, res.sizes());
  copy_(*out.tensor, res);
  return *out.tensor;
}

}  // namespace

// ------------------------------------------------------------------ checks
void check_polygamma(int64_t n, const Tensor&) {
  TP_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
}
void check_zeta(const Tensor& self, const Tensor& other) { no_half("zeta", {&self, &other}, true); }
void check_erfcx(const Tensor& self) { no_half("erfcx", {&self}, true); }
void check_ndtri(const Tensor& self) { no_half("ndtri", {&self}, true); }
void check_log_ndtr(const Tensor& self) { no_half("log_ndtr", {&self}, true); }
void check_bessel_j0(const Tensor& self) { no_half("bessel_j0", {&self}, true); }
void check_bessel_j1(const Tensor& self) { no_half("bessel_j1", {&self}, true); }
void check_airy_ai(const Tensor& x) { no_half("airy_ai", {&x}, true); }
void check_bessel_y0(const Tensor& self) { no_half("bessel_y0", {&self}, true); }
void check_bessel_y1(const Tensor& self) { no_half("bessel_y1", {&self}, true); }
void check_modified_bessel_i0(const Tensor& self) { no_half("modified_bessel_i0", {&self}, true); }
void check_modified_bessel_i1(const Tensor& self) { no_half("modified_bessel_i1", {&self}, true); }
void check_modified_bessel_k0(const Tensor& self) { no_half("modified_bessel_k0", {&self}, true); }
void check_modified_bessel_k1(const Tensor& self) { no_half("modified_bessel_k1", {&self}, true); }
void check_scaled_modified_bessel_k0(const Tensor& x) { no_half("scaled_modified_bessel_k0", {&x}, true); }
void check_scaled_modified_bessel_k1(const Tensor& x) { no_half("scaled_modified_bessel_k1", {&x}, true); }
void check_spherical_bessel_j0(const Tensor& x) { no_half("spherical_bessel_j0", {&x}, true); }
void check_chebyshev_polynomial_t(const Tensor& x, const Tensor& n) { no_half("chebyshev_polynomial_t", {&x, &n}, true); }
void check_chebyshev_polynomial_u(const Tensor& x, const Tensor& n) { no_half("chebyshev_polynomial_u", {&x, &n}, true); }
void check_chebyshev_polynomial_v(const Tensor& x, const Tensor& n) { no_half("chebyshev_polynomial_v", {&x, &n}, true); }
void check_chebyshev_polynomial_w(const Tensor& x, const Tensor& n) { no_half("chebyshev_polynomial_w", {&x, &n}, true); }
void check_shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n) { no_half("shifted_chebyshev_polynomial_t", {&x, &n}, true); }
void check_shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n) { no_half("shifted_chebyshev_polynomial_u", {&x, &n}, true); }
void check_shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n) { no_half("shifted_chebyshev_polynomial_v", {&x, &n}, true); }
void check_shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n) { no_half("shifted_chebyshev_polynomial_w", {&x, &n}, true); }
void check_hermite_polynomial_h(const Tensor& x, const Tensor& n) { no_half("hermite_polynomial_h", {&x, &n}, true); }
void check_hermite_polynomial_he(const Tensor& x, const Tensor& n) { no_half("hermite_polynomial_he", {&x, &n}, true); }
void check_laguerre_polynomial_l(const Tensor& x, const Tensor& n) { no_half("laguerre_polynomial_l", {&x, &n}, true); }
void check_legendre_polynomial_p(const Tensor& x, const Tensor& n) { no_half("legendre_polynomial_p", {&x, &n}, true); }
void check_heaviside(const Tensor& self, const Tensor& values, OutArg out) {  // out='s dtype too
  TP_CHECK(self.dtype() == values.dtype() && (!out.tensor || out.tensor->dtype() == self.dtype()),
           "heaviside is not yet implemented for tensors with different dtypes.");
}
void check_standard_gamma_grad(const Tensor& self, const Tensor& output) {
  TP_CHECK(self.dtype() == output.dtype(), "Found dtype ", dtype_scalar_name(output.dtype()),
           " but expected ", dtype_scalar_name(self.dtype()));
  no_half("_standard_gamma_grad", {&self}, false);
}
void check_dirichlet_grad(const Tensor& x, const Tensor& alpha, const Tensor& total) {
  TP_CHECK(x.dtype() == alpha.dtype() && x.dtype() == total.dtype(), "Found dtype ",
           dtype_scalar_name(alpha.dtype() != x.dtype() ? alpha.dtype() : total.dtype()),
           " but expected ", dtype_scalar_name(x.dtype()));
  no_half("_dirichlet_grad", {&x}, false);
}

int64_t nextafter_mode(const Tensor& self, const Tensor& other) {
  DType dt = result_type({&self, &other});
  return dt == DType::Float16 ? 1 : dt == DType::BFloat16 ? 2 : 0;
}

// ------------------------------------------------------------------ composites
Tensor mvlgamma_impl(const Tensor& self, int64_t p, OutArg out) {
  TP_CHECK(self.dtype() != DType::Bool, "The input tensor may not be a boolean tensor.");
  if (is_complex(self.dtype()))  // PyTorch's composition fails in arange for complex too
    TP_FAIL_NOT_IMPLEMENTED("mvlgamma: not implemented for '", dtype_scalar_name(self.dtype()), "'");
  TP_CHECK(p >= 1, "p has to be greater than or equal to 1");
  // PyTorch's composition: lgamma(x + [-(p-1)/2, ..., -1/2, 0]) summed, + p(p-1)/4 log(pi)
  Tensor x = is_floating(self.dtype()) ? self : _to_dtype(self, default_dtype(), false);
  Tensor offsets = arange(Scalar(-double(p) / 2 + 0.5), Scalar(0.5), Scalar(0.5), x.dtype(), x.device());
  Tensor args = add(offsets, unsqueeze(x, -1));
  Tensor res = add(sum(lgamma(args), IntArrayRef({-1})),
                   wrapped_scalar(Scalar(double(p * (p - 1)) * std::log(3.14159265358979323846) * 0.25)));
  if (out.inplace) {
    TP_CHECK(can_cast(res.dtype(), out.tensor->dtype()), "mvlgamma: result type ",
             dtype_scalar_name(out.tensor->dtype()), " can't be cast to the desired output type ",
             dtype_scalar_name(res.dtype()));
  }
  return write_result(out, res, "mvlgamma");
}

Tensor special_ndtr_impl(const Tensor& self, OutArg out) {
  // PyTorch's composition (so the lower tail underflows where its does)
  Tensor res = mul(add(erf(mul(self, wrapped_scalar(Scalar(0.70710678118654752440)))),
                       wrapped_scalar(Scalar(int64_t(1)))),
                   wrapped_scalar(Scalar(0.5)));
  return write_result(out, res, "special_ndtr");
}

Tensor ldexp_impl(const Tensor& self, const Tensor& other, OutArg out) {
  if (is_floating(self.dtype()) && !is_floating_or_complex(other.dtype())) {
    // PyTorch's ldexp kernel: x * 2^n in self's dtype, computed in double (exact there)
    if (other.dtype() == DType::Bool)
      TP_FAIL_NOT_IMPLEMENTED("\"ldexp_cpu_exp\" not implemented for 'Bool'");
    Tensor res = _to_dtype(mul(_to_dtype(self, DType::Float64, false),
                               pow(Scalar(2.0), _to_dtype(other, DType::Float64, false))),
                           self.dtype(), false);
    return write_result(out, res, "ldexp");
  }
  // a complex input: PyTorch's 2 ** other is a complex power, in the complex counterpart of
  // a floating exponent's dtype (of the input's for an integer one), so ours is too
  const DType wide = other.dtype() == DType::Float64 ? DType::Complex128
                     : is_floating(other.dtype())    ? DType::Complex64
                                                     : self.dtype();
  Tensor scale = is_complex(self.dtype()) && !is_complex(other.dtype())
                     ? pow(Scalar(2.0), _to_dtype(other, wide, false))
                     : pow(Scalar(2.0), other);
  if (!out.tensor) return mul(self, scale);
  Tensor& target = const_cast<Tensor&>(*out.tensor);
  if (out.inplace) return mul_(target, scale);
  return mul_out(target, self, scale);
}

Tensor float_power_impl(const Tensor& self, const Tensor& exponent, OutArg out) {
  // double precision: complex128 where either operand is complex, else float64
  const DType wide = is_complex(self.dtype()) || is_complex(exponent.dtype()) ? DType::Complex128
                                                                              : DType::Float64;
  if (out.tensor) {
    TP_CHECK(out.tensor->dtype() == wide, "the ",
             out.inplace ? "base given to float_power_" : "output given to float_power", " has dtype ",
             dtype_scalar_name(out.tensor->dtype()), " but the operation's result requires dtype ",
             dtype_scalar_name(wide));
  }
  auto widen = [wide](const Tensor& t) {
    if (t.dtype() == wide) return t;
    Tensor w = _to_dtype(t, wide, false);
    if (t.impl()->is_wrapped_number()) w.impl()->set_wrapped_number(true);
    return w;
  };
  Tensor res = pow(widen(self), widen(exponent));
  return write_result(out, res, "float_power");
}

Tensor signbit_impl(const Tensor& self, OutArg out) {
  if (out.tensor)
    TP_CHECK(out.tensor->dtype() == DType::Bool, "signbit does not support non-boolean outputs.");
  return run_pointwise(PwKernel::Signbit, {"signbit", Promote::BoolOutOnly}, out, {&self}, {});
}

// The reparameterised gradients: pointwise kernels on CPU and CUDA; no meta kernel (PyTorch
// has none either).
Tensor standard_gamma_grad_impl(const Tensor& self, const Tensor& output, OutArg out) {
  check_standard_gamma_grad(self, output);
  // contiguous, as PyTorch's (its result is a fresh tensor of self's sizes)
  return contiguous(run_pointwise(PwKernel::StandardGammaGrad, {"_standard_gamma_grad", Promote::Common},
                                  out, {&self, &output}, {}));
}

Tensor dirichlet_grad_impl(const Tensor& x, const Tensor& alpha, const Tensor& total, OutArg out) {
  check_dirichlet_grad(x, alpha, total);
  return contiguous(run_pointwise(PwKernel::DirichletGrad, {"_dirichlet_grad", Promote::Common}, out,
                                  {&x, &alpha, &total}, {}));
}

// ------------------------------------------------------------------ frexp
std::tuple<Tensor, Tensor> frexp_impl(const Tensor& self, OutArg) {
  TP_CHECK(is_floating(self.dtype()), "torch.frexp() only supports floating-point dtypes");
  IterConfig cfg{"frexp", Promote::Common};
  Tensor mantissa = run_pointwise(PwKernel::FrexpMantissa, cfg, OutArg::none(), {&self}, {});
  Tensor exponent = run_pointwise(PwKernel::FrexpExponent, cfg, OutArg::none(), {&self}, {});
  return {mantissa, _to_dtype(exponent, DType::Int32, false)};
}

}  // namespace tp
