// Reductions composed from the primitive ones: var/std (and *_mean), logsumexp,
// count_nonzero, nansum, nanmean. Composite kernels: they run wherever their parts do.
#include <cmath>

#include "core/error.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

/// Elements folded into each result of a reduction over `dim` (all dims when none/empty).
int64_t reduced_count(const Tensor& self, OptionalIntArrayRef dim) {
  if (!dim || dim->empty()) return self.numel();
  int64_t n = 1;
  for (int64_t d : *dim) n *= self.dim() ? self.size(wrap_dim(d, self.dim())) : 1;
  return n;
}

/// Note [Welford mean of an infinity]: PyTorch's CPU var_mean / std_mean take the mean from a
/// Welford pass over each slice in memory order. Once it meets an infinity the running mean is
/// infinite, and the next element makes it inf - inf = NaN; so the mean is NaN unless the
/// slice's only infinity is its last element in memory (and a plain mean's infinity otherwise).
/// Rewrites `m` (the plain mean) that way; only where some mean is infinite, so the pass over
/// the means is all the common path pays.
Tensor welford_mean(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, const Tensor& m) {
  if (!m.device().is_cpu() || (m.dtype() != DType::Float32 && m.dtype() != DType::Float64)) return m;
  Tensor mc = contiguous(m);
  bool any_inf = false;
  for (int64_t i = 0, n = mc.numel(); i < n && !any_inf; ++i)
    any_inf = std::isinf(mc.dtype() == DType::Float64 ? mc.data<double>()[i] : double(mc.data<float>()[i]));
  if (!any_inf) return m;
  // each element's storage offset, and which of them are last in their slice
  Tensor off = zeros(self.sizes(), DType::Int64);
  for (int64_t d = 0; d < self.dim(); ++d) {
    DimVector shape(size_t(self.dim()), 1);
    shape[size_t(d)] = self.size(d);
    Tensor axis = mul(arange(Scalar(int64_t(0)), Scalar(self.size(d)), Scalar(int64_t(1)), DType::Int64),
                      wrapped_scalar(Scalar(self.stride(d))));
    off = add(off, reshape(axis, IntArrayRef(shape.data(), shape.size())));
  }
  Tensor last = eq(off, amax(off, dim, /*keepdim=*/true));
  Tensor inf = isinf(self);
  Tensor count = sum(inf, dim, keepdim), at_last = sum(logical_and(inf, last), dim, keepdim);
  Tensor nan_here = logical_or(ge(count, wrapped_scalar(Scalar(int64_t(2)))), ne(count, at_last));
  return where(nan_here, wrapped_scalar(Scalar(std::nan(""))), m);
}

/// (variance, mean) with PyTorch's `correction` (divisor max(N - correction, 0)), or with
/// `take_sqrt` (standard deviation, mean). A float16 / bfloat16 input is reduced in float64
/// (float32 on CUDA) and each result rounded once, as PyTorch's Welford kernels accumulate
/// those types; reduced in float16, the mean, deviations and squares were each rounded.
std::tuple<Tensor, Tensor> var_and_mean(const char* op, const Tensor& self, OptionalIntArrayRef dim,
                                        double correction, bool keepdim, bool take_sqrt = false,
                                        bool with_mean = true) {
  if (is_complex(self.dtype())) {
    // a real variance (PyTorch's): the mean of |z - mean|^2, the squared moduli summed from
    // the parts; the mean stays complex
    Tensor mean_k = mean(self, dim, /*keepdim=*/true);
    Tensor dev = sub(self, mean_k);
    Tensor re = real(dev), im = imag(dev);
    Tensor ss = sum(add(mul(re, re), mul(im, im)), dim, keepdim);
    double divisor = std::max(0.0, double(reduced_count(self, dim)) - correction);
    Tensor var = div(ss, wrapped_scalar(Scalar(divisor)));
    Tensor m = !with_mean ? Tensor() : keepdim ? mean_k : mean(self, dim, false);
    return {take_sqrt ? sqrt(var) : var, m};
  }
  TP_CHECK(is_floating(self.dtype()), op, "(): input dtype should be either floating point or "
           "complex dtypes. Got ", dtype_scalar_name(self.dtype()), " instead.");
  const DType dt = self.dtype();
  if ((dt == DType::Float16 || dt == DType::BFloat16) && self.device().type != DeviceType::Meta) {
    const DType acc = self.device().is_cpu() ? DType::Float64 : DType::Float32;  // CUDA's: float
    auto [v, m] = var_and_mean(op, _to_dtype(self, acc), dim, correction, keepdim, take_sqrt, with_mean);
    return {_to_dtype(v, dt), with_mean ? _to_dtype(m, dt) : m};
  }
  Tensor mean_k = mean(self, dim, /*keepdim=*/true);
  Tensor dev = sub(self, mean_k);
  Tensor ss = sum(mul(dev, dev), dim, keepdim);
  double divisor = std::max(0.0, double(reduced_count(self, dim)) - correction);
  Tensor var = div(ss, wrapped_scalar(Scalar(divisor)));
  Tensor m = !with_mean ? Tensor() : welford_mean(self, dim, keepdim, keepdim ? mean_k : mean(self, dim, false));
  return {take_sqrt ? sqrt(var) : var, m};
}

double correction_of(const std::optional<Scalar>& correction) {
  return correction ? correction->to_double() : 1.0;
}

}  // namespace

Tensor var_impl(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction,
                bool keepdim, OutArg) {
  return std::get<0>(var_and_mean("var", self, dim, correction_of(correction), keepdim, false, /*with_mean=*/false));
}

Tensor std_impl(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction,
                bool keepdim, OutArg) {
  return std::get<0>(var_and_mean("std", self, dim, correction_of(correction), keepdim, /*take_sqrt=*/true,
                                  /*with_mean=*/false));
}

std::tuple<Tensor, Tensor> var_mean_impl(const Tensor& self, OptionalIntArrayRef dim,
                                         const std::optional<Scalar>& correction, bool keepdim,
                                         OutArg) {
  return var_and_mean("var_mean", self, dim, correction_of(correction), keepdim);
}

std::tuple<Tensor, Tensor> std_mean_impl(const Tensor& self, OptionalIntArrayRef dim,
                                         const std::optional<Scalar>& correction, bool keepdim,
                                         OutArg) {
  return var_and_mean("std_mean", self, dim, correction_of(correction), keepdim, /*take_sqrt=*/true);
}

// var/std and their *_mean forms with PyTorch's legacy `unbiased` flag (correction 1 or 0).

namespace {
std::optional<Scalar> correction_for(bool unbiased) { return Scalar(int64_t(unbiased ? 1 : 0)); }
}  // namespace

Tensor var_unbiased_impl(const Tensor& self, bool unbiased, OutArg out) {
  return var_impl(self, std::nullopt, correction_for(unbiased), false, out);
}

Tensor var_dim_unbiased_impl(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim,
                             OutArg out) {
  return var_impl(self, dim, correction_for(unbiased), keepdim, out);
}

Tensor std_unbiased_impl(const Tensor& self, bool unbiased, OutArg out) {
  return std_impl(self, std::nullopt, correction_for(unbiased), false, out);
}

Tensor std_dim_unbiased_impl(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim,
                             OutArg out) {
  return std_impl(self, dim, correction_for(unbiased), keepdim, out);
}

std::tuple<Tensor, Tensor> var_mean_unbiased_impl(const Tensor& self, bool unbiased, OutArg out) {
  return var_mean_impl(self, std::nullopt, correction_for(unbiased), false, out);
}

std::tuple<Tensor, Tensor> var_mean_dim_unbiased_impl(const Tensor& self, OptionalIntArrayRef dim,
                                                      bool unbiased, bool keepdim, OutArg out) {
  return var_mean_impl(self, dim, correction_for(unbiased), keepdim, out);
}

std::tuple<Tensor, Tensor> std_mean_unbiased_impl(const Tensor& self, bool unbiased, OutArg out) {
  return std_mean_impl(self, std::nullopt, correction_for(unbiased), false, out);
}

std::tuple<Tensor, Tensor> std_mean_dim_unbiased_impl(const Tensor& self, OptionalIntArrayRef dim,
                                                      bool unbiased, bool keepdim, OutArg out) {
  return std_mean_impl(self, dim, correction_for(unbiased), keepdim, out);
}

Tensor logsumexp_impl(const Tensor& self, IntArrayRef dim, bool keepdim, OutArg) {
  Tensor x = is_floating(self.dtype()) || is_complex(self.dtype()) ? self : _to_dtype(self, default_dtype());
  if (x.numel() == 0) return log(sum(exp(x), dim, keepdim));
  // Shift by the max so exp cannot overflow (a complex input by the max of its real parts,
  // as PyTorch); infinite maxima shift by 0 instead.
  Tensor m = amax(is_complex(x.dtype()) ? real(x) : x, dim, /*keepdim=*/true);
  m = where(isinf(m), wrapped_scalar(Scalar(0.0)), m);
  Tensor r = log(sum(exp(sub(x, m)), dim, keepdim));
  return add(r, keepdim ? m : _squeeze_dims(m, dim.empty() ? IntArrayRef() : dim));
}

Tensor count_nonzero_impl(const Tensor& self, OptionalIntArrayRef dim, OutArg) {
  return sum(ne(self, wrapped_scalar(Scalar(int64_t(0)))), dim, false);
}

Tensor nansum_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                   const std::optional<DType>& dtype, OutArg) {
  TP_CHECK(!is_complex(self.dtype()), "nansum on CPU does not support complex inputs");
  Tensor x = is_floating(self.dtype()) ? where(isnan(self), wrapped_scalar(Scalar(0.0)), self) : self;
  return sum(x, dim, keepdim, dtype);
}

Tensor nanmean_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                    const std::optional<DType>& dtype, OutArg) {
  TP_CHECK(is_floating(dtype.value_or(self.dtype())), "nanmean(): expected input to have floating "
           "point or complex dtype but got ", dtype_scalar_name(self.dtype()));
  Tensor valid = logical_not(isnan(self));
  return div(nansum_impl(self, dim, keepdim, dtype, {}), sum(valid, dim, keepdim));
}

// ---------------------------------------------------------------- closeness and differences

Tensor isclose_impl(const Tensor& self, const Tensor& other, double rtol, double atol,
                    bool equal_nan, OutArg) {
  TP_CHECK(self.dtype() == other.dtype(), dtype_scalar_name(self.dtype()), " did not match ",
           dtype_scalar_name(other.dtype()));
  TP_CHECK(rtol >= 0, "rtol must be greater than or equal to zero, but got ", rtol);
  TP_CHECK(atol >= 0, "atol must be greater than or equal to zero, but got ", atol);
  Tensor close = eq(self, other);  // also covers equal infinities
  if (equal_nan && is_floating(self.dtype()))
    close = logical_or(close, logical_and(isnan(self), isnan(other)));
  if (equal_nan && is_complex(self.dtype())) {  // a complex number is NaN if either part is
    auto nan = [](const Tensor& z) { return logical_or(isnan(real(z)), isnan(imag(z))); };
    close = logical_or(close, logical_and(nan(self), nan(other)));
  }
  // |a - b| <= atol + rtol * |b| (complex moduli), in float64 for integers (as PyTorch does)
  Tensor a = is_floating_or_complex(self.dtype()) ? self : _to_dtype(self, DType::Float64);
  Tensor b = is_floating_or_complex(other.dtype()) ? other : _to_dtype(other, DType::Float64);
  Tensor bound = add(mul(abs(b), wrapped_scalar(Scalar(rtol))), wrapped_scalar(Scalar(atol)));
  // a non-finite difference is never within the bound (|inf - -inf| <= inf), as in PyTorch
  Tensor err = abs(sub(a, b));
  return logical_or(close, logical_and(isfinite(err), le(err, bound)));
}

Tensor diff_impl(const Tensor& self, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
                 const std::optional<Tensor>& append, OutArg) {
  TP_CHECK(self.dim() >= 1, "diff expects input to be at least one-dimensional");
  TP_CHECK(n >= 0, "order must be non-negative but got ", n);
  int64_t d = wrap_dim(dim, self.dim());
  Tensor x = self;
  if (prepend || append) {
    std::vector<Tensor> parts;
    if (prepend) parts.push_back(*prepend);
    parts.push_back(self);
    if (append) parts.push_back(*append);
    x = cat(parts, d);
  }
  for (int64_t i = 0; i < n && x.size(d) > 0; ++i) {
    int64_t len = x.size(d) - 1;
    Tensor hi = narrow(x, d, 1, len), lo = narrow(x, d, 0, len);
    x = x.dtype() == DType::Bool ? logical_xor(hi, lo) : sub(hi, lo);
  }
  return x.is_same(self) ? clone(self) : x;
}

}  // namespace tp
