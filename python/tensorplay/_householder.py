"""Householder QR pieces: tp.geqrf (LAPACK's compact QR: reflectors below the diagonal,
R on and above it, scalar factors tau) and tp.linalg.householder_product (the product of
those reflectors, differentiable in both arguments). Written with tensor ops per column."""
import numpy as np

import tensorplay as tp
from tensorplay import return_types


def geqrf(input):
    """The QR decomposition in LAPACK's compact form: ``(a, tau)`` where R is on and above
    a's diagonal and the Householder vectors v_i (unit leading entry, implicit) below it,
    with Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H (LAPACK's choice: beta real, so R's
    diagonal is real for complex input too). Not differentiable (as in PyTorch)."""
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not input.is_floating_point() and not input.is_complex():
        raise RuntimeError(f"torch.geqrf: Expected a floating point tensor, got {input.dtype}")
    if input.is_meta:  # computed on the host from the values (PyTorch has no meta kernel either)
        raise NotImplementedError("geqrf: no Meta kernel")
    m, n = input.size(-2), input.size(-1)
    k = min(m, n)
    a = input.detach().numpy().copy().reshape((-1, m, n))
    tau = np.zeros((a.shape[0], k), dtype=a.dtype)
    for b in range(a.shape[0]):
        r = a[b]
        for j in range(k):
            alpha, tail = r[j, j], r[j + 1:, j]
            xnorm = np.linalg.norm(tail)
            if xnorm == 0 and np.imag(alpha) == 0:
                continue  # H_j = I
            beta = -np.copysign(np.hypot(np.abs(alpha), xnorm), np.real(alpha))
            tau[b, j] = (beta - alpha) / beta
            v = np.concatenate([[1], tail / (alpha - beta)]).astype(a.dtype)
            sub = r[j:, j + 1:]
            sub -= np.conj(tau[b, j]) * np.outer(v, v.conj() @ sub)  # H_j^H applied from the left
            r[j, j], r[j + 1:, j] = beta, v[1:]
    batch = tuple(input.shape[:-2])
    return return_types.geqrf(tp.from_numpy(a.reshape(batch + (m, n))),
                              tp.from_numpy(tau.reshape(batch + (k,))))


def _scalar_name(dtype):
    """PyTorch's scalar type name of a dtype (Float, Double, Long, ...)."""
    return {tp.float32: 'Float', tp.float64: 'Double', tp.float16: 'Half', tp.bfloat16: 'BFloat16',
            tp.int64: 'Long', tp.int32: 'Int', tp.int16: 'Short', tp.int8: 'Char', tp.uint8: 'Byte',
            tp.bool: 'Bool', tp.complex64: 'ComplexFloat', tp.complex128: 'ComplexDouble'}[dtype]


def householder_product(input, tau):
    """The first n columns of H_1 ... H_k (H_i = I - tau_i v_i v_i^H) for the Householder
    vectors v_i in the columns of ``input`` (m x n, m >= n; unit leading entries implicit) and
    factors ``tau`` (k <= n)."""
    name = "torch.linalg.householder_product"
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = input.size(-2), input.size(-1)
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if tau.size(-1) > n:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if input.dim() > 2 and tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != input.dtype:
        raise RuntimeError(f"{name}: tau dtype {_scalar_name(tau.dtype)} does not match input dtype "
                           f"{_scalar_name(input.dtype)}")
    if input.dtype not in (tp.float32, tp.float64, tp.complex64, tp.complex128):  # orgqr/ungqr's
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{_scalar_name(input.dtype)}'")
    batch = tuple(input.shape[:-2])
    q = tp.eye(m, n, dtype=input.dtype, device=input.device).expand(batch + (m, n))
    if tau.size(-1) == 0:  # no reflector: still a function of input (a zero gradient), as PyTorch's
        q = q + input.narrow(-2, 0, 0).sum(-2, keepdim=True)
    rows = tp.arange(m, device=input.device).unsqueeze(-1)
    for i in range(tau.size(-1) - 1, -1, -1):
        # v_i: zeros above row i, one at row i, the stored vector below
        col = input[..., :, i:i + 1]
        v = tp.where(rows > i, col, (rows == i).to(input.dtype))
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mH @ q))  # H_i = I - tau_i v_i v_i^H
    return q.mT.contiguous().mT  # column-major, as PyTorch's (LAPACK's orgqr) result
