// Backward helpers of the tp.linalg decompositions and solvers. Each is written with
// differentiable tp:: ops (matmul, linalg_solve, linalg_svd, ...), so double backward works.
#include "autograd/formulas_linalg.h"

#include <limits>
#include <vector>

#include "autograd/formula_helpers.h"
#include "ops/shape_utils.h"

namespace tp::autograd {

namespace {

Tensor mT(const Tensor& t) { return transpose(t, -2, -1); }

/// The conjugate of a complex t; t itself otherwise.
Tensor cj(const Tensor& t) { return is_complex(t.dtype()) ? conj_physical(t) : t; }

/// The conjugate transpose (mT for real t).
Tensor mH(const Tensor& t) { return cj(mT(t)); }

/// The size of t's k-th dim from the end (1: the last).
int64_t size_from_end(const Tensor& t, int64_t k) { return t.size(t.dim() - k); }

/// The n x n identity in t's dtype and device.
Tensor identity(int64_t n, const Tensor& t) { return eye(n, std::nullopt, t.dtype(), t.device()); }

/// v (..., n) on the diagonal of (..., n, n) matrices (diag_embed written with mul).
Tensor diag_matrix(const Tensor& v) { return unsqueeze(v, -1) * identity(size_from_end(v, 1), v); }

/// x with its last two dims' diagonal replaced by v (..., n).
Tensor with_diagonal(const Tensor& x, const Tensor& v) {
  Tensor I = identity(size_from_end(x, 1), x);
  return x - x * I + diag_matrix(v);
}

/// Whether any element of a bool tensor (on any device) is set.
bool any_true(const Tensor& mask) {
  if (mask.numel() == 0) return false;
  return host_copy(any(mask)).data<bool>()[0];
}

/// PyTorch's rule for a vector right-hand side of linalg.solve / lstsq: B is 1-D, or has
/// exactly A's batch and rows.
bool is_vector_rhs(const Tensor& A, const Tensor& B) {
  if (B.dim() == 1) return true;
  if (B.dim() != A.dim() - 1) return false;
  for (int64_t d = 0; d < B.dim(); ++d)
    if (B.size(d) != A.size(d)) return false;
  return true;
}

/// E with E_ij = x_j - x_i off the diagonal and 1 on it (the divisor of the svd/eigh
/// gradients; its diagonal is replaced afterwards).
Tensor gaps(const Tensor& x) {
  return unsqueeze(x, -2) - unsqueeze(x, -1) + identity(size_from_end(x, 1), x);
}

/// qr's gradient for rows >= cols (Q m x n, R n x n): with M = R gR^H - gQ^H Q,
/// gA = (gQ + Q copyltu(M)) R^{-H}, copyltu mirroring M's strict lower triangle upwards
/// (conjugated) over the real part of its diagonal (R's diagonal is real).
Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  Tensor M = matmul(R, mH(gR)) - matmul(mH(gQ), Q);
  Tensor sym = is_complex(M.dtype())
                   ? tril(M, -1) + mH(tril(M, -1)) + diag_matrix(real(diagonal(M, 0, -2, -1)))
                   : tril(M) + mT(tril(M, -1));
  return linalg_solve(mH(R), gQ + matmul(Q, sym), false);
}

}  // namespace

// Note [Complex linalg gradients]
// A holomorphic op's formula written as for reals (grad * f'(A)) gives PyTorch's complex
// gradient once the node conjugates grad in and out (Note [Complex gradients of holomorphic
// formulas]): det, inv, solve, the LU family, triangular_solve, matrix_exp. Decompositions
// with real or Hermitian structure (slogdet's log|det|, cholesky, svd/svdvals, eigh/eigvalsh,
// pinv, lstsq) are not holomorphic: their formulas are the real ones with every transpose
// made conjugate (mH) plus the terms only complex inputs have (slogdet's sign, svd's and
// eigh's phase gauge), and the ops say `complex_grad: direct`. For real tensors mH is mT,
// so the real gradients are unchanged.

Tensor det_backward(const Tensor& grad, const Tensor& A, const Tensor& det) {
  if (A.numel() == 0) return zeros(A.sizes(), grad.dtype(), grad.device());
  Tensor g = unsqueeze(unsqueeze(grad, -1), -1);
  if (!any_true(eq(det, zeros_like_scalar(det))))
    return g * unsqueeze(unsqueeze(det, -1), -1) * mT(linalg_inv(A));
  // Some matrix is singular: the adjugate from A = U diag(s) Vh, where
  // adj(A)^T = det(U) det(Vh) conj(U) diag(p) conj(Vh) with p_i the product of the other s_j
  // (conj: the holomorphic derivative of a complex A; Note [Complex linalg gradients]).
  auto [U, S, Vh] = linalg_svd(A, false);
  int64_t n = size_from_end(S, 1);
  Tensor I = identity(n, S);
  Tensor others = unsqueeze(S, -2) * (1.0 - I) + I;  // row i: s with s_i replaced by 1
  Tensor p = prod(others, -1);
  Tensor c = unsqueeze(unsqueeze(linalg_det(U) * linalg_det(Vh), -1), -1);
  return g * c * matmul(cj(U) * unsqueeze(p, -2), cj(Vh));
}

Tensor slogdet_backward(const Tensor& grad_sign, const Tensor& grad_logabsdet, const Tensor& A,
                        const Tensor& sign) {
  if (A.numel() == 0) return zeros(A.sizes(), A.dtype(), A.device());
  auto [inverse, info] = linalg_inv_ex(A);
  Tensor singular = unsqueeze(unsqueeze(ne(info, zeros_like_scalar(info)), -1), -1);
  Tensor inv_h = where(singular, full(IntArrayRef(), std::numeric_limits<double>::quiet_NaN(), A.dtype()),
                       mH(inverse));
  // d log|det| = Re(tr(A^{-1} dA)) and d sign = i sign Im(tr(A^{-1} dA)): both pull back
  // through h * A^{-H} with h = g_logabsdet + i Im(g_sign conj(sign)).
  Tensor h = grad_logabsdet;
  if (is_complex(A.dtype())) h = complex(grad_logabsdet, imag(grad_sign * conj_physical(sign)));
  return unsqueeze(unsqueeze(h, -1), -1) * inv_h;
}

Tensor inv_backward(const Tensor& grad, const Tensor& inverse) {
  Tensor inv_t = mT(inverse);
  return -matmul(matmul(inv_t, grad), inv_t);
}

Tensor solve_backward(const Tensor& grad, const Tensor& A, const Tensor& B, const Tensor& X,
                      bool left, bool for_A) {
  Tensor gB = linalg_solve(mT(A), grad, left);
  if (!for_A) return sum_to(gB, B.sizes());
  Tensor gA;
  if (is_vector_rhs(A, B))
    gA = left ? -(unsqueeze(gB, -1) * unsqueeze(X, -2)) : -(unsqueeze(X, -1) * unsqueeze(gB, -2));
  else
    gA = left ? -matmul(gB, mT(X)) : -matmul(mT(X), gB);
  return sum_to(gA, A.sizes());
}

Tensor cholesky_backward(const Tensor& grad, const Tensor& L, bool upper) {
  Tensor lower = upper ? mH(L) : L;
  Tensor g = upper ? mH(grad) : grad;
  // PyTorch's gradient: L^{-H} S L^{-1} with S = (M + tril(M, -1)^H) / 2, M = tril(L^H gL);
  // Hermitian but for the imaginary part S keeps on its diagonal (symmetric for real A)
  Tensor M = tril(matmul(mH(lower), g));
  Tensor S = 0.5 * (M + mH(tril(M, -1)));
  Tensor inv = linalg_inv(lower);
  return matmul(matmul(mH(inv), S), inv);
}

Tensor qr_backward(const Tensor& grad_Q, const Tensor& grad_R, const Tensor& Q, const Tensor& R,
                   const std::string& mode) {
  TP_CHECK(mode != "r", "linalg.qr: The derivative of linalg.qr depends on Q, which is not "
           "computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
           "to differentiate through linalg.qr.");
  int64_t m = size_from_end(Q, 2), n = size_from_end(R, 1);
  TP_CHECK(!(mode == "complete" && m > n), "linalg.qr: The QR decomposition is not "
           "differentiable when mode='complete' and nrows > ncols.");
  if (m >= n) return qr_backward_tall(grad_Q, grad_R, Q, R);
  // A = [X | Y] with X = Q U square and Y = Q V: Y's part flows through Q as well.
  Tensor U = narrow(R, -1, 0, m), V = narrow(R, -1, m, n - m);
  Tensor gU = narrow(grad_R, -1, 0, m), gV = narrow(grad_R, -1, m, n - m);
  Tensor gX = qr_backward_tall(grad_Q + matmul(matmul(Q, V), mH(gV)), gU, Q, U);
  Tensor gY = matmul(Q, gV);
  return cat(std::vector<Tensor>{gX, gY}, -1);
}

Tensor svd_backward(const Tensor& grad_U, const Tensor& grad_S, const Tensor& grad_Vh,
                    const Tensor& U, const Tensor& S, const Tensor& Vh, bool full_matrices) {
  int64_t m = size_from_end(U, 2), n = size_from_end(Vh, 1), k = size_from_end(S, 1);
  DimVector shape(U.sizes().data(), U.sizes().size());
  shape[shape.size() - 1] = n;
  if (k == 0) return zeros(shape, grad_S.dtype(), grad_S.device());
  Tensor u = U, vh = Vh, gU = grad_U, gVh = grad_Vh;
  if (full_matrices) {
    u = narrow(U, -1, 0, k);
    gU = narrow(grad_U, -1, 0, k);
    vh = narrow(Vh, -2, 0, k);
    gVh = narrow(grad_Vh, -2, 0, k);
  }
  Tensor UtgU = matmul(mH(u), gU), VtgV = matmul(vh, mH(gVh));
  Tensor skewU = UtgU - mH(UtgU), skewV = VtgV - mH(VtgV);
  Tensor E = gaps(S * S);
  Tensor core = (skewU * unsqueeze(S, -2) + unsqueeze(S, -1) * skewV) / E;
  Tensor diag = grad_S;
  if (is_complex(U.dtype())) {
    // The phase gauge: a loss invariant under (u_j, v_j) -> e^{i phi}(u_j, v_j) has
    // Im(u_j^H gu_j) = -Im(v_j^H gv_j); i Im(u_j^H gu_j) / s_j is the diagonal's imaginary part.
    Tensor d = diagonal(UtgU, 0, -2, -1);
    Tensor phase = abs(imag(d) + imag(diagonal(VtgV, 0, -2, -1)));
    TP_CHECK(!any_true(gt(phase, zeros_like_scalar(phase) + 1e-2)),
             "svd_backward: The singular vectors in the complex case are specified up to "
             "multiplication by e^{i phi}. The specified loss function depends on this phase term, "
             "making it ill-defined.");
    diag = complex(grad_S, imag(d) / S);
  }
  core = with_diagonal(core, diag);
  if (m > n) {  // the part of gU outside U's span: (I - U U^H) gU S^{-1}
    Tensor gUSinv = gU / unsqueeze(S, -2);
    Tensor left = matmul(u, core) + gUSinv - matmul(u, matmul(mH(u), gUSinv));
    return matmul(left, vh);
  }
  if (m < n) {  // likewise S^{-1} gVh (I - V V^H)
    Tensor SinvgVh = gVh / unsqueeze(S, -1);
    Tensor right = matmul(core, vh) + SinvgVh - matmul(matmul(SinvgVh, mH(vh)), vh);
    return matmul(u, right);
  }
  return matmul(matmul(u, core), vh);
}

Tensor svdvals_backward(const Tensor& grad, const Tensor& A) {
  auto [U, S, Vh] = linalg_svd(A, false);
  return matmul(U * unsqueeze(grad, -2), Vh);
}

Tensor eigh_backward(const Tensor& grad_L, const Tensor& grad_V, const Tensor& L,
                     const Tensor& V) {
  // Only the skew part of V^H gV moves orthonormal eigenvectors; this also makes the
  // gradient Hermitian, as PyTorch's.
  Tensor VtgV = matmul(mH(V), grad_V);
  if (is_complex(V.dtype())) {
    Tensor phase = abs(imag(diagonal(VtgV, 0, -2, -1)));
    TP_CHECK(!any_true(gt(phase, zeros_like_scalar(phase) + 1e-2)),
             "linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
             "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
             "so it is ill-defined.");
  }
  Tensor inner = with_diagonal((VtgV - mH(VtgV)) * 0.5 / gaps(L), grad_L);
  return matmul(matmul(V, inner), mH(V));
}

// Note [Gradient of eig]
// A = V diag(L) V^{-1} with unit columns v_j. Differentiating A V = V diag(L) and writing
// dV = V C gives V^{-1} dA V = C diag(L) - diag(L) C + diag(dL): dL_i is the (i, i) entry,
// C_ij = (V^{-1} dA V)_ij / (L_j - L_i) off the diagonal. C's diagonal is fixed only up to
// the gauge: |v_j| = 1 pins Re(v_j^H dv_j) = 0, and LAPACK's phase choice is not smooth, so
// a loss must not depend on the phases. Transposing the map for a real loss (gradients
// dL/dRe + i dL/dIm) gives
//   gA = V^{-H} (diag(gL) + offdiag(V^H gV - V^H V Re(diag(V^H gV))) / conj(L_j - L_i)) V^H,
// and phase invariance is exactly Im(diag(V^H gV)) = 0, checked as PyTorch does (1e-2).
// A real A takes the real part (its perturbations are real).
static Tensor eig_pullback(const Tensor& inner, const Tensor& V, DType A_dtype) {
  Tensor Vh = conj_physical(mT(V));
  Tensor gA = linalg_solve(Vh, matmul(inner, Vh));
  return is_complex(A_dtype) ? gA : real(gA);
}

Tensor eig_backward(const Tensor& grad_L, const Tensor& grad_V, const Tensor& L,
                    const Tensor& V, DType A_dtype) {
  Tensor Vh = conj_physical(mT(V));
  Tensor VhgV = matmul(Vh, grad_V);
  Tensor d = diagonal(VhgV, 0, -2, -1);
  Tensor phase = abs(imag(d));
  TP_CHECK(!any_true(gt(phase, zeros_like_scalar(phase) + 1e-2)),
           "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
           "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
           "so it is ill-defined.");
  Tensor inner = VhgV - matmul(Vh, V * unsqueeze(real(d), -2));
  inner = with_diagonal(inner / conj_physical(gaps(L)), grad_L);
  return eig_pullback(inner, V, A_dtype);
}

Tensor eigvals_backward(const Tensor& grad, const Tensor& A) {
  auto [L, V] = linalg_eig(A);
  return eig_pullback(diag_matrix(grad), V, A.dtype());
}

Tensor eigvalsh_backward(const Tensor& grad, const Tensor& A, const std::string& UPLO) {
  auto [L, V] = linalg_eigh(A, UPLO);
  return matmul(V * unsqueeze(grad, -2), mH(V));
}

Tensor pinv_backward(const Tensor& G, const Tensor& P, const Tensor& A) {
  Tensor Pt = mH(P), Gt = mH(G);
  Tensor X = matmul(matmul(Gt, P), Pt);
  Tensor Y = matmul(matmul(Pt, P), Gt);
  return -matmul(matmul(Pt, G), Pt) + X - matmul(A, matmul(P, X)) + Y -
         matmul(matmul(Y, P), A);
}

Tensor lstsq_backward(const Tensor& grad, const Tensor& grad_residuals, const Tensor& A,
                      const Tensor& B, const Tensor& X, bool for_A) {
  bool vector = is_vector_rhs(A, B);
  Tensor gX = vector ? unsqueeze(grad, -1) : grad;
  Tensor Bm = vector ? unsqueeze(B, -1) : B;
  Tensor P = linalg_pinv(A);
  Tensor g = for_A ? pinv_backward(matmul(gX, mH(Bm)), P, A) : matmul(mH(P), gX);
  if (grad_residuals.numel() > 0) {  // residuals |A x - b|^2 at the optimum x
    Tensor Xm = vector ? unsqueeze(X, -1) : X;
    Tensor gr = unsqueeze(vector ? unsqueeze(grad_residuals, -1) : grad_residuals, -2);
    Tensor R = (matmul(A, Xm) - Bm) * gr * 2.0;
    g = for_A ? g + matmul(R, mH(Xm)) : g - R;
  }
  if (for_A) return sum_to(g, A.sizes());
  if (vector) g = select(g, -1, 0);
  return sum_to(g, B.sizes());
}

Tensor matrix_exp_backward(const Tensor& grad, const Tensor& A) {
  int64_t n = size_from_end(A, 1);
  Tensor At = mT(A);
  Tensor top = cat(std::vector<Tensor>{At, grad}, -1);
  Tensor bottom = cat(std::vector<Tensor>{zeros_like_grad(grad), At}, -1);
  Tensor block = linalg_matrix_exp(cat(std::vector<Tensor>{top, bottom}, -2));
  return narrow(narrow(block, -2, 0, n), -1, n, n);
}

}  // namespace tp::autograd
