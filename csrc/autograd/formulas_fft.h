#pragma once
// Backward formulas of the FFT primitives (csrc/ops/fft/fft.cpp, Note [FFT gradients]).
#include "core/tensor_impl.h"

namespace tp::autograd {

/// _fft_r2c's gradient: the real part of the inverse c2c of grad, zero-padded to the full
/// length of the last transformed dim when the result was one-sided.
Tensor fft_r2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization, bool onesided,
                        IntArrayRef self_sizes);
/// _fft_c2r's gradient: r2c of grad with the interior frequencies doubled.
Tensor fft_c2r_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization);

}  // namespace tp::autograd
