"""Randomized low-rank SVD and PCA (tp.svd_lowrank, tp.pca_lowrank): Halko, Martinsson and
Tropp's range finder (Algorithm 4.4 of arXiv:0909.4061: a Gaussian sketch, then ``niter``
power iterations re-orthonormalized by QR) and the SVD of the projected matrix (Algorithm 5.1).
Written with tp ops (matmul, linalg.qr, linalg.svd), so gradients, batches and every device
follow from theirs. The sketch is one tp.randn((n, q)) draw from the default generator, the
draw PyTorch makes: with the same seed both libraries sketch with the same matrix."""
from tensorplay import _C, linalg

Tensor = _C.Tensor


def _floating_dtype(A):
    """A's dtype when floating (float16/32/64), else float32 (PyTorch's get_floating_dtype)."""
    return A.dtype if A.dtype in (_C.float16, _C.float32, _C.float64) else _C.float32


def get_approximate_basis(A, q, niter=2, M=None):
    """Q with ``q`` orthonormal columns such that Q Q^T (A - M) approximates A - M (M = 0 when
    None), from a Gaussian sketch and ``niter`` subspace iterations."""
    niter = 2 if niter is None else niter
    R = _C.randn((A.shape[-1], q), dtype=_floating_dtype(A), device=A.device)
    X = A @ R
    if M is not None:
        X = X - M @ R
    Q = linalg.qr(X).Q
    for _ in range(niter):
        X = A.mT @ Q
        if M is not None:
            X = X - M.mT @ Q
        Q = linalg.qr(X).Q
        X = A @ Q
        if M is not None:
            X = X - M @ Q
        Q = linalg.qr(X).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:  # sketch the taller of A and A^T
        A = A.mT
        if M is not None:
            M = M.mT
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = Q.mT @ A
    if M is not None:
        B = B - Q.mT @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    V = Vh.mT
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate SVD ``(U, S, V)`` of A (or of A - M, M broadcast to A) of rank ``q``:
    A ~ U diag(S) V^T, with U (..., m, q), S (..., q), V (..., n, q). Randomized (the default
    generator draws the sketch); ``niter`` subspace iterations sharpen it. Prefer
    tp.linalg.svd for dense matrices that fit: it is exact and faster.

        >>> U, S, V = tp.svd_lowrank(A, q=4)
    """
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal component analysis of the data matrix A (m samples by n features): the
    approximate SVD ``(U, S, V)`` of A with its column means subtracted (``center``), of rank
    ``q`` (default min(6, m, n)). V's columns are the principal directions, S**2 / (m - 1) the
    variances along them, A @ V[:, :k] the projection onto the first k."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)
    return _svd_lowrank(A - C, q, niter=niter, M=None)
