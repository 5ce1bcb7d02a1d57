"""View ops whose PyTorch signatures are Python sugar over the C++ views (squeeze, split,
chunk, unbind, tensor_split, ...). Each returns views sharing the input's storage."""
import builtins
import operator
import warnings

from tensorplay import _C
from tensorplay._tensor import Size

Tensor = _C.Tensor


def _method(fn, name=None):
    setattr(Tensor, name or fn.__name__, fn)
    return fn


def _check_tensor(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _dim_range(dim, ndim, op):
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def squeeze(input, dim=None):
    """Removes dims of size 1 (all of them, or those among ``dim``)."""
    _check_tensor(input, "squeeze")
    if dim is None:
        dims = [i for i, s in enumerate(input.shape) if s == 1]
    elif isinstance(dim, (tuple, list)):
        dims = list(dim)
    else:
        dims = [operator.index(dim)]
    return _C._squeeze_dims(input, dims)


def split(tensor, split_size_or_sections, dim=0):
    """Splits into chunks of ``split_size`` (the last may be smaller) or of the listed sizes."""
    _check_tensor(tensor, "split", "tensor")
    if tensor.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _dim_range(dim, tensor.dim(), "split")
    length = tensor.shape[d] if tensor.dim() else 1
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != length:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {length} "
                               f"(input tensor's size at dimension {d}), but got split_sizes={sizes}")
    else:
        step = operator.index(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and length != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                               f"size of {length}")
        sizes = [builtins.min(step, length - s) for s in range(0, length, step)] if length else [0]
    out, start = [], 0
    for s in sizes:
        out.append(tensor.narrow(d, start, s))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    """At most ``chunks`` views of equal size (the last may be smaller)."""
    _check_tensor(input, "chunk")
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim_range(dim, input.dim(), "chunk")
    length = input.shape[d]
    if length == 0:
        return tuple(input.narrow(d, 0, 0) for _ in range(chunks))
    return split(input, (length + chunks - 1) // chunks, d)


def unbind(input, dim=0):
    """The slices along ``dim``, each with that dim removed."""
    _check_tensor(input, "unbind")
    d = _dim_range(dim, input.dim(), "unbind")
    if input.dim() == 0:
        raise IndexError("unbind: Dimension specified as 0 but tensor has no dimensions")
    return tuple(input.select(d, i) for i in range(input.shape[d]))


def tensor_split(input, indices_or_sections, dim=0):
    """Splits into n near-equal parts (an int) or at the given indices (a sequence/tensor)."""
    _check_tensor(input, "tensor_split")
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _dim_range(dim, input.dim(), "tensor_split")
    length = input.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dim() > 1 or spec.is_floating_point() or spec.dtype == _C.bool:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional "
                               "or one-dimensional tensor, but got a tensor with "
                               f"{spec.dim()} dims")
        spec = spec.item() if spec.dim() == 0 else spec.tolist()
    if isinstance(spec, (list, tuple)):
        bounds = [0] + [builtins.min(builtins.max(i if i >= 0 else i + length, 0), length)
                        for i in spec] + [length]
        return tuple(input.narrow(d, a, builtins.max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))
    n = operator.index(spec)
    if n <= 0:
        raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {n}")
    base, extra = divmod(length, n)
    out, start = [], 0
    for i in range(n):
        size = base + (1 if i < extra else 0)
        out.append(input.narrow(d, start, size))
        start += size
    return tuple(out)


def _directional_split(name, dim_for, min_dim):
    def fn(input, indices_or_sections):
        _check_tensor(input, name)
        if input.dim() < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                               f"but got a tensor with {input.dim()} dimensions!")
        d = dim_for(input)
        if isinstance(indices_or_sections, builtins.int) and (
                indices_or_sections == 0 or input.shape[d] % indices_or_sections):
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size "
                               f"of the dimension {input.shape[d]} is not divisible by the split_size "
                               f"{indices_or_sections}!")
        return tensor_split(input, indices_or_sections, d)
    fn.__name__ = name
    fn.__doc__ = f"tensor_split along dim {name[0]} (PyTorch's torch.{name})."
    return fn


hsplit = _directional_split("hsplit", lambda t: 1 if t.dim() > 1 else 0, 1)
vsplit = _directional_split("vsplit", lambda t: 0, 2)
dsplit = _directional_split("dsplit", lambda t: 2, 3)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, builtins.int) else tuple(shape)
        for i, s in enumerate(reversed(shape)):
            if i == len(out):
                out.append(s)
            elif out[i] == 1:
                out[i] = s
            elif s != 1 and s != out[i]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape. "
                                   f"Mismatch is between {list(shape)} and {list(reversed(out))}.")
    return Size(reversed(out))


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(*shape) for t in tensors)


def ravel(input):
    """The elements as a 1-D tensor: reshape(-1) (a view when the layout allows)."""
    _check_tensor(input, "ravel")
    return input.reshape(-1)


for _fn in (squeeze, split, chunk, unbind, tensor_split, hsplit, vsplit, dsplit, ravel):
    _method(_fn)
_method(lambda self, other: self.view(other.shape), "view_as")
_method(lambda self, other: self.reshape(other.shape), "reshape_as")
_method(lambda self, other: self.expand(other.shape), "expand_as")


def _matrix_transpose(x, what, conj=False):
    """x with its last two dims swapped, conjugated for mH / adjoint (a view with the
    conjugate bit flipped: x.mH @ y reads x through BLAS's conjugate transpose); `what`
    names the caller in the error."""
    if x.dim() < 2:
        raise RuntimeError(f"{what} is only supported on matrices or batches of matrices. Got {x.dim()}-D tensor.")
    t = x.transpose(-2, -1)
    return t.conj() if conj and t.is_complex() else t


def adjoint(input):
    """The conjugate transpose of the last two dims (a view)."""
    return _matrix_transpose(input, "tensor.adjoint()", True)


Tensor.mT = property(lambda self: _matrix_transpose(self, "tensor.mT"), doc="The last two dims transposed (batched).")
Tensor.mH = property(lambda self: _matrix_transpose(self, "tensor.mH", True),
                     doc="The conjugate transpose of the last two dims (batched).")


def _H(self):
    if self.dim() == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return self.conj()
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""))
    t = self.transpose(0, 1)
    return t.conj() if t.is_complex() else t


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal with fill_value in place (beyond 2-D all dims must be equal);
    ``wrap``: a tall matrix's diagonal starts again after every cols + 1 rows, as PyTorch's."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.dim() == 2 and wrap:
        rows, cols = self.shape
        for start in range(0, rows, cols + 1):
            self[start:start + cols].diagonal().fill_(fill_value)
        return self
    view = self
    while view.dim() > 1:  # (i, i, ..., i): the last dim of each diagonal is the diagonal
        view = view.diagonal(0, 0, 1)
    view.fill_(fill_value)
    return self


Tensor.fill_diagonal_ = fill_diagonal_
Tensor.adjoint = adjoint
Tensor.H = property(_H, doc="The conjugate transpose of a matrix.")


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the nonzero elements: an (n, ndim) tensor, or one 1-D tensor per dim."""
    _check_tensor(input, "nonzero")
    if out is not None and not as_tuple:
        return _C._nonzero(input, out=out)  # resizes a wrong-shaped out= column-major
    idx = _C._nonzero(input)
    if as_tuple:
        if input.dim() == 0:  # as a one-element vector: index 0 when the element is nonzero
            return (idx.new_zeros((idx.shape[0],)),)
        return tuple(idx[:, d] for d in range(input.dim()))
    return idx


def argwhere(input):
    """Indices of the nonzero elements, one row per element."""
    _check_tensor(input, "argwhere")
    return _C._nonzero(input)


def where(condition, input=None, other=None, *, out=None):
    """``where(cond, a, b)`` picks elementwise; ``where(cond)`` is ``nonzero(cond, as_tuple=True)``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return _C.where(condition, input, other, out=out)  # (a uint8 condition: where_impl)


_method(lambda self, *, as_tuple=False: nonzero(self, as_tuple=as_tuple), "nonzero")
_method(argwhere)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every element pair is close (see isclose)."""
    _check_tensor(input, "allclose")
    _check_tensor(other, "allclose", "other")
    try:
        close = _C.isclose(input, other, rtol, atol, equal_nan)
    except RuntimeError as e:
        raise RuntimeError(f"allclose: {e}") from None
    return builtins.bool(close.all())


def equal(input, other):
    """True if both tensors have the same shape and elements."""
    _check_tensor(input, "equal")
    _check_tensor(other, "equal", "other")
    if input.device.type == "meta" or other.device.type == "meta":  # as PyTorch: a bool needs data
        raise NotImplementedError("equal: no Meta kernel (its result depends on the tensors' values)")
    return tuple(input.shape) == tuple(other.shape) and builtins.bool((input == other).all())


_method(allclose)
_method(equal)
