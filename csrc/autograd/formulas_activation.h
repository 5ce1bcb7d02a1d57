#pragma once
// The gradient of nn.functional's fused activations (csrc/ops/nn_activation.yaml).
#include "tensorplay/ops_api.h"

namespace tp::autograd {

enum class Activation { Gelu, GeluTanh, Silu, Mish, Softplus, Elu, LeakyRelu, Hardswish, Hardsigmoid };

/// grad times the activation's derivative at `self`: the fused one-pass kernel in a plain
/// backward, the same math in differentiable ops under create_graph (Note [Fused backward
/// and create_graph]). p0..p2 are the op's scalars (softplus: beta, threshold; elu: alpha,
/// scale, input_scale; leaky_relu: negative_slope).
Tensor activation_grad(Activation which, const Tensor& grad, const Tensor& self, const Scalar& p0,
                       const Scalar& p1, const Scalar& p2);

}  // namespace tp::autograd
