// Backward helpers of the LU family (formulas_linalg_lu.h).
#include "autograd/formulas_linalg_lu.h"

#include <algorithm>
#include <vector>

#include "autograd/formula_helpers.h"

namespace tp::autograd {

namespace {

Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }

/// The conjugate transpose (mT for real t).
Tensor mH(const Tensor& t) { return is_complex(t.dtype()) ? conj_physical(mT(t)) : mT(t); }

/// X with T X = B (left) or X T = B, T triangular (upper or lower, unit diagonal if asked).
Tensor tri_solve(const Tensor& T, const Tensor& B, bool upper, bool left, bool unit = false) {
  if (left) return std::get<0>(triangular_solve(B, T, upper, false, unit));
  return mT(std::get<0>(triangular_solve(mT(B), T, upper, true, unit)));  // T^T X^T = B^T
}

Tensor cat2(const Tensor& a, const Tensor& b, int64_t dim) { return cat(std::vector<Tensor>{a, b}, dim); }

}  // namespace

Tensor linalg_lu_backward(const Tensor& gL, const Tensor& gU, const Tensor& P, const Tensor& L, const Tensor& U,
                          bool pivot) {
  int64_t m = L.size(-2), k = L.size(-1), n = U.size(-1);
  DimVector shape(L.sizes().data(), L.sizes().size());
  shape[shape.size() - 1] = n;
  if (L.numel() == 0 || U.numel() == 0) return zeros(shape, L.dtype(), L.device());
  Tensor gA;
  if (m == n) {
    // gA = P L^{-T} (tril(L^T gL, -1) + triu(gU U^T)) U^{-T}
    Tensor phi = tril(matmul(mT(L), gL), -1) + triu(matmul(gU, mT(U)));
    gA = tri_solve(mT(L), tri_solve(mT(U), phi, false, false), true, true, true);
  } else if (m < n) {
    // A = P L [U1 | U2]: the square part as above with L's gradient less the one U2 = L^{-1} P^T A2
    // passes on; A2's gradient is P L^{-T} gU2
    Tensor U1 = narrow(U, -1, 0, k), gU1 = narrow(gU, -1, 0, k), U2 = narrow(U, -1, k, n - k),
           gU2 = narrow(gU, -1, k, n - k);
    Tensor phi = tril(matmul(mT(L), gL) - matmul(gU2, mT(U2)), -1) + triu(matmul(gU1, mT(U1)));
    gA = tri_solve(mT(L), cat2(tri_solve(mT(U1), phi, false, false), gU2, -1), true, true, true);
  } else {
    // A = P [L1; L2] U: likewise with U's gradient less the one L2 = A2 U^{-1} passes on; A2's
    // gradient is gL2 U^{-T}
    Tensor L1 = narrow(L, -2, 0, k), gL1 = narrow(gL, -2, 0, k), L2 = narrow(L, -2, k, m - k),
           gL2 = narrow(gL, -2, k, m - k);
    Tensor phi = tril(matmul(mT(L1), gL1), -1) + triu(matmul(gU, mT(U)) - matmul(mT(L2), gL2));
    gA = tri_solve(mT(U), cat2(tri_solve(mT(L1), phi, true, true, true), gL2, -2), false, false);
  }
  return pivot ? matmul(P, gA) : gA;
}

Tensor lu_factor_ex_backward(const Tensor& grad, const Tensor& LU, const Tensor& pivots, bool pivot) {
  int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  if (LU.numel() == 0) return zeros(LU.sizes(), grad.dtype(), grad.device());
  auto [P, L, U] = lu_unpack(LU, pivots, true, pivot);
  Tensor gL = tril(narrow(grad, -1, 0, k), -1), gU = triu(narrow(grad, -2, 0, k));
  return linalg_lu_backward(gL, gU, P, L, U, pivot);
}

Tensor lu_unpack_backward(const Tensor& gL, const Tensor& gU, IntArrayRef LU_sizes, bool unpack_data) {
  // without unpack_data L and U are empty placeholders; PyTorch's formula then fails in triu
  TP_CHECK(unpack_data, "triu: input tensor must have at least 2 dimensions");
  int64_t m = LU_sizes[LU_sizes.size() - 2], n = LU_sizes[LU_sizes.size() - 1], k = std::min(m, n);
  std::array<int64_t, 2> pad_cols{0, n - k};
  std::array<int64_t, 4> pad_rows{0, 0, 0, m - k};
  Tensor g = tril(constant_pad_nd(gL, pad_cols), -1) + triu(constant_pad_nd(gU, pad_rows));
  return sum_to(g, LU_sizes);
}

Tensor linalg_lu_solve_LU(const Tensor& grad, const Tensor& LU, const Tensor& pivots, const Tensor& X, bool left,
                          bool adjoint) {
  if (LU.numel() == 0 || X.numel() == 0) return zeros(LU.sizes(), grad.dtype(), grad.device());
  // the gradient of A, op(A) X = B (left) or X op(A) = B with op(A) = A^H when adjoint,
  // from gB = the solve of grad with the other op (complex_grad: direct, as adjoint
  // conjugates: Note [Complex linalg gradients])
  Tensor gB = linalg_lu_solve(LU, pivots, grad, left, !adjoint);
  Tensor gA = left ? (adjoint ? -matmul(X, mH(gB)) : -matmul(gB, mH(X)))
                   : (adjoint ? -matmul(mH(gB), X) : -matmul(mH(X), gB));
  // onto A = P L U: gL = P^T gA U^H, gU = L^H P^T gA
  auto [P, L, U] = lu_unpack(LU, pivots, true, true);
  Tensor PtgA = matmul(mT(P), gA);
  Tensor g = tril(matmul(PtgA, mH(U)), -1) + triu(matmul(mH(L), PtgA));
  return sum_to(g, LU.sizes());
}

Tensor linalg_lu_solve_B(const Tensor& grad, const Tensor& LU, const Tensor& pivots, IntArrayRef B_sizes, bool left,
                         bool adjoint) {
  return sum_to(linalg_lu_solve(LU, pivots, grad, left, !adjoint), B_sizes);
}

std::tuple<Tensor, Tensor> linalg_solve_ex_backward(const Tensor& grad, const Tensor& A, const Tensor& B,
                                                    const Tensor& X, bool left, std::array<bool, 2> mask) {
  bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && std::equal(B.sizes().begin(), B.sizes().end(),
                                                                      A.sizes().begin()));
  Tensor gX = vector ? unsqueeze(grad, -1) : grad;
  Tensor Xm = vector ? unsqueeze(X, -1) : X;
  auto [LU, pivots, info] = linalg_lu_factor_ex(A);  // A's factors again (differentiable)
  Tensor gB = linalg_lu_solve(LU, pivots, gX, left, true);  // A^{-H} gX (complex_grad: direct)
  Tensor gA;
  if (mask[0]) gA = sum_to(left ? -matmul(gB, mH(Xm)) : -matmul(mH(Xm), gB), A.sizes());
  if (mask[1]) gB = sum_to(vector ? select(gB, -1, 0) : gB, B.sizes());
  return {gA, gB};
}

std::tuple<Tensor, Tensor> triangular_solve_backward(const Tensor& gX, const Tensor& gC, const Tensor& b,
                                                     const Tensor& A, const Tensor& X, bool upper, bool transpose,
                                                     bool unitriangular, std::array<bool, 2> mask) {
  Tensor gb = std::get<0>(triangular_solve(gX, A, upper, !transpose, unitriangular));
  Tensor gA;
  if (mask[1]) {
    gA = transpose ? -matmul(X, mT(gb)) : -matmul(gb, mT(X));
    gA = upper ? triu(gA, unitriangular ? 1 : 0) : tril(gA, unitriangular ? -1 : 0);
    gA = sum_to(gA + gC, A.sizes());
  }
  if (mask[0]) gb = sum_to(gb, b.sizes());
  return {gb, gA};
}

}  // namespace tp::autograd
