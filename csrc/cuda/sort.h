// CUDA sorting and scans along the last dim of a contiguous block of rows (sorting.cpp
// moves the dim last first): a stable radix sort (CUB) on order-preserving keys, and a
// block-per-row inclusive scan.
#pragma once
#include "core/tensor_impl.h"

namespace tp::cuda {

/// Sorts each of `rows` contiguous rows of `len` elements of x (any dtype but the half
/// types), stably, NaN above every number; writes the sorted values and their indices
/// within the row (int64), both contiguous rows x len.
void sort_rows(const Tensor& x, int64_t rows, int64_t len, bool descending, const Tensor& values,
               const Tensor& indices);

/// out[r, i] = x[r, 0] + ... + x[r, i] (or the product) for contiguous float64 or int64 rows.
void scan_rows(const Tensor& x, int64_t rows, int64_t len, bool product, const Tensor& out);

}  // namespace tp::cuda
