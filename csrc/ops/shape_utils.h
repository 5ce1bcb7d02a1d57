// Small helpers shared by view and factory ops: dim wrapping, size inference.
#pragma once
#include <initializer_list>

#include "core/error.h"
#include "core/tensor_impl.h"

namespace tp {

/// Wraps a possibly negative dim into [0, ndim); IndexError when out of range.
inline int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = ndim > 0 ? ndim : 1;
  TP_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [",
                 -n, ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

/// t.size(dim) with PyTorch's IndexErrors: "Dimension specified as 0 but tensor has no
/// dimensions" for a 0-d tensor, else wrap_dim's. Ops call it where PyTorch reads a size
/// before its own shape checks, so that they raise the same class.
inline int64_t size_at(const Tensor& t, int64_t dim) {
  TP_CHECK_INDEX(t.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  return t.size(wrap_dim(dim, t.dim()));
}

/// The shape `a` and `b` broadcast to; RuntimeError naming `op` if they do not.
DimVector broadcast_shapes_of(const Tensor& a, const Tensor& b, const char* op);

/// Resolves one -1 in `shape` so it holds `numel` elements.
DimVector infer_size(IntArrayRef shape, int64_t numel);

/// A contiguous CPU copy of t (t itself when already a contiguous CPU tensor), for code
/// that reads a CUDA tensor's values on the host (index checks).
Tensor host_copy(const Tensor& t);

/// PyTorch's device check: every operand (and out=) on one device, in argument order.
void check_same_device(std::initializer_list<const Tensor*> tensors);

/// `self` with `dim` moved last and made contiguous (one row per kept index), plus the
/// permutation used (sorting.cpp).
Tensor rows_along(const Tensor& self, int64_t dim, DimVector& order);

/// Inverse of rows_along: a row-major result back in `self`'s dim order.
Tensor back_from_rows(const Tensor& rows, const DimVector& order);

}  // namespace tp
