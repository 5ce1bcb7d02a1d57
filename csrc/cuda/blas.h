// Matrix products on CUDA tensors through cuBLAS / cuBLASLt, for csrc/ops/matmul.cpp:
// float32 (TF32 when allowed), float64, float16 and bfloat16 (float32 accumulation).
// See Note [CUDA GEMM] in blas.cpp.
#pragma once
#include "core/tensor_impl.h"

namespace tp::cuda::blas {

/// Whether the CUDA products take `dt` (float32, float64, float16, bfloat16).
bool supports(DType dt);

/// c = alpha * a @ b + beta * c, run_gemm's contract (csrc/ops/matmul.h): 2-D (m x k,
/// k x n) or 3-D batched operands of one dtype on c's device, any strides; c has the
/// result's shape. beta == 0 ignores c's old values (NaNs too).
void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta);

/// c = alpha * a @ b + bias for 2-D operands, `bias` (n elements, contiguous) added to every
/// row, through cuBLASLt's bias epilogue; c is contiguous. Returns false, with c untouched,
/// when cuBLASLt does not take this product (shape, layout, alignment, no algorithm).
bool gemm_with_bias(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& c,
                    double alpha);

/// dst (0-dim) = sum of x[i] * y[i] for 1-D x and y of one dtype and length.
void dot(const Tensor& x, const Tensor& y, const Tensor& dst);

}  // namespace tp::cuda::blas
