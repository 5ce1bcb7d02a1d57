// CUDA reductions behind sum/mean/prod/amax/amin/all/any and the arg reductions
// (csrc/ops/reductions.cpp chooses the layout; these kernels see contiguous blocks).
#pragma once
#include "core/tensor_impl.h"

namespace tp::cuda {

enum class ReduceKind { Sum, Prod, Max, Min, All, Any };

/// res[b, k] = reduction over r of x[b, r, k], where x is a contiguous [B, R, K] block of
/// its compute dtype and res a contiguous [B, K] tensor of the kernel's result dtype
/// (sum: int64 for integers; prod: float64 / int64; all/any: bool). R >= 1.
void reduce(ReduceKind kind, const Tensor& x, int64_t B, int64_t R, int64_t K, const Tensor& res);

/// For each of `rows` contiguous rows of `len` (>= 1) elements of x: the index of the
/// first maximum (minimum), a NaN winning at its first position and -0 equal to +0, and
/// that value. values: x's dtype, indices: int64, both contiguous with `rows` elements.
void arg_reduce(bool is_max, const Tensor& x, int64_t rows, int64_t len, const Tensor& values,
                const Tensor& indices);

}  // namespace tp::cuda
