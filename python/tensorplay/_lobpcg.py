"""tp.lobpcg: the k largest (or smallest) eigenpairs of a symmetric positive-definite
(generalized) eigenproblem A X = B X E by the Locally Optimal Block Preconditioned Conjugate
Gradient method, PyTorch's algorithm and parameters: method 'basic' (Knyazev 2001) or
'ortho' (orthogonal basis selection, Stathopoulos and Wu 2002; the default), the backward
stable convergence test of Duersch et al. 2018, an optional preconditioner iK and a tracker
called after every iteration with the worker. Written with tp ops; the starting block is a
tp.randn((m, n)) draw (one per matrix of a batch) when X is not given, PyTorch's draw.

The gradient (B must be None, as in PyTorch) is that of the symmetric eigendecomposition
restricted to the computed eigenpairs: the complete-eigenspace formula when n == m, else the
partial one, which solves a Sylvester equation on the orthogonal complement of U by the
characteristic polynomial of D (Hu and Cheng 2006), as PyTorch does."""
from tensorplay import _C, _composite_ops, autograd, linalg
from tensorplay.random import Generator

Tensor = _C.Tensor


# ---------------------------------------------------------------- small utilities
def _floating_dtype(A):
    return A.dtype if A.dtype in (_C.float16, _C.float32, _C.float64) else _C.float32


def _mm(A, X):
    """A @ X, with A None standing for the identity."""
    return X if A is None else A @ X


def _qform(A, S):
    """S^T A S."""
    return S.mT @ _mm(A, S)


def _symeig(A, largest=False):
    """Eigenpairs of symmetric A (from its upper triangle): ascending, or descending with
    ``largest``."""
    E, Z = linalg.eigh(A, UPLO="U")
    if largest:
        E, Z = E.flip(-1), Z.flip(-1)
    return E, Z


def _basis(A):
    return linalg.qr(A).Q


def _nonzero_index(mask):
    """The indices (int64) where a 1-D bool tensor is set."""
    return mask.nonzero().reshape(-1)


# ------------------------------------------------------------------ the iteration
class LOBPCG:
    """The LOBPCG worker: state of one eigenproblem (A, B, the block X and its Ritz values E,
    residuals R, search space S) and the counters a tracker may read (ivars, fvars, bvars,
    tvars; set ``bvars['force_stop']`` to stop)."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = _C.zeros((n,), dtype=X.dtype, device=X.device)
        self.R = _C.zeros((m, n), dtype=X.dtype, device=X.device)
        self.S = _C.zeros((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars = {}
        self.ivars = {"istep": 0}
        self.fvars = {"_": 0.0}
        self.bvars = {"_": False}

    def __str__(self):
        lines = ["LOBPCG:"] + [f"  {name}={getattr(self, name)}" for name in (
            "iparams", "fparams", "bparams", "ivars", "fvars", "bvars", "tvars", "A", "B", "iK", "X", "E")]
        return "\n".join(lines) + "\n"

    def update(self):
        """One step: the norms on the first, then the method's update."""
        if self.ivars["istep"] == 0:
            X_norm = float(self.X.norm())
            A_norm = float(_mm(self.A, self.X).norm()) / X_norm
            B_norm = float(_mm(self.B, self.X).norm()) / X_norm
            self.fvars.update(X_norm=X_norm, A_norm=A_norm, B_norm=B_norm)
            self.ivars.update(iterations_left=self.iparams["niter"], converged_count=0, converged_end=0)
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self):
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E

    def update_converged_count(self):
        """The leading eigenpairs whose backward relative residual is below tol (counted in
        order, so that converged pairs stay ordered)."""
        prev = self.ivars["converged_count"]
        tol, A_norm, B_norm = self.fparams["tol"], self.fvars["A_norm"], self.fvars["B_norm"]
        E, X, R = self.E, self.X, self.R
        rerr = R.norm(2, (0,)) / (X.norm(2, (0,)) * (A_norm + E[:X.shape[-1]].abs() * B_norm))
        count = 0
        for ok in (rerr < tol).tolist():
            if not ok:
                break
            count += 1
        if count < prev:
            raise AssertionError(f"the number of converged eigenpairs (was {prev}, got {count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self):
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self):
        self.update()
        if self.tracker is not None:
            self.call_tracker()
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.call_tracker()

    def call_tracker(self):
        self.tracker(self)

    # -- the methods' steps
    def _update_basic(self):
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)
            E, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)
            self.X[:] = self.X @ (Ri @ Z)
            self.E[:] = E
            np_ = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            W = _mm(self.iK, self.R)
        else:
            S_ = self.S[:, nc:ns]
            Ri = self._get_rayleigh_ritz_transform(S_)
            E_, Z = _symeig(_qform(_qform(self.A, S_), Ri), largest)
            self.X[:, nc:] = S_ @ (Ri @ Z[:, :n - nc])
            self.E[nc:] = E_[:n - nc]
            P = S_ @ (Ri @ Z[:, n:2 * n - nc])
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[..., :n] = self.X
            self.S[:, n:n + np_] = P
            W = _mm(self.iK, self.R[:, nc:])
        self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _update_ortho(self):
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            Ri = self._get_rayleigh_ritz_transform(self.X)
            _, Z = _symeig(_qform(_qform(self.A, self.X), Ri), largest)
            self.X = self.X @ (Ri @ Z)
            self.update_residual()
            np_ = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._get_ortho(self.R, self.X)
        else:
            S_ = self.S[:, nc:ns]
            E_, Z = _symeig(_qform(self.A, S_), largest)  # Rayleigh-Ritz
            self.X[:, nc:] = S_ @ Z[:, :n - nc]
            self.E[nc:] = E_[:n - nc]
            P = S_ @ (Z[:, n - nc:] @ _basis(Z[:n - nc, n - nc:].mT))
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n:n + np_] = P
            W = self._get_ortho(self.R[:, nc:], self.S[:, :n + np_])
        self.ivars["converged_end"] = ns = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _get_rayleigh_ritz_transform(self, S):
        """Ri (upper triangular) with Ri^T (S^T B S) Ri = I, from the Cholesky factor of S^T B S
        scaled to a unit diagonal: the generalized Rayleigh-Ritz problem becomes a standard one."""
        SBS = _qform(self.B, S)
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = linalg.cholesky((SBS * d_row) * d_col, upper=True)
        return linalg.solve_triangular(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U, drop, tau):
        """U made B-orthonormal (Algorithm 4 of Duersch's thesis, 2015); with ``drop``, the
        columns adding little to span(U) are dropped. Exactly zero columns are dropped first."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nz = _nonzero_index(d.abs() != 0.0)
        if nz.shape[0] < d.shape[0]:
            U = U[:, nz]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        d_col = (d ** -0.5).reshape(d.shape[0], 1)
        E, Z = _symeig((UBU * d_col) * d_col.mT)
        t = tau * float(E.abs().max())
        if drop:
            keep = _nonzero_index(E > t)
            E, Z, d_col = E[keep], Z[:, keep], d_col[keep]
        else:
            E = _C.where(E < t, _C.full((), t, dtype=E.dtype, device=E.device), E)
        return (U * d_col.mT) @ (Z * E ** -0.5)

    def _get_ortho(self, U, V):
        """U made B-orthonormal and B-orthogonal to V (Algorithm 3 of Duersch's thesis, or 6 with
        ortho_use_drop); empty when all of U lies in span(V)."""
        m = self.iparams["m"]
        tau_ortho, tau_drop = self.fparams["ortho_tol"], self.fparams["ortho_tol_drop"]
        tau_replace = self.fparams["ortho_tol_replace"]
        i_max, j_max = self.iparams["ortho_i_max"], self.iparams["ortho_j_max"]
        use_drop = self.bparams["ortho_use_drop"]
        for key in [k for k in self.fvars if k.startswith("ortho_") and k.endswith("_rerr")]:
            self.fvars.pop(key)
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)
        BV_norm = _mm(self.B, V).norm()
        BU = _mm(self.B, U)
        VBU = V.mT @ BU
        i = j = 0
        for i in range(i_max):
            U = U - V @ VBU
            drop, tau_svqb = False, tau_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)
                    drop, tau_svqb = True, tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)
                if U.numel() == 0:  # all of U is B-collinear to V
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _mm(self.B, U)
                UBU = U.mT @ BU
                R = UBU - _C.eye(UBU.shape[-1], dtype=UBU.dtype, device=UBU.device)
                rerr = float(R.norm()) * float(BU.norm() * U.norm()) ** -1
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = V.mT @ BU
            rerr = float(VBU.norm()) * float(BV_norm * U.norm()) ** -1
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if m < U.shape[-1] + V.shape[-1]:
                raise ValueError("Overdetermined shape of U:"
                                 f" #B-cols(={self.B.shape[-1]}) >= #U-cols(={U.shape[-1]}) + "
                                 f"#V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U


def _lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
            method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype, device = _floating_dtype(A), A.device
    if tol is None:
        tol = {_C.float32: 1.2e-07, _C.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)

    def solve_one(A_, B_, X_):
        if X_ is None:
            X_ = _C.randn((m, n), dtype=dtype, device=device)
        if not (X_.dim() == 2 and tuple(X_.shape) == (m, n)):
            raise AssertionError(f"X_ shape mismatch: got {X_.shape}, expected {(m, n)}")
        worker = LOBPCG(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.dim() == 2:
        return solve_one(A, B, X)
    batch = tuple(A.shape[:-2])
    N = 1
    for s in batch:
        N *= s
    bA = A.reshape((N, m, m))
    bB = B.reshape((N, m, m)) if B is not None else None
    bX = X.reshape((N,) + tuple(X.shape[-2:])) if X is not None else None
    Es, Xs = [], []
    for i in range(N):
        iparams["batch_index"] = i
        E_, X_ = solve_one(bA[i], bB[i] if bB is not None else None, bX[i] if bX is not None else None)
        Es.append(E_)
        Xs.append(X_)
    bE = _C.stack(Es) if N else _C.empty((0, k), dtype=dtype, device=device)
    bX_ = _C.stack(Xs) if N else _C.empty((0, m, k), dtype=dtype, device=device)
    return bE.reshape(batch + (k,)), bX_.reshape(batch + (m, k))


# ------------------------------------------------------------------ the gradient
def _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U):
    """A's gradient through A = U diag(D) U^T: U (diag(gD) + (U^T gU) * F) U^T, F_ij =
    1 / (d_j - d_i) off the diagonal and 0 on it."""
    n = D.shape[-1]
    eye = _C.eye(n, dtype=D.dtype, device=D.device)
    gaps = D.unsqueeze(-2) - D.unsqueeze(-1) + eye
    F = (1 - eye) / gaps
    Ut = U.mT
    return U @ ((D_grad.diag_embed() + (Ut @ U_grad) * F) @ Ut)


def _polynomial_coefficients_given_roots(roots):
    """(a_0, ..., a_n = 1) with prod_i (x - r_i) = sum_j a_j x^j, for each row of roots."""
    order = roots.shape[-1]
    shape = tuple(roots.shape[:-1])
    coeffs = [roots.new_ones(shape)]  # the monic polynomial 1, highest power last
    for i in range(order):
        r = roots[..., i]
        # (x - r) * p(x): new_j = p_{j-1} - r p_j
        new = [-r * coeffs[0]]
        for j in range(1, len(coeffs)):
            new.append(coeffs[j - 1] - r * coeffs[j])
        new.append(coeffs[-1])
        coeffs = new
    return _C.stack(coeffs, -1)


def _vector_polynomial_value(poly, x):
    """poly(x) elementwise (poly[..., j] the coefficient of x^j), by Horner's rule."""
    res = x.new_ones(()).expand(x.shape)
    for k in range(poly.shape[-1] - 2, -1, -1):
        res = poly[..., k].unsqueeze(-1) + x * res
    return res


def _matrix_polynomial_value(poly, x):
    """poly(x) for square matrices x, by Horner's rule."""
    n = x.shape[-1]
    eye = _C.eye(n, dtype=x.dtype, device=x.device)
    res = eye.expand(x.shape)
    for k in range(poly.shape[-1] - 2, -1, -1):
        res = x @ res + poly[..., k].unsqueeze(-1).unsqueeze(-1) * eye
    return res


def _symeig_backward_partial_eigenspace(D_grad, U_grad, A, D, U, largest):
    """The gradient for k < m eigenpairs: the part in span(U) as for the complete eigenspace,
    plus the solution of the Sylvester equation U_o^T A U_o dX - dX D = -U_o^T A U on a basis
    U_o of the orthogonal complement (drawn from a fixed-seed generator, as PyTorch's)."""
    Ut = U.mT
    m = A.shape[-1]
    proj = _C.eye(m, dtype=A.dtype, device=A.device) - U @ Ut
    gen = Generator(A.device)  # a fresh generator: the default seed, as PyTorch's
    draw = _C.randn(tuple(A.shape[:-1]) + (m - D.shape[-1],), dtype=A.dtype, device=A.device, generator=gen)
    U_ortho = proj @ draw
    U_ortho_t = U_ortho.mT
    chr_poly_D = _polynomial_coefficients_given_roots(D)
    U_grad_projected = U_grad
    series_acc = U_grad.new_zeros(tuple(U_grad.shape))
    for k in range(1, chr_poly_D.shape[-1]):
        poly_D = _vector_polynomial_value(chr_poly_D[..., k:], D)
        series_acc = series_acc + U_grad_projected * poly_D.unsqueeze(-2)
        U_grad_projected = A @ U_grad_projected
    chr_poly_D_at_A = _matrix_polynomial_value(chr_poly_D, A)
    restricted = U_ortho_t @ (chr_poly_D_at_A @ U_ortho)
    # positive-definite unless the largest eigenvalues were asked for and their count is odd
    sign = -1 if (largest and (D.shape[-1] % 2 == 1)) else 1
    L = linalg.cholesky(sign * restricted)
    res = _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U)
    return res - (U_ortho @ (sign * _composite_ops.cholesky_solve(U_ortho_t @ series_acc, L))) @ Ut


def _symeig_backward(D_grad, U_grad, A, D, U, largest):
    if U.shape[-1] == U.shape[-2]:
        return _symeig_backward_complete_eigenspace(D_grad, U_grad, A, D, U)
    return _symeig_backward_partial_eigenspace(D_grad, U_grad, A, D, U, largest)


class _LOBPCGFunction(autograd.Function):
    @staticmethod
    def forward(ctx, A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                ortho_fparams, ortho_bparams):
        A = A.contiguous()
        B = B.contiguous() if B is not None else None
        D, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                       ortho_fparams, ortho_bparams)
        ctx.save_for_backward(A, B, D, U)
        ctx.largest = largest
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        A, B, D, U = ctx.saved_tensors
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        largest = True if ctx.largest is None else ctx.largest
        if D_grad is None:
            D_grad = D.new_zeros(tuple(D.shape))
        if U_grad is None:
            U_grad = U.new_zeros(tuple(U.shape))
        A_grad = _symeig_backward(D_grad, U_grad, A, D, U, largest)
        return (A_grad,) + (None,) * 13


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (``largest``, default) or smallest eigenvalues E and eigenvectors X
    of the symmetric positive-definite problem A X = B X diag(E) (B the identity when None),
    by LOBPCG: ``(E, X)`` with E (..., k), X (..., m, k).

    X (..., m, n) is the starting block (default: n = k random columns, requiring m >= 3n);
    iK a preconditioner; niter the iteration limit (default 1000); tol the relative residual
    of convergence (default sqrt of the dtype's epsilon); method 'ortho' (default) or
    'basic'; tracker a callable given the LOBPCG worker after each iteration. ortho_iparams /
    ortho_fparams / ortho_bparams tune the ortho method (ortho_i_max, ortho_j_max; ortho_tol,
    ortho_tol_drop, ortho_tol_replace; ortho_use_drop). Differentiable in A when B is None
    (A is symmetrized first, so its gradient is symmetric).

        >>> E, X = tp.lobpcg(A, k=2)
    """
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if B is not None else None
        return _LOBPCGFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, method, tracker,
                                     ortho_iparams, ortho_fparams, ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                   ortho_fparams, ortho_bparams)
