#pragma once
// Complex forms of ops implemented elsewhere (csrc/ops/complex/complex.cpp).
#include <optional>

#include "kernels/tensor_iterator.h"

namespace tp {

/// sum (mean: mean) of a complex tensor over `dim` (all dims when absent or empty): the
/// real and imaginary parts reduced as the last dim of its real view.
Tensor complex_sum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, bool mean, OutArg out);

}  // namespace tp
