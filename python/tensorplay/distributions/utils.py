"""Helpers shared by the distributions (PyTorch's torch.distributions.utils)."""
from functools import update_wrapper
from numbers import Number

import tensorplay as tp

__all__ = ['broadcast_all', 'logits_to_probs', 'clamp_probs', 'probs_to_logits', 'lazy_property',
           'tril_matrix_to_vec', 'vec_to_tril_matrix']

euler_constant = 0.57721566490153286060  # Euler-Mascheroni


def _is_tensor_like(v):
    return isinstance(v, tp.Tensor) or hasattr(type(v), '__torch_function__')


def broadcast_all(*values):
    """Broadcasts tensors and numbers together; numbers become tensors of the first tensor's
    dtype and device (the default dtype when there is none)."""
    if not all(_is_tensor_like(v) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(_is_tensor_like(v) for v in values):
        options = dict(dtype=tp.get_default_dtype())
        for v in values:
            if isinstance(v, tp.Tensor):
                options = dict(dtype=v.dtype, device=v.device)
                break
        values = [v if _is_tensor_like(v) else tp.tensor(v, **options) for v in values]
    return tp.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """N(0, 1) samples of `shape`: normal_() of a fresh tensor (PyTorch's draw order)."""
    return tp.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """Sums out the rightmost `dim` dims."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return tp.sigmoid(logits)
    return tp.softmax(logits, -1)


def clamp_probs(probs):
    """probs clamped to [eps, 1 - eps] (eps of probs' dtype)."""
    eps = tp.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    if is_binary:
        return tp.log(p) - tp.log1p(-p)
    return tp.log(p)


class lazy_property:
    """A non-data descriptor computing an attribute on first access (with grad enabled)
    and caching it on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with tp.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: a property (for documentation) and a
    lazy_property (so argument validation skips it)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n, diag, device):
    r = tp.arange(n, device=device)
    return r < r.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (to diagonal `diag`) of the last two dims, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec: a (batched) lower-triangular D x D matrix."""
    k = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * k + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > tp.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {k} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
