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

/// How an index write combines a value with what is there (indexing_writes.cpp's Reduce).
enum class WriteOp { Assign, Sum, Prod, Mean, Max, Min };

/// The row write of Note [Row writes] on the GPU: for p < n and q < inner positions,
/// dst[target(p) + dst_inner[q]] op= val[p * val_outer + val_inner[q]], where target(p)
/// sums the k index arrays' entries (negative ones wrapped by `sizes`) times `strides`.
/// Offsets and strides in elements; idx are device pointers to int64. Mean sums (the
/// caller divides). Duplicate targets: assignment keeps one value, reductions all of
/// them, in no fixed order (atomics).
void row_write(const Tensor& dst, const std::vector<const int64_t*>& idx,
               const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t n,
               const std::vector<int64_t>& dst_inner, const Tensor& val, int64_t val_outer,
               const std::vector<int64_t>& val_inner, WriteOp op);

/// scatter along `dim`: for each element e of the int64 index (contiguous, idx's shape),
/// dst[c with c[dim] = index[e]] op= src[c], c = e's coordinates; src given by its
/// pointer's tensor and element strides (src_strides).
void scatter(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src,
             const std::vector<int64_t>& src_strides, WriteOp op);

/// Zeroes the elements of t above (`lower`) or below the `diagonal` of its last two dims.
void zero_triangle(const Tensor& t, int64_t diagonal, bool lower);

}  // namespace tp::cuda
