#pragma once
// Backward helpers of the tp.linalg decompositions and solvers (linalg_decomp.yaml),
// written with differentiable tp:: ops so that create_graph=True differentiates them again.
// Complex matrices too (Note [Complex linalg gradients] in formulas_linalg.cpp): formulas of
// holomorphic ops (det, inv, solve, matrix_exp) are written as for reals; the others say
// `complex_grad: direct` in linalg_decomp.yaml and use conjugate transposes (mH).
#include <string>

#include "tensorplay/ops_api.h"

namespace tp::autograd {

/// det's gradient: grad * det * A^{-T}, or for singular A the transposed adjugate
/// (from the SVD: det(U) det(Vh) U diag(prod_{j != i} s_j) Vh).
Tensor det_backward(const Tensor& grad, const Tensor& A, const Tensor& det);
/// slogdet's gradient: h * A^{-H} with h = grad_logabsdet, plus i Im(grad_sign conj(sign))
/// for complex A (a real sign is piecewise constant); NaN for singular matrices.
Tensor slogdet_backward(const Tensor& grad_sign, const Tensor& grad_logabsdet, const Tensor& A,
                        const Tensor& sign);
/// inv's gradient from the inverse: -A^{-T} grad A^{-T}.
Tensor inv_backward(const Tensor& grad, const Tensor& inverse);
/// linalg.solve's gradient for B (`for_A` false) or A, with vector right-hand sides and
/// broadcast batches summed back to the argument's shape.
Tensor solve_backward(const Tensor& grad, const Tensor& A, const Tensor& B, const Tensor& X,
                      bool left, bool for_A);
/// cholesky's gradient: L^{-H} S L^{-1} with S = (M + tril(M, -1)^H) / 2, M = tril(L^H gL)
/// (symmetric for real A; PyTorch's formula).
Tensor cholesky_backward(const Tensor& grad, const Tensor& L, bool upper);
/// qr's gradient (modes 'reduced' and 'complete' with rows <= cols; raises for 'r' and
/// for 'complete' with rows > cols, as PyTorch).
Tensor qr_backward(const Tensor& grad_Q, const Tensor& grad_R, const Tensor& Q, const Tensor& R,
                   const std::string& mode);
/// svd's gradient (distinct singular values; full rank when A is rectangular). With
/// `full_matrices` only the first min(m, n) singular vectors carry gradient.
Tensor svd_backward(const Tensor& grad_U, const Tensor& grad_S, const Tensor& grad_Vh,
                    const Tensor& U, const Tensor& S, const Tensor& Vh, bool full_matrices);
/// svdvals' gradient: U diag(grad) Vh (the SVD recomputed).
Tensor svdvals_backward(const Tensor& grad, const Tensor& A);
/// eigh's gradient: V (diag(gL) + skew(V^H gV) / (L_j - L_i)) V^H (distinct eigenvalues;
/// raises when a complex loss depends on the eigenvectors' phases).
Tensor eigh_backward(const Tensor& grad_L, const Tensor& grad_V, const Tensor& L,
                     const Tensor& V);
/// linalg.eig's gradient in PyTorch's complex convention (Note [Gradient of eig]); real for
/// a real A. Raises when the loss depends on the eigenvectors' phases.
Tensor eig_backward(const Tensor& grad_L, const Tensor& grad_V, const Tensor& L,
                    const Tensor& V, DType A_dtype);
/// linalg.eigvals' gradient: V^{-H} diag(grad) V^H (the eigenvectors recomputed).
Tensor eigvals_backward(const Tensor& grad, const Tensor& A);
/// eigvalsh's gradient: V diag(grad) V^H (the eigenvectors recomputed).
Tensor eigvalsh_backward(const Tensor& grad, const Tensor& A, const std::string& UPLO);
/// pinv's gradient (constant rank) from P = pinv(A) and its gradient G:
/// -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A).
Tensor pinv_backward(const Tensor& G, const Tensor& P, const Tensor& A);
/// lstsq's gradient for A (`for_A`) or B (full-rank A): through the solution X = pinv(A) B
/// and, where computed (non-empty), the residuals |A X - B|^2 at the optimum.
Tensor lstsq_backward(const Tensor& grad, const Tensor& grad_residuals, const Tensor& A,
                      const Tensor& B, const Tensor& X, bool for_A);
/// matrix_exp's gradient: the upper-right block of exp([[A^T, grad], [0, A^T]]).
Tensor matrix_exp_backward(const Tensor& grad, const Tensor& A);

}  // namespace tp::autograd
