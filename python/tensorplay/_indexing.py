"""Tensor.__getitem__ / __setitem__ with PyTorch's semantics.

Basic indices (ints, slices, None, Ellipsis) become one strided view. Advanced indices
(integer tensors or lists, bool masks) are applied after it: they broadcast together,
address the advanced dims through one flat index, and their result dims go where the
first advanced index stood if the advanced indices are adjacent, else in front
(PyTorch's rule, inherited from NumPy). A bool scalar (``True``, ``False`` or a 0-dim
bool tensor) adds a dim of size 1 with the advanced index ``[0]`` (True) or ``[]`` (False).
Assignment through advanced indices permutes the advanced dims to the front of the view
and calls ``index_put_`` on it.
"""
import builtins

import numpy as np

from tensorplay import _C, _dtype
from tensorplay._views import broadcast_tensors

Tensor = _C.Tensor


def _is_bool_scalar(i):
    return isinstance(i, builtins.bool) or (isinstance(i, Tensor) and i.dim() == 0
                                             and i.dtype == _dtype.bool)


def _as_index_tensor(i):
    """An advanced index as a tensor, or None for a basic one."""
    if isinstance(i, builtins.bool):
        return None
    if isinstance(i, Tensor):
        if i.dim() == 0 and i.dtype != _dtype.bool:
            return None
        return i
    if isinstance(i, (list, np.ndarray)) or (isinstance(i, tuple) and i):
        return _C._tensor(i, None, None, False, "index")
    return None


def _expand_ellipsis(items, ndim):
    consumed = 0
    for i in items:
        if i is None or i is Ellipsis or _is_bool_scalar(i):
            continue
        t = _as_index_tensor(i)
        consumed += t.dim() if t is not None and t.dtype == _dtype.bool else 1
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    if builtins.sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    out = []
    for i in items:
        out += [slice(None)] * (ndim - consumed) if i is Ellipsis else [i]
    return out


def _basic_view(self, items, meta_masks=None):
    """The view for the basic indices; advanced ones keep their dim (a full slice).
    Returns (view, [(dim in view, index tensor), ...]). A mask on the meta device has no
    positions to list: with a list for `meta_masks` its shape is checked and it goes there,
    else nonzero raises (data-dependent, as in PyTorch)."""
    sizes, strides, offset, d = [], [], self.storage_offset(), 0
    shape, stride = self.shape, self.stride()
    advanced = []
    for i in items:
        if i is None:
            sizes.append(1)
            strides.append(0)
            continue
        if _is_bool_scalar(i):  # a new dim of size 1, indexed by [0] or by nothing
            advanced.append((len(sizes), _C.zeros(1 if builtins.bool(i) else 0, dtype=_dtype.int64)))
            sizes.append(1)
            strides.append(0)
            continue
        t = _as_index_tensor(i)
        if t is not None:
            if t.dtype == _dtype.bool:  # a k-dim mask stands for k integer indices
                if tuple(t.shape) != tuple(shape[d:d + t.dim()]):
                    raise IndexError(f"The shape of the mask {list(t.shape)} at index {d} does not "
                                     f"match the shape of the indexed tensor {list(shape)}")
                if meta_masks is not None and (t.is_meta or hasattr(t, 'fake_mode')):
                    # its dims stay whole in the view
                    meta_masks.append(t)
                    for _ in range(t.dim()):
                        sizes.append(shape[d])
                        strides.append(stride[d])
                        d += 1
                    continue
                parts = _C._nonzero(t).unbind(1)
            elif t.is_floating_point():
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            else:
                parts = (t,)
            for part in parts:  # each keeps its dim in the view; applied after it
                advanced.append((len(sizes), part))
                sizes.append(shape[d])
                strides.append(stride[d])
                d += 1
            continue
        if isinstance(i, Tensor):
            i = builtins.int(i)
        if isinstance(i, builtins.int):
            size = shape[d]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")
            offset += (i % size) * stride[d]
        elif isinstance(i, slice):
            start, stop, step = i.indices(shape[d])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            length = builtins.max(0, (stop - start + step - 1) // step)
            sizes.append(length)
            strides.append(stride[d] * step)
            offset += start * stride[d] if length else 0
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                             "byte Variables are valid indices (got "
                             f"{type(i).__name__})")
        d += 1
    sizes += list(shape[d:])
    strides += list(stride[d:])
    return _C.as_strided(self, sizes, strides, offset), advanced


def getitem(self, index):
    if type(index) is builtins.int:  # the common t[i]: one select, no index parsing
        if self.dim() == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        if -self.size(0) <= index < self.size(0):
            return self.select(0, index)
    items = _expand_ellipsis(index if isinstance(index, tuple) else (index,), self.dim())
    view, advanced = _basic_view(self, items)
    if not advanced:
        return view
    dims = [d for d, _ in advanced]
    idx = broadcast_tensors(*[t for _, t in advanced])
    bshape = tuple(idx[0].shape)
    # Flat index over the advanced dims (row-major), with negative wrap and bounds checks.
    flat = None
    for d, t in zip(dims, idx):
        size = view.shape[d]
        t = t.long()
        if t.numel() and type(t) is not Tensor and hasattr(t, 'fake_mode'):
            # fake (traced): no values; wrap in the graph
            t = _C.where(t < 0, t + size, t)
        elif t.numel() and not t.is_meta:  # meta indices have no values to check or wrap
            lo, hi = builtins.int(t.amin()), builtins.int(t.amax())
            if lo < -size or hi >= size:
                bad = lo if lo < -size else hi
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
            if lo < 0:  # wrap negative indices only when there are some
                t = _C.where(t < 0, t + size, t)
        flat = t if flat is None else flat * size + t
    shape = list(view.shape)
    first, k = dims[0], len(dims)
    if dims == list(range(first, first + k)):
        # adjacent advanced indices: their result dims replace them in place; one
        # index_select along their (merged) dim gives PyTorch's contiguous result
        src = view if k == 1 else view.reshape(shape[:first] + [-1] + shape[first + k:])
        out = src.index_select(first, flat.reshape(-1))
        return out.reshape(shape[:first] + list(bshape) + shape[first + k:])
    # else the result dims go in front
    rest = [d for d in range(view.dim()) if d not in dims]
    moved = view.permute(dims + rest).reshape([-1] + [shape[d] for d in rest])
    return moved.index_select(0, flat.reshape(-1)).reshape(list(bshape) + [shape[d] for d in rest])


def _broadcast_shape(shapes):
    """The shape the index tensors broadcast to (IndexError if they do not)."""
    out = []
    for shape in shapes:
        shape = list(shape)
        n = builtins.max(len(out), len(shape))
        a, b = [1] * (n - len(out)) + out, [1] * (n - len(shape)) + shape
        if builtins.any(x != y and x != 1 and y != 1 for x, y in zip(a, b)):
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             f"with shapes {', '.join(str(list(s)) for s in shapes)}")
        out = [y if x == 1 else x for x, y in zip(a, b)]
    return out


def setitem(self, index, value):
    items = index if isinstance(index, tuple) else (index,)
    if builtins.any(_is_bool_scalar(i) and not builtins.bool(i) for i in items):
        return  # a False index selects nothing; PyTorch writes nothing and checks no shapes
    items = _expand_ellipsis(items, self.dim())
    meta_masks = []
    view, advanced = _basic_view(self, items, meta_masks)
    if meta_masks and builtins.any(hasattr(m, 'fake_mode') for m in meta_masks):
        # traced (fake): a mask over the view's leading dims writes through index_put_ with
        # the mask itself (a graph op); a mask anywhere else picks data-dependent positions
        m = meta_masks[0]
        if len(meta_masks) > 1 or advanced or not _leading_mask(self, items, m):
            from tensorplay._subclasses.fake_tensor import DynamicOutputShapeException
            raise DynamicOutputShapeException('nonzero (the positions of a bool mask index)')
        if not isinstance(value, Tensor):
            value = _C._tensor(value, self.dtype, None, False, "index_put_")
        view.index_put_((m,), value)
        return
    if meta_masks:
        # Which elements a meta mask picks is unknown, so nothing more can be checked (nor
        # does PyTorch): the write goes to index_put_ through a mask over the whole view.
        if not isinstance(value, Tensor):
            value = _C._tensor(value, self.dtype, None, False, "index_put_")
        view.index_put_((_C.empty(list(view.shape), dtype=_dtype.bool, device=view.device),), value)
        return
    if not advanced:
        if isinstance(value, Tensor):
            view.copy_(value)
        else:
            view.fill_(value)
        return
    if not isinstance(value, Tensor):
        value = _C._tensor(value, self.dtype, None, False, "index_put_")
    dims, idx = [d for d, _ in advanced], [t for _, t in advanced]
    bshape = _broadcast_shape([t.shape for t in idx])
    rest = [d for d in range(view.dim()) if d not in dims]
    first, nb = dims[0], len(bshape)
    if dims == list(range(first, first + len(dims))) and first > 0:
        # adjacent advanced dims keep their place in the result: value is laid out
        # (view dims before, index dims, view dims after); index_put_ wants index dims first
        rshape = list(view.shape[:first]) + bshape + list(view.shape[dims[-1] + 1:])
    else:
        rshape, first = bshape + [view.shape[d] for d in rest], 0
    while value.dim() > len(rshape) and value.shape[0] == 1:  # PyTorch drops leading 1s
        value = value[0]
    vshape = list(value.shape)
    if len(vshape) > len(rshape) or builtins.any(
            v != 1 and v != r for v, r in zip(reversed(vshape), reversed(rshape))):
        raise RuntimeError(f"shape mismatch: value tensor of shape {vshape} cannot be broadcast "
                           f"to indexing result of shape {rshape}")
    if first and value.dim():
        value = value.broadcast_to(rshape)
        value = value.permute(list(range(first, first + nb)) + list(range(first))
                              + list(range(first + nb, len(rshape))))
    target = view if dims == list(range(len(dims))) else view.permute(dims + rest)
    target.index_put_(idx, value)


def _leading_mask(self, items, mask):
    """Whether a bool mask is the first index, so it covers the view's leading dims."""
    return len(items) > 0 and items[0] is mask


def index_put_(input, indices, values, accumulate=False):
    """In-place ``index_put``: ``input[indices] = values`` (``+=`` with accumulate=True).

    >>> x = tp.zeros(3); tp.index_put_(x, (tp.tensor([0, 0]),), tp.tensor(1.), True)
    tensor([2., 0., 0.])
    """
    return input.index_put_(indices, values, accumulate)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
