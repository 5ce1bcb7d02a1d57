"""Shape ops whose PyTorch signatures are Python sugar (varargs, nested lists), built
on the C++ ops cat, stack, diag, ... (csrc/ops/shape_ops.cpp)."""
from tensorplay import _C

__all__ = ['atleast_1d', 'atleast_2d', 'atleast_3d', 'hstack', 'vstack', 'dstack',
           'column_stack', 'meshgrid', 'cartesian_prod', 'block_diag', 'repeat_interleave']

# Names PyTorch's kernel errors use for dtypes ("... not implemented for 'Float'").
_KERNEL_DTYPE_NAMES = {'bool': 'Bool', 'uint8': 'Byte', 'int8': 'Char', 'int16': 'Short',
                       'int32': 'Int', 'int64': 'Long', 'float16': 'Half', 'bfloat16': 'BFloat16',
                       'float32': 'Float', 'float64': 'Double', 'complex64': 'ComplexFloat',
                       'complex128': 'ComplexDouble'}


def _tensors_arg(args, name='', unpack=True):
    """f(a, b) and f([a, b]) alike; TypeError for anything but tensors."""
    if unpack and len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for t in args:
        if not isinstance(t, _C.Tensor):
            raise TypeError(f'{name}(): expected Tensor as element of argument tensors, '
                            f'but got {type(t).__name__}')
    return args


def _atleast(nd, view):
    def fn(*tensors):
        ts = _tensors_arg(tensors, 'atleast_%dd' % nd)
        out = tuple(view(t) if t.dim() < nd else t for t in ts)
        return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else out
    return fn


atleast_1d = _atleast(1, lambda t: t.reshape(1))
atleast_2d = _atleast(2, lambda t: t.reshape(1, -1) if t.dim() == 1 else t.reshape(1, 1))
atleast_3d = _atleast(3, lambda t: (t.reshape(1, 1, 1) if t.dim() == 0 else
                                    t.reshape(1, -1, 1) if t.dim() == 1 else
                                    t.reshape(*t.shape, 1)))
atleast_1d.__name__, atleast_2d.__name__, atleast_3d.__name__ = 'atleast_1d', 'atleast_2d', 'atleast_3d'


def _nonempty(name, tensors):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f'{name}(): argument \'tensors\' must be tuple of Tensors, '
                        f'not {type(tensors).__name__}')
    if len(tensors) == 0:
        raise RuntimeError(f'{name} expects a non-empty TensorList')
    return tensors


def hstack(tensors, *, out=None):
    """Concatenates along dim 1 (dim 0 for 1-D tensors)."""
    ts = [atleast_1d(t) for t in _nonempty('hstack', tensors)]
    dim = 0 if ts[0].dim() == 1 else 1
    return _C.cat(ts, dim, out=out)


def vstack(tensors, *, out=None):
    """Concatenates along dim 0 after atleast_2d."""
    ts = [atleast_2d(t) for t in _nonempty('vstack', tensors)]
    return _C.cat(ts, 0, out=out)


def dstack(tensors, *, out=None):
    """Concatenates along dim 2 after atleast_3d."""
    ts = [atleast_3d(t) for t in _nonempty('dstack', tensors)]
    return _C.cat(ts, 2, out=out)


def column_stack(tensors, *, out=None):
    """Stacks 0-/1-D tensors as columns, then concatenates along dim 1."""
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in _nonempty('column_stack', tensors)]
    return _C.cat(ts, 1, out=out)


def meshgrid(*tensors, indexing='ij'):
    """Coordinate grids from 0-/1-D tensors; indexing 'ij' (matrix) or 'xy' (Cartesian)."""
    ts = _tensors_arg(tensors, 'meshgrid')
    if len(ts) == 0:
        raise RuntimeError('meshgrid expects a non-empty TensorList')
    if indexing not in ('ij', 'xy'):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in ts:
        if t.dim() > 1:
            raise RuntimeError(f'torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D')
    if any(t.dtype != ts[0].dtype for t in ts):
        raise RuntimeError('meshgrid expects all tensors to have the same dtype')
    swap = indexing == 'xy' and len(ts) >= 2
    order = list(ts)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = [t.numel() for t in order]
    grids = []
    for i, t in enumerate(order):
        view = [1] * len(order)
        view[i] = -1
        grids.append(t.reshape(*view).expand(*shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Cartesian product of 1-D tensors, as rows (one tensor: that tensor itself, as PyTorch)."""
    ts = _tensors_arg(tensors, 'cartesian_prod', unpack=False)
    if len(ts) == 0:
        raise RuntimeError('cartesian_prod expects a non-empty TensorList')
    for t in ts:
        if t.dim() != 1:
            raise RuntimeError(f'cartesian_prod: Expect a 1D vector, but got shape {list(t.shape)}')
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing='ij')
    return _C.stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors):
    """A block-diagonal matrix of 0-, 1- and 2-D tensors (result dtype promoted)."""
    ts = _tensors_arg(tensors, 'block_diag', unpack=False)
    mats = []
    for i, t in enumerate(ts):
        if t.dim() > 2:
            raise RuntimeError(f'torch.block_diag: Input tensors must have 2 or fewer dimensions. '
                               f'Input {i} has {t.dim()} dimensions')
        mats.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    import tensorplay as tp
    if not mats:
        return tp.zeros((1, 0))
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = tp.promote_types(dtype, m.dtype)
    cols = sum(m.shape[1] for m in mats)
    # Built with cat (not written into zeros) so that the result records autograd history.
    rows, c = [], 0
    for m in mats:
        h, w = m.shape
        parts = [tp.zeros((h, c), dtype=dtype, device=m.device), m.to(dtype),
                 tp.zeros((h, cols - c - w), dtype=dtype, device=m.device)]
        rows.append(_C.cat(parts, 1))
        c += w
    return _C.cat(rows, 0)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeats each element (or slice along ``dim``) ``repeats`` times.

    With ``repeats`` omitted, ``input`` is the repeat counts:
    ``repeat_interleave(tensor([1, 2]))`` is ``tensor([0, 1, 1])``.
    """
    if repeats is not None:
        return _C.repeat_interleave(input, repeats, dim, output_size=output_size)
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    name = input.dtype._name
    if name not in ('int32', 'int64'):
        raise NotImplementedError(f'"repeat_interleave_{input.device.type}" not implemented for '
                                  f"'{_KERNEL_DTYPE_NAMES[name]}'")
    from tensorplay._creation import arange
    positions = arange(input.numel(), dtype=input.dtype, device=input.device)
    return _C.repeat_interleave(positions, input, 0, output_size=output_size)
