// The tp.linalg decompositions on CUDA tensors through cuSOLVER (dense API), for
// csrc/ops/linalg_decompositions.cpp: inputs are already checked (float32/float64, shapes);
// results match the CPU path's (column-major where LAPACK's are). See Note [cuSOLVER calls].
#pragma once
#include <string>
#include <tuple>

#include "ops/linalg_common.h"

namespace tp::cuda::linalg {

/// LU factors (getrf) of the square matrices of A broadcast to `batch`: column-major `lu`,
/// int32 `pivots` (batch..., n; 1-based, as LAPACK's) and int32 `info` (batch; > 0: U(info,
/// info) is zero), all on A's device.
struct Lu {
  Tensor lu, pivots, info;
};
Lu lu_factor(const Tensor& A, IntArrayRef batch);

/// X with A X = B from A's factors, B (n x k matrices) broadcast to `batch`: column-major
/// (getrs). Matrices with info > 0 give non-finite X.
Tensor lu_solve(const Lu& f, const Tensor& B, IntArrayRef batch);

/// Determinant of each square matrix of A (product of U's diagonal, signed by the pivots).
Tensor det(const Tensor& A);
/// Sign and log|det| of each square matrix of A (sign 0 where a pivot is 0 or NaN, as the CPU).
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);

/// Cholesky factors (potrf; the other triangle zeroed) and info per matrix; a NaN pivot
/// fails as a non-positive one, as on the CPU.
std::tuple<Tensor, Tensor> cholesky(const Tensor& A, bool upper);

/// (Q, R) of linalg.qr for `mode` ("reduced", "complete", "r": Q empty) through geqrf/orgqr.
std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode);

/// linalg::svd on CUDA (gesvdj); raises the CPU's LinAlgErrors when it does not converge.
tp::linalg::SvdResult svd(const Tensor& A, bool compute_uv, bool full_matrices);

/// linalg::eigh on CUDA (syevd) from triangle `uplo` ('L' or 'U').
tp::linalg::EighResult eigh(const Tensor& A, bool compute_v, char uplo);

}  // namespace tp::cuda::linalg
