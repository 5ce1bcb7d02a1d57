// Backward helpers of the special-function ops (formulas_special.h).
#include "autograd/formulas_special.h"

#include <limits>

#include "autograd/formula_helpers.h"

namespace tp::autograd {

namespace {

/// |x| > eps of x's dtype, and x with eps in place of the tiny elements.
std::pair<Tensor, Tensor> away_from_zero(const Tensor& self) {
  const double eps = self.dtype() == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                    : double(std::numeric_limits<float>::epsilon());
  Tensor big = gt(abs(self), scalar_tensor(Scalar(eps), self));
  return {big, where(big, self, scalar_tensor(Scalar(eps), self))};
}

}  // namespace

Tensor i1_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  auto [big, safe] = away_from_zero(self);
  Tensor d = i0(safe) - result / safe;
  return grad * where(big, d, scalar_tensor(Scalar(0.5), self));
}

Tensor i1e_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  auto [big, safe] = away_from_zero(self);
  Tensor d = special_i0e(safe) - result * (sgn(safe) + reciprocal(safe));
  return grad * where(big, d, scalar_tensor(Scalar(0.5), self));
}

Tensor sinc_backward(const Tensor& grad, const Tensor& self) {
  constexpr double kPi = 3.14159265358979323846;
  Tensor pix = self * Scalar(kPi);
  Tensor denom = self * self * Scalar(kPi);
  Tensor d = grad * (pix * cos(pix) - sin(pix)) / denom;
  return where(eq(denom, zeros_like_scalar(denom)), zeros_like_scalar(grad), d);
}

Tensor xlog1py_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other) {
  Tensor zero = logical_and(eq(self, zeros_like_scalar(self)), le(other, scalar_tensor(Scalar(-1.0), other)));
  return masked_grad(special_xlog1py(grad, other), logical_not(zero));
}

}  // namespace tp::autograd
