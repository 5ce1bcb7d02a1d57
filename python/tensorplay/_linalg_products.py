"""Python forms of matrix products whose signatures the bindings cannot express:
einsum's operands as varargs or a list (and the sublist format), tensordot's ``dims=``,
and cross's deprecated default dim (PyTorch's warning). The ops are C++ (matmul.cpp)."""
import warnings

from tensorplay import _C
from tensorplay._tensor import Tensor

_LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'


def _sublist(labels):
    """einsum's sublist format: ints in [0, 52) and ``...`` -> an equation term."""
    term = []
    for s in labels:
        if s is Ellipsis:
            term.append('...')
        elif isinstance(s, int) and 0 <= s < 52:
            term.append(_LETTERS[s])
        else:
            raise ValueError('einsum(): expected subscript to be within the range [0, 52), '
                             f'but got {s}')
    return ''.join(term)


def einsum(*args):
    """Einstein summation: ``einsum('ij,jk->ik', a, b)``, ``einsum('ij,jk', [a, b])`` or
    the sublist format ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.

    >>> tp.einsum('ii', tp.eye(3))   # trace
    tensor(3.)
    """
    if len(args) < 2:
        raise ValueError('einsum(): must specify the equation string and at least one operand, '
                         'or at least one operand and its subscripts list')
    equation, operands = args[0], args[1:]
    if isinstance(equation, Tensor):  # sublist format: op, labels, op, labels, ..., [out]
        operands = args[0::2][:len(args) // 2]
        terms = [_sublist(labels) for labels in args[1::2][:len(operands)]]
        equation = ','.join(terms)
        if len(args) % 2:
            equation += '->' + _sublist(args[-1])
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _C.einsum(equation, list(operands))


def tensordot(a, b, dims=2, out=None):
    """Contracts the last ``dims`` dims of ``a`` with the first of ``b``, or the dims
    listed in ``dims=([a dims], [b dims])``.

    >>> tp.tensordot(tp.ones(2, 3), tp.ones(3, 4), dims=1).shape
    tensorplay.Size([2, 4])
    """
    for t in (a, b):  # PyTorch's tensordot fails on t.dim() too
        if not isinstance(t, Tensor):
            raise AttributeError(f"tensordot(): '{type(t).__name__}' object has no attribute 'dim'")
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.numel() == 1 else dims.tolist()
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f'tensordot expects dims >= 0, but got dims={dims}')
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f'tensordot expects dims < ndim_a or ndim_b, but got dims={dims}')
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    elif isinstance(dims, (list, tuple)):
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    else:
        raise RuntimeError('tensordot expects dims to be int or tuple[list[int], list[int]] or '
                           f'list[list[int]] containing two lists, but got dims={dims}')
    if out is None:
        return _C.tensordot(a, b, dims_a, dims_b)
    return _C.tensordot(a, b, dims_a, dims_b, out=out)


_CROSS_DEFAULT_DIM = ('Using torch.cross without specifying the dim arg is deprecated.\n'
                      'Please either pass the dim explicitly or simply use torch.linalg.cross.\n'
                      'The default value of dim will change to agree with that of linalg.cross '
                      'in a future release.')


def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along ``dim``; without ``dim`` (deprecated, warns) the
    first dim of size 3.  Prefer ``tp.linalg.cross``."""
    if dim is None:
        warnings.warn(_CROSS_DEFAULT_DIM, UserWarning, stacklevel=2)
    if out is None:
        return _C.cross(input, other, dim)
    return _C.cross(input, other, dim, out=out)


def _tensor_cross(self, other, dim=None):
    if dim is None:
        warnings.warn(_CROSS_DEFAULT_DIM, UserWarning, stacklevel=2)
    return _C.cross(self, other, dim)


_tensor_cross.__name__ = 'cross'
_tensor_cross.__doc__ = cross.__doc__
Tensor.cross = _tensor_cross
