// CUDA kernels for reads by index (index_select, gather, take), the shape ops built on a
// gather over per-dim index lists (flip, roll, repeat, tile, rot90, ...), tril/triu, the
// index writes, the mask selections (nonzero, masked_select/scatter) and searchsorted.
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
/// them, in no fixed order (atomics), or in entry order where Note [Deterministic index
/// writes] (index_write_kernels.cu) applies.
void row_write(const Tensor& dst, const std::vector<const int64_t*>& idx,
               const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t n,
               const std::vector<int64_t>& dst_inner, const Tensor& val, int64_t val_outer,
               const std::vector<int64_t>& val_inner, WriteOp op);

/// scatter along `dim`: for each element e of the int64 index (contiguous, idx's shape),
/// dst[c with c[dim] = index[e]] op= src[c], c = e's coordinates; src given by its
/// pointer's tensor and element strides (src_strides). Duplicate targets as in row_write.
void scatter(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src,
             const std::vector<int64_t>& src_strides, WriteOp op);

/// nonzero of a contiguous x: the (count, x.dim()) int64 coordinates of its elements that are
/// not 0 (NaN included), in row-major order. Reads the count back (a stream synchronisation).
Tensor nonzero(const Tensor& x);

/// The elements of contiguous x where the contiguous bool mask (x's numel) holds, 1-D.
Tensor masked_select(const Tensor& x, const Tensor& mask);

/// dst[i] = src[k] for the k-th true position i of mask (dst and mask contiguous, one
/// numel; src contiguous). Returns false, writing nothing, when src has fewer elements
/// than mask has true positions.
bool masked_scatter(const Tensor& dst, const Tensor& mask, const Tensor& src);

/// searchsorted: out[i] (int64, or int32 with `out_int32`) = the first position in row
/// `i / per_row` (row 0 when per_row is 0) of the contiguous rows of len sorted values bd
/// whose value is > v[i] (`right`) or >= v[i]; `sorter` (or null) gives each row's order.
/// bd and v contiguous, of one dtype; out contiguous, v's numel.
void searchsorted(const Tensor& bd, const Tensor& v, const int64_t* sorter, int64_t len,
                  int64_t per_row, bool right, const Tensor& out);

/// Zeroes the elements of t above (`lower`) or below the `diagonal` of its last two dims.
void zero_triangle(const Tensor& t, int64_t diagonal, bool lower);

}  // namespace tp::cuda
