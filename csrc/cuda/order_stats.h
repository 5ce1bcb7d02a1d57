// CUDA kernels of the order-statistic, scan and counting ops (order_stats.cpp,
// counting.cpp). Rows are contiguous `rows` x `len` blocks with the op's dim last, in the
// op's compute dtype (never a half type); results are contiguous too.
#pragma once
#include "core/tensor_impl.h"
#include "ops/order_stats_math.h"

namespace tp::cuda {

/// cummax (is_max) / cummin of each row: running best values and the index where each was
/// last reached (order_math::cum_takes), one block per row.
void cum_best_rows(const Tensor& x, int64_t rows, int64_t len, bool is_max, const Tensor& values,
                   const Tensor& indices);

/// out[r, i] = log(exp(x[r, 0]) + ... + exp(x[r, i])) for float64 rows (order_math::log_add_exp).
void logcumsumexp_rows(const Tensor& x, int64_t rows, int64_t len, const Tensor& out);

/// The k-th smallest (0-based) of each row and its index, by the CPU's quickselect
/// (one thread per row, on a copy of x): values/indices hold `rows` elements.
void kthvalue_rows(const Tensor& x, int64_t rows, int64_t len, int64_t k, const Tensor& values,
                   const Tensor& indices);

/// The lower median of each sorted row (sort_rows' values and indices, NaN last) and its
/// index: with ignore_nan NaNs are left out and an all-NaN row reports index
/// `all_nan_index` (its value from x); without it a row with NaN reports its first NaN.
void median_rows(const Tensor& x, const Tensor& sorted, const Tensor& sorted_idx, int64_t rows,
                 int64_t len, bool ignore_nan, int64_t all_nan_index, const Tensor& values,
                 const Tensor& indices);

/// The most frequent value of each row (the smallest on ties) and the CPU's index of it:
/// order_math::sort_like_std then mode_of_sorted, one thread per row.
void mode_rows(const Tensor& x, int64_t rows, int64_t len, const Tensor& values, const Tensor& indices);

/// out[r, j] = the q[j]-quantile (q: float64 on the device, nq values) of sorted row r
/// (NaN last): NaN for a row with NaN unless ignore_nan, which leaves NaNs out.
void quantile_rows(const Tensor& sorted, int64_t rows, int64_t len, const Tensor& q,
                   order_math::Interp how, bool ignore_nan, const Tensor& out);

/// Run starts of a contiguous 1-D sequence: flags[i] = 1 where element i differs from
/// element i - 1 (NaN equals nothing; -0 == +0), flags[0] = 1. int64, numel(keys) long.
Tensor run_flags(const Tensor& keys);

/// Run starts of the slices x[perm[i], :] of a contiguous n x m tensor (as run_flags).
Tensor slice_run_flags(const Tensor& x, const Tensor& perm, int64_t n, int64_t m);

/// Runs found from run_flags (n > 0 positions): the position each run starts at, its
/// length, and inverse[order[i]] = run of position i (order: int64 permutation of
/// 0..n-1, or undefined for the identity). Reads the run count back to the host.
struct Runs {
  Tensor first, counts, inverse;
};
Runs runs_from_flags(const Tensor& flags, const Tensor& order);

/// counts[v] += 1 (weights undefined) or sums[v] += weights[i] (float64) for each value v
/// of the int64 x; out (zeroed here) has `bins` elements, int64 or float64.
void bincount(const Tensor& x, const Tensor& weights, const Tensor& out);

/// histc's int64 counts (zeroed here) of x (float32 or float64) by order_math::histc_bin
/// with the CPU's bounds (values of x's dtype); `storage` is the input's dtype, whose
/// rounding float16/bfloat16 apply at each step.
void histc(const Tensor& x, DType storage, double left, double right, double width, double nbins,
           const Tensor& counts);

}  // namespace tp::cuda
