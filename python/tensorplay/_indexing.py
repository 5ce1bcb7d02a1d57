"""Tensor.__getitem__ / __setitem__ with PyTorch's semantics.

Basic indices (ints, slices, None, Ellipsis) become one strided view. Advanced indices
(integer tensors or lists, bool masks) are applied after it: they broadcast together,
address the advanced dims through one flat index, and their result dims go where the
first advanced index stood if the advanced indices are adjacent, else in front
(PyTorch's rule, inherited from NumPy).
"""
import builtins

import numpy as np

from tensorplay import _C, _dtype
from tensorplay._views import broadcast_tensors

Tensor = _C.Tensor


def _as_index_tensor(i):
    """An advanced index as a tensor, or None for a basic one."""
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
        if i is None or i is Ellipsis:
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


def _basic_view(self, items):
    """The view for the basic indices; advanced ones keep their dim (a full slice).
    Returns (view, [(dim in view, index tensor), ...])."""
    sizes, strides, offset, d = [], [], self.storage_offset(), 0
    shape, stride = self.shape, self.stride()
    advanced = []
    for i in items:
        if i is None:
            sizes.append(1)
            strides.append(0)
            continue
        t = _as_index_tensor(i)
        if t is not None:
            if t.dtype == _dtype.bool:  # a k-dim mask stands for k integer indices
                if t.dim() == 0:
                    raise IndexError("indexing with a 0-dim bool tensor is not supported yet")
                if tuple(t.shape) != tuple(shape[d:d + t.dim()]):
                    raise IndexError(f"The shape of the mask {list(t.shape)} at index {d} does not "
                                     f"match the shape of the indexed tensor {list(shape)}")
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
        if isinstance(i, builtins.bool):
            raise IndexError("indexing with a Python bool is not supported yet")
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
    return self._as_strided(sizes, strides, offset), advanced


def getitem(self, index):
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
        if t.numel():
            lo, hi = builtins.int(t.amin()), builtins.int(t.amax())
            if lo < -size or hi >= size:
                bad = lo if lo < -size else hi
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
            if lo < 0:  # wrap negative indices only when there are some
                t = _C.where(t < 0, t + size, t)
        flat = t if flat is None else flat * size + t
    rest = [d for d in range(view.dim()) if d not in dims]
    moved = view.permute(dims + rest).reshape([-1] + [view.shape[d] for d in rest])
    out = moved.index_select(0, flat.reshape(-1)).reshape(list(bshape) + [view.shape[d] for d in rest])
    if dims == list(range(dims[0], dims[0] + len(dims))) and dims[0] > 0:
        # adjacent advanced indices: their result dims replace them in place
        nb, first = len(bshape), dims[0]
        order = list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, out.dim()))
        out = out.permute(order)
    return out


def setitem(self, index, value):
    items = _expand_ellipsis(index if isinstance(index, tuple) else (index,), self.dim())
    view, advanced = _basic_view(self, items)
    if advanced:
        raise NotImplementedError("assignment through advanced indices (index_put_) is not "
                                  "implemented yet")
    if isinstance(value, Tensor):
        view.copy_(value)
    else:
        view.fill_(value)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
