"""tp.linalg: PyTorch's torch.linalg namespace.

Each function here is the C++ op ``linalg_<name>`` (defined in csrc/ops/*.yaml) under its
torch.linalg name; add new ones the same way (one line each, plus a docstring).

    import tensorplay as tp
    A = tp.tensor([[4.0, 1.0], [1.0, 3.0]])
    tp.linalg.solve(A, tp.tensor([1.0, 2.0]))
"""
from tensorplay import _C
from tensorplay._dtype import can_cast as _can_cast

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
eigvals = _C.linalg_eigvals
lstsq = _C.linalg_lstsq
matrix_power = _C.linalg_matrix_power
matrix_exp = _C.linalg_matrix_exp


def _check_tuple_out(op, out):
    """PyTorch's binding refuses a tuple out= that is no tuple before the op runs."""
    if out is not None and not isinstance(out, (tuple, list)):
        raise TypeError(f"{op}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")


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


def eig(A, *, out=None):
    """Eigenvalues and right eigenvectors (unit norm, as LAPACK's geev gives them) of general
    square matrices; complex results, for real A too.

        L, V = tp.linalg.eig(A)   # A @ V == V * L.unsqueeze(-2)
    """
    _check_tuple_out("linalg_eig", out)
    result = _C.linalg_eig(A)
    if out is None:
        return result
    if len(out) != 2:
        raise TypeError(f"linalg.eig(): argument 'out' must be tuple of 2 Tensors, not {type(out).__name__}")
    # PyTorch's rule: out= may have any dtype the result casts to safely (complex128 too)
    for r, o, what in zip(result, out, ("eigenvalues", "eigenvectors")):
        if not _can_cast(r.dtype, o.dtype):
            raise RuntimeError(f"linalg.eig: Expected {what} to be safely castable from "
                               f"{r.dtype} dtype, but got {what} with dtype {o.dtype}")
    for r, o in zip(result, out):
        _C._linalg_write_out(r.to(o.dtype), out=o)
    return type(result)(*out)


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
    if rcond is None and (out is None or (isinstance(A, _C.Tensor) and isinstance(out, _C.Tensor)
                                          and _can_cast(A.dtype, out.dtype))):
        _size_minus_two_of_a_vector(A, atol, rtol)
    return _C.linalg_pinv(A, atol=atol, rtol=rtol, hermitian=hermitian, out=out)


def _size_minus_two_of_a_vector(A, atol, rtol):
    """PyTorch's pinv / matrix_rank(out=) with a number atol alone read A.size(-2) before their
    own rank check: IndexError for a 0-d or 1-d A (pinv's out= of another dtype is refused first,
    by _C.linalg_pinv)."""
    if isinstance(atol, (int, float)) and rtol is None and isinstance(A, _C.Tensor) and A.dim() < 2:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions" if A.dim() == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got -2)")


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Numerical rank: the number of singular values > max(atol, rtol * largest).

    ``matrix_rank(A, tol)`` is PyTorch's older form: atol=tol, rtol=0.
    """
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank(): tol cannot be combined with atol or rtol")
        atol, rtol = tol, (0.0 if isinstance(tol, (int, float)) else tol * 0)
    _check_tolerances("linalg_matrix_rank", atol, rtol)
    if out is not None and tol is None:
        _size_minus_two_of_a_vector(A, atol, rtol)
    if rtol is not None and getattr(A, "dtype", None) not in (_C.float32, _C.float64, None) \
            and not (A.dim() >= 2 and A.numel() == 0):  # (PyTorch returns an empty input's rank first)
        # PyTorch's paths with tol= or rtol= have no dtype check of their own: its SVD/eigh raises
        (eigvalsh if hermitian else svdvals)(A)
    return _C.linalg_matrix_rank(A, atol=atol, rtol=rtol, hermitian=hermitian, out=out)

# ---- LU and LDL families (csrc/ops/linalg_lu.{yaml,cpp}) ---------------------------------

lu_solve = _C.linalg_lu_solve
ldl_solve = _C.linalg_ldl_solve


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """Compact LU factors of A = P L U (L's unit diagonal implicit; getrf), the 1-based int32
    row interchanges ``pivots`` and LAPACK's ``info`` per matrix (> 0: U[info, info] is zero);
    raises only with ``check_errors``. ``pivot=False`` is not implemented on the CPU (as in
    PyTorch).

        >>> LU, pivots, info = tp.linalg.lu_factor_ex(A)
        >>> X = tp.linalg.lu_solve(LU, pivots, B)
    """
    _check_tuple_out("linalg_lu_factor_ex", out)
    return _with_out("linalg.lu_factor_ex",
                     _C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors), out)


def lu_factor(A, *, pivot=True, out=None):
    """Compact LU factors and pivots (see lu_factor_ex); RuntimeError if some U has a zero on
    its diagonal (lu_solve would divide by it)."""
    _check_tuple_out("linalg_lu_factor", out)
    return _with_out("linalg.lu_factor", _C.linalg_lu_factor(A, pivot=pivot), out)


def lu(A, *, pivot=True, out=None):
    """A = P L U with P a permutation matrix, L unit lower trapezoidal (m x k) and U upper
    trapezoidal (k x n), k = min(m, n). Singular matrices factor too (U then has zeros on its
    diagonal)."""
    _check_tuple_out("linalg_lu", out)
    return _with_out("linalg.lu", _C.linalg_lu(A, pivot=pivot), out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """linalg.solve's solution and LAPACK's ``info`` per matrix of A (> 0: singular, in which
    case the solution holds infs/NaNs); raises only with ``check_errors``."""
    _check_tuple_out("linalg_solve_ex", out)
    return _with_out("linalg.solve_ex", _C.linalg_solve_ex(A, B, left=left, check_errors=check_errors),
                     out)


def ldl_factor_ex(input, *, hermitian=False, check_errors=False, out=None):
    """Bunch-Kaufman factors of symmetric matrices (sytrf on the lower triangle): ``LD`` holds
    L (unit lower, implicit diagonal) below and D's 1x1 / 2x2 blocks on and next to the
    diagonal; ``pivots`` are LAPACK's (negative for 2x2 blocks); ``info`` > 0 where D is
    singular. For ldl_solve."""
    _check_tuple_out("linalg_ldl_factor_ex", out)
    return _with_out("linalg.ldl_factor_ex",
                     _C.linalg_ldl_factor_ex(input, hermitian=hermitian, check_errors=check_errors), out)


def ldl_factor(input, *, hermitian=False, out=None):
    """LD and pivots of ldl_factor_ex; RuntimeError where D is singular."""
    _check_tuple_out("linalg_ldl_factor", out)
    return _with_out("linalg.ldl_factor", _C.linalg_ldl_factor(input, hermitian=hermitian), out)

# ----------------------------------------------------------- end of decompositions block


def householder_product(A, tau):
    """The first n columns of the product of the Householder reflectors stored in ``A``'s
    columns with factors ``tau`` (see tp.geqrf); differentiable in both."""
    from tensorplay._householder import householder_product as product
    return product(A, tau)


# ---- composites of other ops --------------------------------------------------------------

def matmul(input, other, *, out=None):
    """tp.matmul under its torch.linalg name."""
    return _C.matmul(input, other, out=out) if out is not None else _C.matmul(input, other)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in ``A`` (tp.diagonal with matrix-style defaults)."""
    return _C.diagonal(A, offset, dim1, dim2)


def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of ``x`` and ``y`` along ``dim`` after broadcasting them; a complex
    ``x`` is conjugated, as in vdot.

        >>> tp.linalg.vecdot(tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0]))
        tensor(11.)
    """
    from tensorplay._shape_ops import _KERNEL_DTYPE_NAMES as names
    for name, t in (('x', x), ('y', y)):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"linalg_vecdot(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {names[x.dtype._name]}")
    if x.dtype != y.dtype:
        raise RuntimeError("linalg.vecdot: Expected x and y to have the same dtype, but found x of "
                           f"type {names[x.dtype._name]} and y of type {names[y.dtype._name]} instead")
    try:
        product = (x.conj() if x.is_complex() else x) * y
    except RuntimeError as e:  # the shapes do not broadcast
        raise RuntimeError(f"linalg.vecdot: {e}") from None
    result = product.sum(dim)
    return out.copy_(result) if out is not None else result


def multi_dot(tensors, *, out=None):
    """The product of a list of matrices (the first and last may be vectors), multiplied in
    the order that needs the fewest scalar products."""
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    for pos, t in ((0, first), (n - 1, last)):
        if t.dim() not in (1, 2):
            which = 'first' if pos == 0 else 'last'
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got "
                               f"{t.dim()}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    mats = list(tensors)
    if first.dim() == 1:
        mats[0] = first.unsqueeze(0)
    if last.dim() == 1:
        mats[-1] = last.unsqueeze(1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               f"cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    # cost[i][j]: fewest multiplications for mats[i..j]; split[i][j]: where to cut
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return _C.mm(product(i, k), product(k + 1, j))

    result = product(0, n - 1)
    if first.dim() == 1:
        result = result.squeeze(0)
    if last.dim() == 1:
        result = result.squeeze(-1)
    return out.copy_(result) if out is not None else result


def tensorinv(A, ind=2, *, out=None):
    """The tensor B with tensordot(A, B, ind) the identity: A's first ``ind`` dimensions
    against the rest, inverted as one square matrix."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = 1, 1
    for s in A.shape[:ind]:
        rows *= s
    for s in A.shape[ind:]:
        cols *= s
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    result = inv(A.reshape(rows, cols)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))
    return out.copy_(result) if out is not None else result


def tensorsolve(A, B, dims=None, *, out=None):
    """The X with tensordot(A, X, X.dim()) == B (``dims``: A's dimensions moved to the end
    first)."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.permute([d for d in range(A.dim()) if d not in dims] + dims)
    rows = B.numel()
    x_shape = tuple(A.shape[B.dim():])
    cols = 1
    for s in x_shape:
        cols *= s
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                           f"== prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    result = solve(A.reshape(rows, cols), B.reshape(rows)).reshape(x_shape)
    return out.copy_(result) if out is not None else result


def vander(x, *, N=None):
    """The Vandermonde matrices of the last dimension of ``x``: shape (..., n, N), columns
    x**0, x**1, ..., x**(N-1)."""
    if x.dim() < 1:
        raise RuntimeError("N must be greater than 1.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.new_ones(tuple(x.shape) + (1,))
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return _C.cat([ones, powers], -1)


def _substitute(A, B, upper, unitriangular):
    """X with A X = B for the triangle of A (batched), one row of X at a time: forward
    substitution for lower triangles, back substitution for upper ones. A zero on the
    diagonal gives inf/nan, as LAPACK's trsm does."""
    n = A.shape[-1]
    rows = [None] * n
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        acc = B[..., i, :]
        known = [j for j in (range(i + 1, n) if upper else range(i)) if rows[j] is not None]
        if known:
            coeffs = _C.stack([A[..., i, j] for j in known], -1)
            acc = acc - (coeffs.unsqueeze(-1) * _C.stack([rows[j] for j in known], -2)).sum(-2)
        rows[i] = acc if unitriangular else acc / A[..., i, i].unsqueeze(-1)
    return _C.stack(rows, -2)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (``left``) or X A = B, using only the upper or lower triangle of A
    (its diagonal taken as ones with ``unitriangular``); batches broadcast.

        >>> A = tp.tensor([[2., 1.], [0., 4.]])
        >>> tp.linalg.solve_triangular(A, tp.tensor([[3.], [4.]]), upper=True)
        tensor([[1.],
                [1.]])
    """
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they "
                           f"are {A.shape[-2] if A.dim() >= 2 else A.shape[-1]} by {A.shape[-1]} matrices")
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{eq} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if not A.is_floating_point() and not A.is_complex():
        name = {_C.int32: 'Int', _C.int64: 'Long', _C.int16: 'Short', _C.int8: 'Char', _C.uint8: 'Byte',
                _C.bool: 'Bool'}[A.dtype]
        raise NotImplementedError(f'"triangular_solve_cpu" not implemented for \'{name}\'')
    B = B.to(A.dtype)  # the result takes A's dtype, as PyTorch's
    if not left:  # X A = B  <=>  A^T X^T = B^T
        result = _substitute(A.transpose(-2, -1), B.transpose(-2, -1), not upper,
                             unitriangular).transpose(-2, -1)
    else:
        result = _substitute(A, B, upper, unitriangular)
    if out is not None:
        out.copy_(result)
        return out
    return result
