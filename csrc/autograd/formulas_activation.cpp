#include "autograd/formulas_activation.h"

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "kernels/functors/pointwise.h"

namespace tp::autograd {

namespace {

Tensor fused_grad(Activation which, const Tensor& g, const Tensor& x, const Scalar& p0,
                  const Scalar& p1, const Scalar& p2) {
  switch (which) {
    case Activation::Gelu: return _gelu_backward(g, x);
    case Activation::GeluTanh: return _gelu_tanh_backward(g, x);
    case Activation::Silu: return _silu_backward(g, x);
    case Activation::Mish: return _mish_backward(g, x);
    case Activation::Softplus: return _softplus_backward(g, x, p0, p1);
    case Activation::Elu: return _elu_backward(g, x, p0, p1, p2);
    case Activation::LeakyRelu: return _leaky_relu_backward(g, x, p0);
    case Activation::Hardswish: return _hardswish_backward(g, x);
    case Activation::Hardsigmoid: return _hardsigmoid_backward(g, x);
  }
  return Tensor();
}

Tensor where_gt(const Tensor& x, double bound, const Tensor& a, const Tensor& b) {
  return where(gt(x, wrapped_scalar(Scalar(bound))), a, b);
}

/// The derivative written with differentiable ops (functors::k* constants as the kernels).
Tensor composed_grad(Activation which, const Tensor& g, const Tensor& x, const Scalar& p0,
                     const Scalar& p1, const Scalar& p2) {
  using namespace functors;
  switch (which) {
    case Activation::Gelu: {
      Tensor cdf = (1.0 + erf(x * kSqrtHalf)) * 0.5;
      Tensor pdf = exp(x * x * -0.5) * kInvSqrt2Pi;
      return g * (cdf + x * pdf);
    }
    case Activation::GeluTanh: {
      Tensor t = tanh((x + x * x * x * kGeluKappa) * kSqrt2OverPi);
      Tensor d_inner = (1.0 + x * x * (3 * kGeluKappa)) * kSqrt2OverPi;
      return g * ((1.0 + t) * 0.5 + x * 0.5 * (1.0 - t * t) * d_inner);
    }
    case Activation::Silu: {
      Tensor s = sigmoid(x);
      return g * s * (1.0 + x * (1.0 - s));
    }
    case Activation::Mish: {
      Tensor t = tanh(_softplus(x, Scalar(1.0), Scalar(20.0)));
      return g * (t + x * sigmoid(x) * (1.0 - t * t));
    }
    case Activation::Softplus: {
      Tensor bx = x * p0;
      return where_gt(bx, p1.to_double(), g, g * sigmoid(bx));
    }
    case Activation::Elu: {
      Tensor neg = g * exp(x * p2) * (p2.to_double() * p0.to_double() * p1.to_double());
      return where_gt(x, 0.0, g * p1, neg);
    }
    case Activation::Hardswish: {
      Tensor mid = g * (x / 3.0 + 0.5);
      return where(le(x, wrapped_scalar(Scalar(-3.0))), zeros_like_scalar(g),
                   where(ge(x, wrapped_scalar(Scalar(3.0))), g, mid));
    }
    case Activation::LeakyRelu:
    case Activation::Hardsigmoid: break;  // their backward kernels are differentiable
  }
  return Tensor();
}

}  // namespace

Tensor activation_grad(Activation which, const Tensor& grad, const Tensor& self, const Scalar& p0,
                       const Scalar& p1, const Scalar& p2) {
  const bool piecewise_linear = which == Activation::LeakyRelu || which == Activation::Hardsigmoid;
  return grad_enabled() && !piecewise_linear ? composed_grad(which, grad, self, p0, p1, p2)
                                             : fused_grad(which, grad, self, p0, p1, p2);
}

}  // namespace tp::autograd
