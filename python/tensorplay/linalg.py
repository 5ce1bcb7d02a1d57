"""tp.linalg: PyTorch's torch.linalg namespace.

Each function here is the C++ op ``linalg_<name>`` (defined in csrc/ops/*.yaml) under its
torch.linalg name; add new ones the same way (one line each, plus a docstring).

    import tensorplay as tp
    A = tp.tensor([[4.0, 1.0], [1.0, 3.0]])
    tp.linalg.solve(A, tp.tensor([1.0, 2.0]))
"""
from tensorplay import _C

# ---------------------------------------------------------------------------------------
# Norms (csrc/ops/norms.cpp). Matrix ord 2, -2 and 'nuc' raise NotImplementedError.
# ---------------------------------------------------------------------------------------


def _export(name, doc):
    fn = getattr(_C, "linalg_" + name)

    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = __name__
    wrapper.__doc__ = doc
    return wrapper


vector_norm = _export("vector_norm", """vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None)

The ord-norm of the elements of ``x`` over ``dim`` (all of them by default); ord may be
any real number, ``inf`` (max |x|), ``-inf`` (min |x|) or 0 (count of nonzeros).

    >>> tp.linalg.vector_norm(tp.tensor([3.0, 4.0]))
    tensor(5.)
""")

matrix_norm = _export("matrix_norm", """matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None, out=None)

The norm of the matrices in dims ``dim`` of ``A``: 'fro', 1, -1, inf or -inf.
ord 2, -2 and 'nuc' need singular values and raise NotImplementedError for now.
""")

norm = _export("norm", """norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None)

A vector norm (``dim`` of one dim, or a 1-D input) or a matrix norm (``dim`` of two dims,
or a 2-D input when ``ord`` is given); without ``ord`` and ``dim``, the 2-norm of all elements.
""")


# ---------------------------------------------------------------------------------------
# Products (csrc/ops/matmul.cpp)
# ---------------------------------------------------------------------------------------

cross = _export("cross", """cross(input, other, *, dim=-1, out=None)

The cross product of 3-vectors along ``dim`` (input and other broadcast).
""")

# ---------------------------------------------------------------------------------------
# Decompositions, solvers and functions built on them (LAPACK; cuSOLVER on CUDA; ops in
# csrc/ops/linalg_decomp.yaml as linalg_<name>). float32/float64; batches over leading dims.
# ---------------------------------------------------------------------------------------

LinAlgError = _C._LinAlgError  # a RuntimeError, as torch.linalg.LinAlgError

det = _C.linalg_det
inv = _C.linalg_inv
solve = _C.linalg_solve
cholesky = _C.linalg_cholesky
svdvals = _C.linalg_svdvals
eigvalsh = _C.linalg_eigvalsh
lstsq = _C.linalg_lstsq
matrix_power = _C.linalg_matrix_power
matrix_exp = _C.linalg_matrix_exp


def _with_out(name, result, out):
    """result, or result written into the tuple out= (PyTorch's rules: same dtypes, resized)."""
    if out is None:
        return result
    if not isinstance(out, (tuple, list)) or len(out) != len(result):
        raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors, "
                        f"not {type(out).__name__}")
    for r, o in zip(result, out):
        if r.dtype != o.dtype:
            raise RuntimeError(f"{name}: Expected out tensor to have dtype {r.dtype}, but got "
                               f"{o.dtype} instead")
    for r, o in zip(result, out):
        _C._linalg_write_out(r, out=o)
    return type(result)(*out)


def slogdet(A, *, out=None):
    """Sign and natural log of the absolute value of the determinant.

        sign, logabsdet = tp.linalg.slogdet(A)   # det = sign * exp(logabsdet)
    """
    return _with_out("linalg.slogdet", _C.linalg_slogdet(A), out)


def inv_ex(A, *, check_errors=False, out=None):
    """Inverse and LAPACK's info per matrix (info > 0: singular); raises only if check_errors."""
    return _with_out("linalg.inv_ex", _C.linalg_inv_ex(A, check_errors=check_errors), out)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """Cholesky factor and info per matrix (info > 0: not positive-definite)."""
    return _with_out("linalg.cholesky_ex",
                     _C.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors), out)


def qr(A, mode="reduced", *, out=None):
    """QR decomposition; mode 'reduced' (default), 'complete' or 'r' (Q empty)."""
    return _with_out("linalg.qr", _C.linalg_qr(A, mode), out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """Singular value decomposition A = U @ diag(S) @ Vh (S descending)."""
    return _with_out("linalg.svd", _C.linalg_svd(A, full_matrices, driver=driver), out)


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, read from triangle UPLO."""
    return _with_out("linalg.eigh", _C.linalg_eigh(A, UPLO), out)


def _check_tolerances(name, atol, rtol):
    """PyTorch's overloads take atol and rtol both as numbers or both as tensors."""
    kinds = {isinstance(t, (int, float)) for t in (atol, rtol) if t is not None}
    if len(kinds) > 1:
        raise TypeError(f"{name}() received an invalid combination of arguments: atol and rtol "
                        "must both be numbers or both be tensors")


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Moore-Penrose pseudo-inverse; singular values <= max(atol, rtol * largest) count as 0.
    atol and rtol are numbers or tensors broadcast with A's batch dims.

    ``pinv(A, rcond)`` is PyTorch's older form: rtol=rcond, atol=0.
    """
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.pinv(): rcond cannot be combined with atol or rtol")
        atol, rtol = (0.0 if isinstance(rcond, (int, float)) else rcond * 0), rcond
    _check_tolerances("linalg_pinv", atol, rtol)
    return _C.linalg_pinv(A, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Numerical rank: the number of singular values > max(atol, rtol * largest).

    ``matrix_rank(A, tol)`` is PyTorch's older form: atol=tol, rtol=0.
    """
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank(): tol cannot be combined with atol or rtol")
        atol, rtol = tol, (0.0 if isinstance(tol, (int, float)) else tol * 0)
    _check_tolerances("linalg_matrix_rank", atol, rtol)
    if rtol is not None and getattr(A, "dtype", None) not in (_C.float32, _C.float64, None):
        # PyTorch's paths with tol= or rtol= have no dtype check of their own: its SVD/eigh raises
        (eigvalsh if hermitian else svdvals)(A)
    return _C.linalg_matrix_rank(A, atol=atol, rtol=rtol, hermitian=hermitian, out=out)

# ----------------------------------------------------------- end of decompositions block


def householder_product(A, tau):
    """The first n columns of the product of the Householder reflectors stored in ``A``'s
    columns with factors ``tau`` (see tp.geqrf); differentiable in both."""
    from tensorplay._householder import householder_product as product
    return product(A, tau)
