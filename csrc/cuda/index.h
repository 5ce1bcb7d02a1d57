// CUDA kernels for reads by index (index_select, gather, take), the shape ops built on a
// gather over per-dim index lists (flip, roll, repeat, tile, rot90, ...) and tril/triu.
#pragma once
#include <vector>

#include "core/tensor_impl.h"

namespace tp::cuda {

constexpr int kMaxIndexDims = 16;

/// out (contiguous, `ndim` dims of `sizes`) [c] = src[sum over k != dim of c_k * src_strides[k]
/// + j * src_strides[dim]] with j = index[sum_k c_k * index_strides[k]] (int64; negative
/// values count from `dim_size` when `negative_ok`). Strides in elements. Returns false
/// when some index was out of range (the caller raises its op's error).
bool index_gather(const Tensor& out, const Tensor& src, const Tensor& index, int ndim,
                  const int64_t* sizes, const int64_t* src_strides, const int64_t* index_strides,
                  int dim, int64_t dim_size, bool negative_ok);

/// out (contiguous, shape = the lists' lengths) [i0, i1, ...] = src at byte offset
/// sum_d offsets[d][i_d].
void gather_grid(const Tensor& out, const Tensor& src, const std::vector<std::vector<int64_t>>& offsets);

/// Zeroes the elements of t above (`lower`) or below the `diagonal` of its last two dims.
void zero_triangle(const Tensor& t, int64_t diagonal, bool lower);

}  // namespace tp::cuda
