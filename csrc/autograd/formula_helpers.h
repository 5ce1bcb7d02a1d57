#pragma once
// What derivative formulas (the `derivatives:` entries of csrc/ops/*.yaml) are written
// with: arithmetic operators on tensors and the backward helpers of formulas.cpp.
#include <cmath>
#include <optional>
#include <vector>

#include "autograd/engine.h"
#include "autograd/formulas_activation.h"
#include "autograd/formulas_complex.h"
#include "autograd/formulas_fft.h"
#include "autograd/formulas_linalg.h"
#include "autograd/formulas_linalg_lu.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/record.h"
#include "autograd/saved_variable.h"
#include "autograd/variable.h"
#include "autograd/formulas_more.h"
#include "autograd/formulas_special.h"
#include "ops/nn.h"
#include "ops/pointwise.h"
#include "tensorplay/ops_api.h"

namespace tp {

inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, const Scalar& s) { return add(a, wrapped_scalar(s)); }
inline Tensor operator-(const Tensor& a, const Scalar& s) { return sub(a, wrapped_scalar(s)); }
inline Tensor operator*(const Tensor& a, const Scalar& s) { return mul(a, wrapped_scalar(s)); }
inline Tensor operator/(const Tensor& a, const Scalar& s) { return div(a, wrapped_scalar(s)); }
inline Tensor operator+(const Scalar& s, const Tensor& a) { return add(wrapped_scalar(s), a); }
inline Tensor operator-(const Scalar& s, const Tensor& a) { return sub(wrapped_scalar(s), a); }
inline Tensor operator*(const Scalar& s, const Tensor& a) { return mul(wrapped_scalar(s), a); }
inline Tensor operator/(const Scalar& s, const Tensor& a) { return div(wrapped_scalar(s), a); }

}  // namespace tp

namespace tp::autograd {

/// A 0-dim zero of t's dtype and device (broadcasts in where()).
inline Tensor zeros_like_scalar(const Tensor& t) { return zeros(IntArrayRef(), t.dtype(), t.device()); }

/// zeros shaped like grad (for ops whose derivative is 0 almost everywhere).
inline Tensor zeros_like_grad(const Tensor& grad) {
  return zeros(grad.sizes(), grad.dtype(), grad.device());
}
/// grad on `device` (a copy when it is elsewhere): copy_'s gradient for a source on
/// another device, so a tensor moved with to()/cuda()/cpu() gets its gradient back home.
inline Tensor grad_to_device(const Tensor& grad, Device device) {
  if (grad.device() == device) return grad;
  Tensor t = empty_tensor(grad.sizes(), grad.dtype(), device);
  return copy_(t, grad);
}
/// grad * s, skipping the multiply when s is 1.
inline Tensor maybe_multiply(const Tensor& grad, const Scalar& s) {
  return s.is_floating() || s.to_int() != 1 ? grad * s : grad;
}
/// The gradient reaching `self` of maximum(self, other) (`pick_max`) or minimum: all of
/// it where self wins, half where the two tie, as PyTorch does.
Tensor binary_pick_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                            bool pick_max);
/// clamp's gradient for self: passes where min <= self <= max.
Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& min,
                      const std::optional<Tensor>& max);
/// clamp's gradient for a tensor bound (`is_min` picks which): where that bound won.
Tensor clamp_bound_backward(const Tensor& grad, const Tensor& self,
                            const std::optional<Tensor>& min, const std::optional<Tensor>& max,
                            bool is_min);

/// Sums a (broadcast) gradient down to `sizes`.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);
/// The gradient of a reduction over `dim` (None: all) expanded back to `sizes`.
Tensor reduce_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim,
                       bool keepdim);
/// mean's gradient: reduce_backward divided by the number of elements averaged.
Tensor mean_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim,
                     bool keepdim);
/// The gradient of a reduction that picked `result` (amax/amin/max/min without dim):
/// shared evenly among the elements equal to it, as PyTorch does; with `nan_picks` (max,
/// min) a NaN result is shared among the NaN elements.
Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                                  OptionalIntArrayRef dim, bool keepdim, bool nan_picks);
/// For inputs PyTorch cannot differentiate either: raises NotImplementedError naming `what`.
Tensor not_implemented_grad(const char* what);
/// The inverse permutation applied to grad.
Tensor permute_backward(const Tensor& grad, IntArrayRef dims);
/// grad placed at `start`..`start+len` of `dim` in zeros of `sizes` (narrow, select).
Tensor narrow_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t start);
Tensor select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t index);
/// The gradients of cat's inputs: grad split along dim by their sizes.
variable_list cat_backward(const Tensor& grad, const std::vector<DimVector>& sizes, int64_t dim);
/// The gradients of stack's inputs.
variable_list stack_backward(const Tensor& grad, size_t count, int64_t dim);
/// The gradient of `pow(self, exponent)` w.r.t. self (0 where exponent is 0).
Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent);
/// The gradient w.r.t. the exponent (0 where self is 0 and exponent >= 0).
Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                             const Tensor& result);
/// The gradient of a reduction that picked one element per slice along `dim` (max.dim,
/// min.dim, kthvalue, median, mode): grad at the picked index, 0 elsewhere.
Tensor index_pick_backward(const Tensor& grad, const Tensor& indices, IntArrayRef sizes,
                           int64_t dim, bool keepdim);
/// The tangent of the values such ops (and sort, topk, cummax: keepdim=true) pick: the
/// input's tangent read at the picked indices.
Tensor index_pick_jvp(const Tensor& tangent, const Tensor& indices, int64_t dim, bool keepdim);
/// zeros of `sizes` in grad's dtype and device.
inline Tensor zeros_for(const Tensor& grad, IntArrayRef sizes) {
  return zeros(sizes, grad.dtype(), grad.device());
}
/// The gradient of ops that place slices of self at `indices` along dim (sort, topk):
/// grad scattered back into zeros of self's shape.
Tensor value_selecting_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                IntArrayRef sizes);
/// grad[indices] with index_put's indices (integer tensors or bool masks on the leading
/// dims, broadcast together): the gradient of index_put's values.
Tensor index_backward(const Tensor& grad, TensorList indices);
/// masked_scatter's gradient for source: the masked elements of grad in order, zero-padded
/// to source's size.
Tensor masked_scatter_backward(const Tensor& grad, const Tensor& mask, IntArrayRef source_sizes);
/// masked_select's gradient: grad scattered into zeros of the broadcast shape of self and mask.
Tensor masked_select_backward(const Tensor& grad, IntArrayRef self_sizes, const Tensor& mask);
/// cumsum's gradient: the reversed cumulative sum of grad.
Tensor cumsum_backward(const Tensor& grad, int64_t dim);
/// repeat's gradient: grad summed over the repeated blocks back to `sizes`.
Tensor repeat_backward(const Tensor& grad, IntArrayRef repeats, IntArrayRef sizes);
/// tile's gradient (tile is repeat with repeats padded by leading ones).
Tensor tile_backward(const Tensor& grad, IntArrayRef dims, IntArrayRef sizes);
/// roll's gradient: grad rolled back.
Tensor roll_backward(const Tensor& grad, IntArrayRef shifts, IntArrayRef dims);
/// var's gradient for correction `correction` (None: 1) over `dim`.
Tensor var_backward(const Tensor& grad, const Tensor& self, OptionalIntArrayRef dim,
                    const std::optional<Scalar>& correction, bool keepdim);
/// std's gradient from var's: grad / (2 std), 0 where std is 0.
Tensor std_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                    OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim);
/// nanmean's gradient: each non-NaN element gets grad / (non-NaN count of its slice).
Tensor nanmean_backward(const Tensor& grad, const Tensor& self, OptionalIntArrayRef dim,
                        bool keepdim);
/// "Every dim" for reductions (spelled without std::, which a formula of an op with an
/// output named `std` cannot use).
inline OptionalIntArrayRef all_dims() { return std::nullopt; }
/// The correction of var/std's legacy `unbiased` flag.
inline std::optional<Scalar> legacy_correction(bool unbiased) {
  return Scalar(int64_t(unbiased ? 1 : 0));
}
/// aminmax's gradient: min's and max's, each shared among the elements equal to it.
Tensor aminmax_backward(const Tensor& grad_min, const Tensor& grad_max, const Tensor& self,
                        const Tensor& min, const Tensor& max, std::optional<int64_t> dim,
                        bool keepdim);
/// cummax/cummin's gradient: each output's gradient added at the index it came from.
Tensor cummaxmin_backward(const Tensor& grad, const Tensor& indices, IntArrayRef sizes, int64_t dim);
/// linalg.vector_norm's gradient for order `ord` (0 where the norm is 0, as PyTorch).
Tensor vector_norm_backward(const Tensor& grad, const Tensor& self, const Scalar& ord,
                            const Tensor& result, OptionalIntArrayRef dim, bool keepdim);
/// matmul's gradient for self (`for_self`) or other, through every rank combination:
/// 1-D operands act as a row/column, broadcast batch dims are summed back.
Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self);
/// mm/addmm's gradient for mat1, laid out like mat1 (a column-major mat1, e.g. a transposed
/// weight, gets a column-major gradient, so accumulation needs no relayout).
Tensor mm_mat1_backward(const Tensor& grad, const Tensor& mat2, IntArrayRef mat1_sizes,
                        IntArrayRef mat1_strides, const Scalar& alpha);
/// mm/addmm's gradient for mat2, laid out like mat2 (see mm_mat1_backward).
Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, IntArrayRef mat2_sizes,
                        IntArrayRef mat2_strides, const Scalar& alpha);
/// addbmm's gradient for batch1 (`for_batch1`) or batch2: grad is shared by every batch.
Tensor addbmm_backward(const Tensor& grad, const Tensor& batch1, const Tensor& batch2,
                       const Scalar& alpha, bool for_batch1);
/// trace's gradient: grad on the diagonal of a matrix of `sizes`.
Tensor trace_backward(const Tensor& grad, IntArrayRef sizes);
/// as_strided's gradient: grad summed into the storage positions of the output geometry
/// (out_*), read back at the input's (in_*); aliases of one storage element in an
/// overlapping input share its gradient equally, as PyTorch does.
Tensor as_strided_backward(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef in_strides,
                           int64_t in_offset, IntArrayRef out_sizes, IntArrayRef out_strides,
                           int64_t out_offset);
/// A tensor of the gradient's dtype/device holding 0 where `mask` is false.
Tensor masked_grad(const Tensor& grad, const Tensor& mask);
/// The gradient of a float-only unary op applied to an integer input (promoted) is
/// returned in the input's dtype by the engine; this converts a Scalar to a 0-dim tensor.
Tensor scalar_tensor(const Scalar& s, const Tensor& like);

}  // namespace tp::autograd
