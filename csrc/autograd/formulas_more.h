#pragma once
// Backward helpers of formulas_more.cpp: pointwise picks, products and scans, quantiles,
// diagonals and strided views, index reductions and tensor contractions.
#include <optional>
#include <string>

#include "tensorplay/ops_api.h"

namespace tp::autograd {

/// slice_inverse's gradients: for self the slice of grad along `dim` (start:end:step, Python's
/// clamping); for src grad with that slice zeroed (PyTorch's slice_scatter of zeros).
Tensor slice_inverse_self_backward(const Tensor& grad, int64_t dim, const std::optional<int64_t>& start,
                                   const std::optional<int64_t>& end, int64_t step);
Tensor slice_inverse_src_backward(const Tensor& grad, int64_t dim, const std::optional<int64_t>& start,
                                  const std::optional<int64_t>& end, int64_t step);
/// scatter_reduce's tangent for amax / amin: at each output the mean of the tangents of the
/// contributors (self where include_self or untouched, and src) whose value equals the result.
Tensor scatter_reduce_minmax_jvp(const Tensor& self, const Tensor& self_t, int64_t dim,
                                 const Tensor& index, const Tensor& src, const Tensor& src_t,
                                 const Tensor& result, bool include_self);
/// logit's gradient: grad / (x (1 - x)); outside [eps, 1 - eps] 0, or NaN outside [0, 1]
/// without eps (a negative eps counts as none, as in the forward).
Tensor logit_backward(const Tensor& grad, const Tensor& self, const std::optional<double>& eps);
/// copysign's gradient for self: grad times the sign flip result / self, 0 where self is 0.
Tensor copysign_backward(const Tensor& grad, const Tensor& self, const Tensor& result);
/// fmax (`pick_max`) / fmin's gradient for self (`for_self`) or other: self wins ties and
/// wherever other is NaN.
Tensor fmaxmin_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool pick_max,
                        bool for_self);
/// prod's gradient over `dim` (None: every element); zeros in the input get the product
/// of the other elements, as PyTorch computes it.
Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                     const std::optional<int64_t>& dim, bool keepdim);
/// cumprod's gradient along dim, zeros in the input included.
Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim);
/// logcumsumexp's gradient along dim (positive and negative parts of grad in log space).
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim);
/// quantile / nanquantile (`ignore_nan`)'s gradient for self (`for_self`) or q: the sorted
/// values at the ranks below and above each quantile, weighted as the interpolation does.
Tensor quantile_backward(const Tensor& grad, const Tensor& self, const Tensor& q,
                         const std::optional<int64_t>& dim, bool keepdim,
                         const std::string& interpolation, bool ignore_nan, bool for_self);
/// msort's gradient: grad put back where sort(self, 0) took each value from.
Tensor msort_backward(const Tensor& grad, const Tensor& self);
/// repeat_interleave's gradient: the copies of each element (slice along dim) summed.
Tensor repeat_interleave_backward(const Tensor& grad, IntArrayRef sizes, const Tensor& repeats,
                                  const std::optional<int64_t>& dim);
/// diagonal's gradient: grad on that diagonal of zeros of `sizes`.
Tensor diagonal_backward(const Tensor& grad, IntArrayRef sizes, int64_t offset, int64_t dim1,
                         int64_t dim2);
/// diag's gradient (1-D input: the diagonal of grad; 2-D: diagonal_backward).
Tensor diag_backward(const Tensor& grad, IntArrayRef sizes, int64_t diagonal);
/// unfold's gradient: every window's gradient added back at the elements it covers.
Tensor unfold_backward(const Tensor& grad, IntArrayRef sizes, int64_t dimension, int64_t size,
                       int64_t step);
/// take_along_dim's gradient: grad added at the indices (summed over broadcast dims).
Tensor take_along_dim_backward(const Tensor& grad, IntArrayRef sizes, const Tensor& indices,
                               const std::optional<int64_t>& dim);
/// scatter_reduce's (`indexed` false) or index_reduce's gradient for self (`for_self`) or
/// src, for reduce sum, prod, mean, amax, amin, as PyTorch defines them.
Tensor reduce_into_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src, const std::string& reduce, bool include_self,
                            const Tensor& result, bool indexed, bool for_self);
/// tensordot's gradient for self (`for_self`) or other.
Tensor tensordot_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                          IntArrayRef dims_self, IntArrayRef dims_other, bool for_self);
/// inner's gradient for self (`for_self`) or other.
Tensor inner_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self);

}  // namespace tp::autograd
