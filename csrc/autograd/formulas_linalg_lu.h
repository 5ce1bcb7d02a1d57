#pragma once
// Backward helpers of the LU family and the solvers built on it (linalg_lu.yaml), written
// with differentiable tp:: ops (triangular_solve, linalg_lu_solve, lu_unpack, matmul) so that
// create_graph=True differentiates them again. Real (float32/float64) matrices only.
#include <array>
#include <tuple>

#include "tensorplay/ops_api.h"

namespace tp::autograd {

/// A's gradient through A = P L U (P from the pivots when `pivot`) from the gradients of L
/// (m x k; its strictly lower part is what moves) and U (k x n; its upper triangle), for square,
/// wide (m < n) and tall (m > n) A.
Tensor linalg_lu_backward(const Tensor& grad_L, const Tensor& grad_U, const Tensor& P, const Tensor& L,
                          const Tensor& U, bool pivot);
/// lu_factor's gradient: LU's strictly lower part is L's, its upper triangle U's.
Tensor lu_factor_ex_backward(const Tensor& grad, const Tensor& LU, const Tensor& pivots, bool pivot);
/// lu_unpack's gradient for LU_data (of sizes LU_sizes): L's strictly lower part and U's upper
/// triangle, each where it came from (zeros without unpack_data).
Tensor lu_unpack_backward(const Tensor& grad_L, const Tensor& grad_U, IntArrayRef LU_sizes, bool unpack_data);
/// linalg.lu_solve's gradient for LU: the gradient of A = P L U (from A's, -A^{-T} gX X^T and
/// its left / adjoint variants) mapped onto L's and U's entries; summed to LU's batch.
Tensor linalg_lu_solve_LU(const Tensor& grad, const Tensor& LU, const Tensor& pivots, const Tensor& X,
                          bool left, bool adjoint);
/// linalg.lu_solve's gradient for B: the solve with the other transpose, summed to B's batch.
Tensor linalg_lu_solve_B(const Tensor& grad, const Tensor& LU, const Tensor& pivots, IntArrayRef B_sizes,
                         bool left, bool adjoint);
/// linalg.solve_ex's gradients (A, B) through A's LU factors (recomputed; singular matrices
/// give non-finite gradients instead of an error, as PyTorch's).
std::tuple<Tensor, Tensor> linalg_solve_ex_backward(const Tensor& grad, const Tensor& A, const Tensor& B,
                                                    const Tensor& X, bool left, std::array<bool, 2> mask);
/// triangular_solve's gradients (b, A): gb = op(A)^{-T} gX, gA = -gb X^T (or its transpose)
/// on A's triangle, plus cloned_coefficient's gradient.
std::tuple<Tensor, Tensor> triangular_solve_backward(const Tensor& grad_solution, const Tensor& grad_coefficient,
                                                     const Tensor& b, const Tensor& A, const Tensor& X,
                                                     bool upper, bool transpose, bool unitriangular,
                                                     std::array<bool, 2> mask);

}  // namespace tp::autograd
