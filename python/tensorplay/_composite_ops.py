"""Top-level functions and Tensor methods PyTorch exposes that compose from existing ops:
combinations, unravel_index, rsub, scalar_tensor, empty_permuted, frombuffer, the
*_scatter ops, the *_copy twins of views, the top-level in-place forms (tp.exp_, ...), and
Tensor methods such as addr, cumsum_, is_nonzero, apply_ and map_."""
import itertools
import operator
import sys

import numpy as np

from tensorplay import _C, _linalg_legacy, _statistics, _torch_aliases, linalg
from tensorplay._creation import from_numpy, tensor as _tensor
from tensorplay._statistics import _dtype_name, _require_tensor
from tensorplay._tensor import contiguous_format
from tensorplay._views import broadcast_shapes
from tensorplay.func._vmap import BatchedTensor
from tensorplay.nn import functional as F

Tensor = _C.Tensor


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of the 1-D ``input``, one per row (as
    itertools.combinations / combinations_with_replacement).

        >>> tp.combinations(tp.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    _require_tensor('combinations', 'input', input)
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    if input.device.type == 'meta':
        raise NotImplementedError("combinations: the result is built by masking, which the meta "
                                  "device cannot run (as in PyTorch)")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    idx = _tensor(rows, dtype=_C.int64, device=input.device).reshape(-1)
    return input.index_select(0, idx).reshape(len(rows), r)


def unravel_index(indices, shape):
    """The coordinates in an array of ``shape`` of flat ``indices`` (row-major; negative and
    out-of-range indices wrap): a tuple of int64 tensors, one per dimension."""
    if not isinstance(indices, Tensor):
        indices = _tensor(indices)
    if indices.is_floating_point() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int):
        shape = (shape,)
    for s in shape:
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(s)}")
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(shape)}")
    rest = indices.to(_C.int64)
    coords = []
    for s in reversed(shape):
        coords.append(rest.remainder(s))
        rest = rest.div(s, rounding_mode='floor')
    return tuple(reversed(coords))


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (subtraction with the operands swapped)."""
    _require_tensor('rsub', 'input', input)
    if not isinstance(other, (Tensor, int, float, bool)):
        raise TypeError(f"rsub(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(other).__name__}")
    if alpha == 1:
        return input.__rsub__(other)
    if isinstance(alpha, float) and not input.is_floating_point() and not (
            isinstance(other, float) or isinstance(other, Tensor) and other.is_floating_point()):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return (input * alpha).__rsub__(other)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A 0-dim tensor holding the number ``s``, of the default float dtype unless ``dtype``
    says otherwise (an integer ``s`` still gives a float tensor)."""
    if isinstance(s, Tensor):
        s = s.item()
    return _tensor(s, dtype=dtype or _C.get_default_dtype(), device=device,
                     requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised tensor of logical ``size`` whose memory holds the dimensions in the
    order ``physical_layout`` (physical_layout[0] outermost)."""
    size, physical_layout = list(size), list(physical_layout)
    if len(size) != len(physical_layout):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(physical_layout)}")
    if sorted(physical_layout) != list(range(len(size))):
        raise RuntimeError("Duplicate dim not allowed")
    physical = _C.empty([size[d] for d in physical_layout], dtype=dtype, device=device)
    inverse = [physical_layout.index(d) for d in range(len(size))]
    return physical.permute(inverse).requires_grad_(requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor that shares memory with an object implementing the buffer protocol
    (bytes, bytearray, array.array, mmap, ...): ``count`` elements of ``dtype`` from byte
    ``offset`` (-1: all that remain)."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length = view.nbytes
    item = dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    raw = np.frombuffer(buffer, dtype=np.uint8, count=count * item, offset=offset)
    t = from_numpy(raw).view(dtype)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _clone_preserving_strides(t):
    """A copy of ``t`` with its exact strides and storage offset (a copy of its whole storage),
    as PyTorch's *_scatter ops return, overlapping strides included; an expanded ``t`` (a
    stride-0 dim of size > 1) is cloned instead (dense strides in the order of its own)."""
    if isinstance(t, BatchedTensor) or any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride())):
        return t.clone()
    if t.device.type == 'meta':
        return t.new_empty_strided(tuple(t.shape), tuple(t.stride()))
    n = t.untyped_storage().nbytes() // t.element_size()
    return t.as_strided((n,), (1,), 0).clone().as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset())


def _scatter_into(name, input, src, view_of):
    _require_tensor(name, 'input', input)
    _require_tensor(name, 'src', src, 2)
    out = _clone_preserving_strides(input)
    target = view_of(out)
    if out.device.type == 'meta':  # no data to write; PyTorch checks no sizes there either
        return out
    if tuple(src.shape) != tuple(target.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(target.shape)}")
    if target.numel():
        target.copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with the diagonal (``offset``, ``dim1``, ``dim2``) set to ``src``."""
    return _scatter_into('diagonal_scatter', input, src, lambda t: t.diagonal(offset, dim1, dim2))


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``input.select(dim, index)`` set to ``src``."""
    return _scatter_into('select_scatter', input, src, lambda t: t.select(dim, index))


def _slice(t, dim, start, end, step):
    index = [slice(None)] * t.dim()
    index[dim] = slice(start, end, step)
    return t[tuple(index)]


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with the slice ``start:end:step`` along ``dim`` set to ``src``."""
    return _scatter_into('slice_scatter', input, src, lambda t: _slice(t, dim, start, end, step))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with the elements ``input.as_strided(size, stride,
    storage_offset)`` reaches set to ``src``."""
    return _scatter_into('as_strided_scatter', input, src, lambda t: t.as_strided(size, stride, storage_offset))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """A new tensor holding the slice ``start:end:step`` of ``input`` along ``dim``."""
    _require_tensor('slice_copy', 'input', input)
    return _slice(input, dim, start, end, step).clone(memory_format=contiguous_format)


def narrow_copy(input, dim, start, length):
    """A new contiguous tensor holding ``input.narrow(dim, start, length)``."""
    _require_tensor('narrow_copy', 'input', input)
    if not -max(input.dim(), 1) <= dim < max(input.dim(), 1):
        # PyTorch's kernel asserts here (RuntimeError), unlike narrow's IndexError
        raise RuntimeError(f"narrow_copy: dim {dim} out of range for a {input.dim()}-D tensor")
    return input.narrow(dim, start, length).clone(memory_format=contiguous_format)


def _copy_of(view_name):
    """tp.<view>_copy: the view's elements in a new contiguous tensor (a tuple of them for
    the views that return several)."""
    method = operator.methodcaller

    def copy(input, *args, **kwargs):
        _require_tensor(f'{view_name}_copy', 'input', input)
        result = input.view_as(input) if view_name == 'alias' else \
            method(view_name, *args, **kwargs)(input)
        if isinstance(result, (tuple, list)):
            return type(result)(r.clone(memory_format=contiguous_format) for r in result)
        return result.clone(memory_format=contiguous_format)
    copy.__name__ = copy.__qualname__ = f'{view_name}_copy'
    copy.__doc__ = f"Like Tensor.{view_name}, but the result owns its memory (a contiguous copy)."
    return copy


_VIEWS_WITH_COPIES = ('alias', 'as_strided', 'detach', 'diagonal', 'expand', 'permute',
                      'select', 'split', 'split_with_sizes', 'squeeze', 't', 'transpose', 'unbind',
                      'unfold', 'unsqueeze', 'view')


def _inplace_function(name):
    """tp.<name>(input, ...): the Tensor method ``name`` (an in-place op) as a function."""
    def fn(input, *args, **kwargs):
        _require_tensor(name, 'input', input)
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"In-place: input.{name}(...), as a function."
    return fn


# PyTorch's top-level in-place functions that are Tensor methods here.
_INPLACE_FUNCTIONS = """
    abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_
    atanh_ ceil_ clamp_ clip_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_
    frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_
    reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_
    xlogy_ clamp_max_ clamp_min_
""".split()


# ---- Tensor methods -------------------------------------------------------------------

def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (``input`` ignored when beta is 0)."""
    _require_tensor('addr', 'input', input)
    _require_tensor('addr', 'vec1', vec1, 2)
    _require_tensor('addr', 'vec2', vec2, 3)
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D"
                           if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    if input.dtype == _C.bool and vec1.dtype == _C.bool and vec2.dtype == _C.bool:
        product = vec1.unsqueeze(1) & vec2.unsqueeze(0) & bool(alpha)
        result = (input & bool(beta)) | product
    else:
        if not (input.is_floating_point() or vec1.is_floating_point() or vec2.is_floating_point()):
            for name, value in (('beta', beta), ('alpha', alpha)):
                if isinstance(value, float):
                    raise RuntimeError(f"For integral input tensors, argument {name} must not "
                                       f"be a floating point number.")
        dtype = _C.promote_types(input.dtype, _C.promote_types(vec1.dtype, vec2.dtype))
        # PyTorch's order of operations, which half types round after each of:
        # beta * input + (alpha * vec1) * vec2
        product = _C.outer(vec1 * alpha, vec2).to(dtype)
        if beta != 0:
            result = input * beta + product
        elif input.requires_grad:
            # input is ignored (NaNs included), but its gradient is zeros, not None
            result = input.masked_fill(_C.ones(tuple(input.shape), dtype=_C.bool, device=input.device), 0) + product
        else:
            result = product
    if tuple(broadcast_shapes(input.shape, product.shape)) != tuple(product.shape):
        raise RuntimeError(f"The size of tensor a ({input.shape[-1]}) must match the size of "
                           f"tensor b ({product.shape[-1]}) at non-singleton dimension 1")
    if out is not None:
        return _write_back(out, result)
    return result


def _write_back(self, result):
    """``self`` holding ``result`` (the in-place form of an out-of-place op)."""
    self.copy_(result)
    return self


def _addr_(self, vec1, vec2, *, beta=1, alpha=1):
    return _write_back(self, addr(self, vec1, vec2, beta=beta, alpha=alpha))


def _check_scan_dtype(self, dtype):
    if dtype is not None and dtype != self.dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {_dtype_name(self.dtype).lower()} "
                           f"and output tensor dtype {_dtype_name(dtype).lower()} should match")


def _cumsum_(self, dim, *, dtype=None):
    _check_scan_dtype(self, dtype)
    return _write_back(self, self.cumsum(dim, dtype=dtype))


def _cumprod_(self, dim, *, dtype=None):
    _check_scan_dtype(self, dtype)
    # computed from a copy: cumprod's backward needs the values before the write
    return _write_back(self, self.clone().cumprod(dim, dtype=dtype))


def _is_nonzero(self):
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def is_nonzero(input):
    """True when the one-element ``input`` is not zero (RuntimeError for any other size)."""
    _require_tensor('is_nonzero', 'input', input)
    return _is_nonzero(input)


def is_same_size(input, other):
    """True when ``input`` and ``other`` have the same shape."""
    _require_tensor('is_same_size', 'input', input)
    _require_tensor('is_same_size', 'other', other, 2)
    return tuple(input.shape) == tuple(other.shape)


def _cpu_only(name, *tensors):
    for t in tensors:
        if t.device.type != 'cpu':
            raise TypeError(f"{name} is only implemented on CPU tensors")


def _apply_(self, callable):
    _cpu_only('apply_', self)
    values = [callable(v) for v in self.reshape(-1).tolist()]
    return _write_back(self, _tensor(values, dtype=self.dtype).reshape(self.shape))


def _map_(self, tensor, callable):
    _cpu_only('map_', self, tensor)
    other = tensor.expand_as(self).reshape(-1).tolist()
    values = [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), other)]
    return _write_back(self, _tensor(values, dtype=self.dtype).reshape(self.shape))


def _map2_(self, x, y, callable):
    _cpu_only('map2_', self, x, y)
    xs, ys = x.expand_as(self).reshape(-1).tolist(), y.expand_as(self).reshape(-1).tolist()
    values = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys)]
    return _write_back(self, _tensor(values, dtype=self.dtype).reshape(self.shape))


def positive(input):
    """``input`` itself (unary plus); RuntimeError for bool tensors."""
    _require_tensor('positive', 'input', input)
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other``."""
    _require_tensor('dist', 'input', input)
    _require_tensor('dist', 'other', other, 2)
    return _C.linalg_vector_norm(input - other, p)


def renorm(input, p, dim, maxnorm):
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled
    down to norm ``maxnorm``."""
    _require_tensor('renorm', 'input', input)
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported")
    if not maxnorm >= 0:  # NaN too
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           f"dimensions")
    if not -input.dim() <= dim < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, "
                         f"{input.dim() - 1}], but got {dim})")
    dim = dim % input.dim()
    others = [d for d in range(input.dim()) if d != dim]
    norm = _C.linalg_vector_norm(input, p, others, True)
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), norm.new_ones(()))
    return (input * factor).contiguous()


def _renorm_(self, p, dim, maxnorm):
    return _write_back(self, renorm(self.clone(), p, dim, maxnorm))


def _sum_to_size(self, *size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != d for s, d in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    result = self.sum(dims, keepdim=True) if dims else self
    return result.reshape(size) if lead else result


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                       requires_grad=False, pin_memory=False):
    return _C.empty_strided(size, stride, dtype=dtype or self.dtype,
                            device=device or self.device).requires_grad_(requires_grad)


def _split_with_sizes(self, split_sizes, dim=0):
    return self.split(list(split_sizes), dim)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B for A = L L^H (``upper``: A = U^H U) given A's Cholesky factor
    (a singular factor raises, where PyTorch returns inf/nan)."""
    _require_tensor('cholesky_solve', 'input', B)
    _require_tensor('cholesky_solve', 'input2', L, 2)
    if L.dim() < 2 or L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_solve: A must be batches of square matrices, but they are "
                           f"{L.shape[-2] if L.dim() >= 2 else L.shape[-1]} by {L.shape[-1]} matrices")
    # through A itself, so that L's gradient is PyTorch's full-matrix one, not a triangle
    A = L.mH @ L if upper else L @ L.mH
    result = linalg.solve(A, B)
    return _write_back(out, result) if out is not None else result


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^H (``upper``: U^H U) from its Cholesky factor."""
    _require_tensor('cholesky_inverse', 'input', L)
    if L.dim() < 2 or L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are "
                           f"{L.shape[-2] if L.dim() >= 2 else L.shape[-1]} by {L.shape[-1]} matrices")
    eye = _C.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(L.shape)
    return cholesky_solve(eye, L, upper, out=out)


def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the nonzero elements of ``input`` as tp.nonzero gives them, cut or padded
    with ``fill_value`` to exactly ``size`` rows."""
    _require_tensor('nonzero_static', 'input', input)
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    pad = found.new_full((size - found.shape[0], found.shape[1]), fill_value)
    return _C.cat([found, pad], 0)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of each slice of ``v`` along ``dim`` (over all other dimensions), kept
    broadcastable against ``v``; ``dim`` -1: the norm of all of ``v``."""
    _require_tensor('norm_except_dim', 'v', v)
    if dim == -1:
        return linalg.vector_norm(v, pow)
    others = [d for d in range(v.dim()) if d != dim]
    return linalg.vector_norm(v, pow, dim=others, keepdim=True)


def _device_module(device=None):
    """The tensorplay module of a device type: tp.cuda for 'cuda', tp.cpu for 'cpu' (and for
    None without an accelerator)."""
    package = sys.modules['tensorplay']
    if device is None:
        accelerator = package.accelerator.current_accelerator()
        name = 'cpu' if accelerator is None else accelerator.type
    else:
        name = (device if isinstance(device, _C.device) else _C.device(device)).type
    if name not in ('cpu', 'cuda'):
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'torch.{name}'.")
    return getattr(package, name)


def to_dlpack(tensor):
    """A DLPack capsule sharing ``tensor``'s memory (tensor.__dlpack__())."""
    _require_tensor('to_dlpack', 'tensor', tensor)
    return tensor.__dlpack__()


def _inplace_from(name):
    """Tensor.<name>_ from the out-of-place Tensor.<name> (result written back into self)."""
    def method(self, *args, **kwargs):
        return _write_back(self, getattr(self.clone(), name)(*args, **kwargs))
    method.__name__ = method.__qualname__ = name + '_'
    method.__doc__ = f"In-place Tensor.{name}."
    return method


def _install(namespace):
    """Puts the functions above into ``namespace`` (tensorplay's globals) and the methods
    on Tensor; called by tensorplay/__init__.py before the __torch_function__ wrappers."""
    methods = {
        'addr': addr, 'addr_': _addr_, 'cumsum_': _cumsum_, 'cumprod_': _cumprod_,
        'is_nonzero': _is_nonzero, 'is_same_size': is_same_size, 'apply_': _apply_,
        'map_': _map_, 'map2_': _map2_, 'positive': positive, 'dist': dist, 'renorm': renorm,
        'renorm_': _renorm_, 'sum_to_size': _sum_to_size, 'new_empty_strided': _new_empty_strided,
        'split_with_sizes': _split_with_sizes, 'unsafe_split_with_sizes': _split_with_sizes,
        'unsafe_chunk': Tensor.chunk, 'unsafe_split': Tensor.split,
        'diagonal_scatter': diagonal_scatter, 'select_scatter': select_scatter,
        'slice_scatter': slice_scatter, 'as_strided_scatter': as_strided_scatter,
        'cov': _statistics.cov, 'corrcoef': _statistics.corrcoef,
        'histogram': _statistics.histogram, 'hardshrink': F.hardshrink, 'prelu': F.prelu,
        'clamp_max_': _inplace_from('clamp_max'), 'clamp_min_': _inplace_from('clamp_min'),
        'deg2rad_': _inplace_from('deg2rad'), 'rad2deg_': _inplace_from('rad2deg'),
        'narrow_copy': narrow_copy, 'geqrf': namespace['geqrf'], 'cholesky_solve': cholesky_solve,
        'cholesky_inverse': cholesky_inverse, 'nonzero_static': nonzero_static,
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    for name in ('combinations', 'unravel_index', 'rsub', 'scalar_tensor', 'empty_permuted',
                 'frombuffer', 'diagonal_scatter', 'select_scatter', 'slice_scatter',
                 'as_strided_scatter', 'slice_copy', 'addr', 'is_nonzero', 'is_same_size',
                 'positive', 'dist', 'renorm', 'cholesky_solve', 'cholesky_inverse',
                 'nonzero_static', 'norm_except_dim', 'to_dlpack'):
        namespace[name] = globals()[name]
    for name in ('cov', 'corrcoef', 'histogram', 'histogramdd', 'trapezoid', 'trapz',
                 'cumulative_trapezoid', 'cdist', 'vander', 'gradient'):
        namespace[name] = getattr(_statistics, name)
    namespace['pdist'] = F.pdist
    namespace['split_with_sizes'] = namespace['unsafe_split_with_sizes'] = _split_with_sizes
    namespace['unsafe_split'] = namespace['split']
    namespace['unsafe_chunk'] = namespace['chunk']
    for name in ('hann_window', 'hamming_window', 'blackman_window', 'bartlett_window',
                 'kaiser_window', 'dropout', 'dropout_', 'alpha_dropout', 'alpha_dropout_',
                 'feature_dropout', 'feature_dropout_', 'feature_alpha_dropout',
                 'feature_alpha_dropout_', 'celu', 'celu_', 'selu', 'selu_', 'threshold',
                 'threshold_', 'rrelu', 'rrelu_', 'embedding', 'binary_cross_entropy_with_logits',
                 'kl_div', 'cosine_embedding_loss', 'hinge_embedding_loss', 'margin_ranking_loss',
                 'poisson_nll_loss', 'triplet_margin_loss', 'instance_norm', 'get_device',
                 'is_inference', 'is_signed', 'typename', 'fill', 'row_stack', 'chain_matmul',
                 'range', 'get_deterministic_debug_mode', 'set_deterministic_debug_mode',
                 'is_anomaly_enabled', 'set_anomaly_enabled', 'get_autocast_cpu_dtype',
                 'set_autocast_cpu_dtype', 'is_autocast_cpu_enabled', 'set_autocast_cpu_enabled',
                 'get_autocast_gpu_dtype', 'set_autocast_gpu_dtype'):
        namespace[name] = getattr(_torch_aliases, name)
    for name in ('pixel_shuffle', 'pixel_unshuffle', 'channel_shuffle', 'cosine_similarity',
                 'pairwise_distance', 'hardshrink', 'prelu', 'bilinear'):
        namespace[name] = getattr(F, name)
    for view in _VIEWS_WITH_COPIES:
        namespace[f'{view}_copy'] = _copy_of(view)
    namespace['narrow_copy'] = narrow_copy
    namespace['get_device_module'] = _device_module
    _linalg_legacy._install(namespace)
    for name in _INPLACE_FUNCTIONS:
        namespace[name] = _inplace_function(name)
