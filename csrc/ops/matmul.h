#pragma once
// Shared by the product ops (matmul.cpp, einsum.cpp).
#include "core/tensor_impl.h"

namespace tp {

/// c = alpha * a @ b + beta * c for 2-D (m x k, k x n) or 3-D batched (B x m x k,
/// B x k x n) operands of one dtype with any strides; c has the result's shape, unit
/// last stride and one row (and batch) stride. beta == 0 ignores c's old values.
void run_gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta);

}  // namespace tp
