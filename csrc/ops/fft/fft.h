#pragma once
// What the CPU (csrc/ops/fft/fft.cpp) and CUDA (csrc/cuda/fft/) FFT kernels share: argument
// checks, the output's layout, the normalisation factor.
#include <vector>

#include "core/tensor_impl.h"
#include "kernels/tensor_iterator.h"

namespace tp::fft {

/// The kind of transform of the three primitives.
enum class Kind { C2C, R2C, C2R };

// Note [FFT output layout]
// The result is dense with the batch dims (those not transformed) outermost, ordered by the
// input's strides (largest first), and the transformed dims innermost: in the order given
// for r2c / c2r, whose last dim is the one halved, and by the input's strides for c2c (the
// transform is separable, so their order does not matter). That is PyTorch's layout (its
// results' strides follow it, e.g. an fft over dim 0 of a contiguous matrix has strides
// (1, rows)), and it makes every transform a batch of dense signals.
struct Layout {
  DimVector dims;       // the transformed dims, in the order they are laid out
  DimVector perm;       // batch dims, then `dims`: the result is dense in this order
  DimVector out_sizes;  // the result's sizes (original dim order)
  DimVector out_strides;
};

/// Checks the arguments of `op` (its input dtype, the dims) and computes the result's layout.
Layout plan(const char* op, Kind kind, const Tensor& self, IntArrayRef dim, int64_t last_dim_size);

/// An uninitialised result of dtype `dt` in the layout's sizes and strides, on self's device.
Tensor make_output(const Tensor& self, const Layout& layout, DType dt);

/// out= handling: the result moves into `out` (resized to the result's shape).
Tensor finish(const Tensor& result, OutArg out);

/// The factor of normalization mode `mode` (0: 1, 1: 1/sqrt(n), 2: 1/n) for n points.
double norm_factor(int64_t mode, int64_t n);

/// Fills the upper half of the last transformed dim of a dense two-sided spectrum of which
/// the one-sided half (the first n/2+1) is written: X[k] = conj(X[-k]) over all transformed
/// dims (what a real signal's full transform satisfies). `out` has `layout`'s strides.
void fill_conjugate_symmetry(const Tensor& out, const Layout& layout);

}  // namespace tp::fft
