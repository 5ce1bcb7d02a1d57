#pragma once
// Backward helpers of the special-function ops (csrc/ops/special.yaml), formulas_special.cpp.
#include "tensorplay/ops_api.h"

namespace tp::autograd {

/// special_i1's gradient: grad (i0(x) - i1(x) / x), 1/2 at |x| <= eps (where the quotient
/// would lose itself), as PyTorch's formula.
Tensor i1_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
/// special_i1e's gradient: grad (i0e(x) - i1e(x) (sgn(x) + 1 / x)), 1/2 at |x| <= eps.
Tensor i1e_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
/// sinc's gradient: grad (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0.
Tensor sinc_backward(const Tensor& grad, const Tensor& self);
/// special_xlog1py's gradient for self: xlog1py(grad, other), 0 where self is 0 and
/// other <= -1.
Tensor xlog1py_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other);

}  // namespace tp::autograd
