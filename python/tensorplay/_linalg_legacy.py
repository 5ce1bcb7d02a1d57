"""PyTorch's top-level linear-algebra names outside torch.linalg that compose from the linalg
ops: tp.lu (linalg.lu_factor_ex with PyTorch's legacy result), the tuple out= of tp.lu_unpack,
tp.orgqr (linalg.householder_product), tp.ormqr (the product of geqrf's Householder
reflectors with a matrix, reflector by reflector: differentiable in all three inputs),
tp.nuclear_norm and tp.frobenius_norm, and the Tensor methods lu, orgqr and ormqr; it also
installs tp.svd_lowrank / tp.pca_lowrank (_lowrank.py) and tp.lobpcg (_lobpcg.py).
tp.lu_solve, tp.triangular_solve and their methods are C++ ops (csrc/ops/linalg_lu.yaml)."""
from tensorplay import _C, linalg, return_types
from tensorplay._statistics import _require_tensor

Tensor = _C.Tensor


def _write_tuple_out(name, result, out, expected):
    """``out`` (a tuple of ``expected`` tensors) filled with ``result`` (same dtypes; resized
    with the result's layout), returned as ``result``'s type."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    if len(out) != expected:
        raise TypeError(f"{name}(): argument 'out' must be tuple of {expected} Tensors")
    return linalg._with_out(name, result, out)


def lu(A, pivot=True, get_infos=False, out=None):
    """The LU factorization in torch.lu's legacy form: ``(LU, pivots)``, or ``(LU, pivots,
    infos)`` with ``get_infos``. It never raises for singular matrices (see infos). Prefer
    tp.linalg.lu_factor / lu_factor_ex."""
    if out is not None and not isinstance(out, (tuple, list)):
        raise TypeError(f"argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    LU, pivots, infos = _C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    result = return_types._lu_with_info(LU, pivots, infos) if get_infos else (LU, pivots)
    if out is None:
        return result
    if len(out) - int(bool(get_infos)) != 2:
        raise TypeError(f"expected tuple of {2 + int(bool(get_infos))} elements but got {len(out)}")
    for r, o in zip(result, out):  # PyTorch's resize_as_ + copy_: any dtype the result casts to
        _C._linalg_write_out(r.to(o.dtype), out=o)
    return type(result)(*out) if get_infos else tuple(out)


def _tensor_lu(self, pivot=True, get_infos=False):
    """See tp.lu (a plain tuple, as PyTorch's method)."""
    LU, pivots, infos = _C.linalg_lu_factor_ex(self, pivot=pivot, check_errors=False)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """P, L and U of A = P L U from lu_factor's compact ``LU_data`` and ``LU_pivots``;
    ``unpack_data=False`` leaves L and U empty, ``unpack_pivots=False`` leaves P empty."""
    linalg._check_tuple_out("lu_unpack", out)
    result = _C.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    return result if out is None else _write_tuple_out("lu_unpack", result, out, 3)


def orgqr(input, tau, *, out=None):
    """Alias of tp.linalg.householder_product: the first n columns of the product of geqrf's
    Householder reflectors."""
    _require_tensor('orgqr', 'input', input, 1)
    _require_tensor('orgqr', 'tau', tau, 2)
    result = linalg.householder_product(input, tau)
    return result if out is None else _C._linalg_write_out(result, out=out)


def _ormqr_checks(input, tau, other, left):
    name = "torch.ormqr"
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if other.dim() < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.dim() < 1 or tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    if input.dim() - tau.dim() != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if input.dim() != other.dim():
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as input, but "
                           f"got other.ndim equal to {other.dim()} and input.ndim is equal to {input.dim()}")
    batch = list(input.shape[:-2])
    if input.dim() > 2:
        if list(tau.shape[:-1]) != batch:
            raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], "
                               f"but got {list(tau.shape[:-1])}")
        if list(other.shape[:-2]) != batch:
            raise RuntimeError(f"{name}: Expected batch dimensions of other to be equal to input.shape[:-2], "
                               f"but got {list(other.shape[:-2])}")
    names = {_C.float32: 'Float', _C.float64: 'Double', _C.float16: 'Half', _C.bfloat16: 'BFloat16',
             _C.int32: 'Int', _C.int64: 'Long', _C.int16: 'Short', _C.int8: 'Char', _C.uint8: 'Byte',
             _C.bool: 'Bool', _C.complex64: 'ComplexFloat', _C.complex128: 'ComplexDouble'}
    for what, t in (("tau", tau), ("other", other)):
        if t.dtype != input.dtype:
            raise RuntimeError(f"{name}: Expected input and {what} to have the same dtype, but input has "
                               f"dtype{names[input.dtype]} and {what} has dtype {names[t.dtype]}")
    if input.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{names[input.dtype]}'")


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """The product of Q = H_1 ... H_k, the Householder reflectors geqrf leaves in ``input``'s
    columns (below the diagonal, unit leading entries implicit) with factors ``tau``, with
    ``other``: Q other (``left``) or other Q, with Q^H for ``transpose``. Batches must agree.

        >>> a, tau = tp.geqrf(A)
        >>> tp.ormqr(a, tau, C)          # Q @ C without forming Q
    """
    for pos, (what, t) in enumerate((('input', input), ('input2', tau), ('input3', other)), 1):
        _require_tensor('ormqr', what, t, pos)
    _ormqr_checks(input, tau, other, left)
    m = input.shape[-2]
    rows = _C.arange(0, m, device=input.device).unsqueeze(-1)
    result = other
    k = tau.shape[-1]
    # Q C = H_1 (H_2 (... H_k C)); Q^T C = H_k (... (H_1 C)); C Q = ((C H_1) H_2) ...; C Q^T
    # applies H_k first
    order = range(k) if left == transpose else range(k - 1, -1, -1)
    for i in order:
        v = _C.where(rows > i, input[..., :, i:i + 1], (rows == i).to(input.dtype))
        t = tau[..., i:i + 1].unsqueeze(-1)
        if transpose and t.is_complex():  # Q^H = H_k^H ... H_1^H, H_i^H = I - conj(tau_i) v_i v_i^H
            t = t.conj()
        if left:
            result = result - t * (v @ (v.mH @ result))
        else:
            result = result - t * ((result @ v) @ v.mH)
    result = result.mT.contiguous().mT  # column-major, as LAPACK's ormqr writes
    return result if out is None else _C._linalg_write_out(result, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The nuclear norm (sum of singular values) of the matrices over ``dim`` (the last two by
    default): tp.linalg.matrix_norm(input, 'nuc'). ``nuclear_norm(input, keepdim)`` is
    PyTorch's overload without dims."""
    _require_tensor('nuclear_norm', 'input', input, 1)
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    dims = (-2, -1) if dim is None else dim
    if out is not None:
        return linalg.matrix_norm(input, 'nuc', dims, keepdim, out=out)
    return linalg.matrix_norm(input, 'nuc', dims, keepdim)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The 2-norm of the elements over ``dim`` (at most two dims; the Frobenius norm of
    matrices), as PyTorch's frobenius_norm (at::norm(input, 2, dim))."""
    _require_tensor('frobenius_norm', 'input', input, 1)
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) > 2:
        raise RuntimeError(f"frobenius_norm: Expected at most 2 dimensions, but got {len(dims)} "
                           "dimensions instead.")
    if not (input.is_floating_point() or input.is_complex()):
        raise RuntimeError(f"frobenius_norm: norm(): input dtype should be either floating point or "
                           f"complex. Got {_dtype_name(input.dtype)} instead.")
    if out is not None:
        return linalg.vector_norm(input, 2, dims, keepdim, out=out)
    return linalg.vector_norm(input, 2, dims, keepdim)


def _dtype_name(dt):
    return {_C.int32: 'Int', _C.int64: 'Long', _C.int16: 'Short', _C.int8: 'Char', _C.uint8: 'Byte',
            _C.bool: 'Bool'}.get(dt, str(dt))


def _install(namespace):
    """Puts the functions above into ``namespace`` (tensorplay's globals) and the methods on
    Tensor (called by _composite_ops._install, before the __torch_function__ wrappers)."""
    from tensorplay import _lobpcg, _lowrank
    for name in ('lu', 'lu_unpack', 'orgqr', 'ormqr', 'nuclear_norm', 'frobenius_norm'):
        namespace[name] = globals()[name]
    namespace['svd_lowrank'] = _lowrank.svd_lowrank
    namespace['pca_lowrank'] = _lowrank.pca_lowrank
    namespace['lobpcg'] = _lobpcg.lobpcg
    Tensor.lu = _tensor_lu
    _tensor_lu.__name__ = _tensor_lu.__qualname__ = 'lu'
    Tensor.orgqr = orgqr
    Tensor.ormqr = ormqr
