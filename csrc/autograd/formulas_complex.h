#pragma once
// Backward formulas of the complex ops (csrc/ops/complex/complex.cpp): gradients in
// PyTorch's convention, dL/dRe(z) + i dL/dIm(z) for a complex input z.
#include "core/tensor_impl.h"

namespace tp::autograd {

/// Replaces each defined complex tensor of `v` by its conjugate; whether there was one
/// (Note [Complex gradients of holomorphic formulas] in tools/codegen/gen_autograd.py).
bool conjugate_complex(std::vector<Tensor>& v);

/// view_as_real's gradient: the real pairs read back as complex numbers.
Tensor view_as_real_backward(const Tensor& grad);
/// real's gradient: grad as the real part (a complex self), or grad itself (a real self).
Tensor real_backward(const Tensor& grad, DType self_dtype);
/// imag's gradient: grad as the imaginary part.
Tensor imag_backward(const Tensor& grad, DType self_dtype);
/// complex()'s gradient for `real`: the real part of grad (grad itself when real).
Tensor real_part_of(const Tensor& grad);
/// complex()'s gradient for `imag`: the imaginary part of grad (0 for a real grad).
Tensor imag_or_zero(const Tensor& grad);
Tensor angle_backward(const Tensor& grad, const Tensor& self);
Tensor sgn_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
Tensor polar_abs_backward(const Tensor& grad, const Tensor& result);
Tensor polar_angle_backward(const Tensor& grad, const Tensor& result);

}  // namespace tp::autograd
