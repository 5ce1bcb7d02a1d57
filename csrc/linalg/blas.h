#pragma once
// Matrix products on CPU: OpenBLAS GEMM for float32/float64, a blocked loop for the
// dtypes BLAS lacks (integers accumulate in int64, float16/bfloat16 in float32); no bool.
#include <cstdint>

#include "core/dtype.h"

namespace tp::blas {

/// One matrix operand: element (i, j) lives at data + i*row_stride + j*col_stride
/// (strides in elements); `conj`: a complex operand read conjugated (a conjugate view,
/// Note [Conjugate operands of matrix products]).
struct MatrixRef {
  const void* data;
  int64_t row_stride, col_stride;
  bool conj = false;
};

/// C = alpha * A @ B + beta * C for an m x k A and a k x n B, all of dtype `dt`;
/// C has unit column stride and row stride ldc. beta == 0 ignores C's old values (NaNs too).
/// Runs on tp's thread budget; must not be called from inside an OpenMP parallel region.
void gemm(DType dt, int64_t m, int64_t n, int64_t k, double alpha, MatrixRef a, MatrixRef b,
          double beta, void* c, int64_t ldc);

/// `batch` independent products C_i = alpha * A_i @ B_i + beta * C_i, operand i at
/// base + i * batch_stride (elements), same layout rules as gemm.
void gemm_batched(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                  MatrixRef a, int64_t a_batch_stride, MatrixRef b, int64_t b_batch_stride,
                  double beta, void* c, int64_t ldc, int64_t c_batch_stride);

}  // namespace tp::blas
