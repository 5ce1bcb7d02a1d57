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

/// (variance, mean) with PyTorch's `correction` (divisor max(N - correction, 0)).
std::tuple<Tensor, Tensor> var_and_mean(const char* op, const Tensor& self, OptionalIntArrayRef dim,
                                        double correction, bool keepdim) {
  TP_CHECK(is_floating(self.dtype()), op, "(): input dtype should be either floating point or "
           "complex dtypes. Got ", dtype_scalar_name(self.dtype()), " instead.");
  Tensor mean_k = mean(self, dim, /*keepdim=*/true);
  Tensor dev = sub(self, mean_k);
  Tensor ss = sum(mul(dev, dev), dim, keepdim);
  double divisor = std::max(0.0, double(reduced_count(self, dim)) - correction);
  Tensor var = div(ss, wrapped_scalar(Scalar(divisor)));
  Tensor m = keepdim ? mean_k : mean(self, dim, false);
  return {var, m};
}

double correction_of(const std::optional<Scalar>& correction) {
  return correction ? correction->to_double() : 1.0;
}

}  // namespace

Tensor var_impl(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction,
                bool keepdim, OutArg) {
  return std::get<0>(var_and_mean("var", self, dim, correction_of(correction), keepdim));
}

Tensor std_impl(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction,
                bool keepdim, OutArg) {
  return sqrt(std::get<0>(var_and_mean("std", self, dim, correction_of(correction), keepdim)));
}

std::tuple<Tensor, Tensor> var_mean_impl(const Tensor& self, OptionalIntArrayRef dim,
                                         const std::optional<Scalar>& correction, bool keepdim,
                                         OutArg) {
  return var_and_mean("var_mean", self, dim, correction_of(correction), keepdim);
}

std::tuple<Tensor, Tensor> std_mean_impl(const Tensor& self, OptionalIntArrayRef dim,
                                         const std::optional<Scalar>& correction, bool keepdim,
                                         OutArg) {
  auto [v, m] = var_and_mean("std_mean", self, dim, correction_of(correction), keepdim);
  return {sqrt(v), m};
}

Tensor logsumexp_impl(const Tensor& self, IntArrayRef dim, bool keepdim, OutArg) {
  Tensor x = is_floating(self.dtype()) ? self : _to_dtype(self, default_dtype());
  if (x.numel() == 0) return log(sum(exp(x), dim, keepdim));
  // Shift by the max so exp cannot overflow; infinite maxima shift by 0 instead.
  Tensor m = amax(x, dim, /*keepdim=*/true);
  m = where(isinf(m), wrapped_scalar(Scalar(0.0)), m);
  Tensor r = log(sum(exp(sub(x, m)), dim, keepdim));
  return add(r, keepdim ? m : _squeeze_dims(m, dim.empty() ? IntArrayRef() : dim));
}

Tensor count_nonzero_impl(const Tensor& self, OptionalIntArrayRef dim, OutArg) {
  return sum(ne(self, wrapped_scalar(Scalar(int64_t(0)))), dim, false);
}

Tensor nansum_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                   const std::optional<DType>& dtype, OutArg) {
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

}  // namespace tp
