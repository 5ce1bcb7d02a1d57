"""Translation-table entries (Note in tensorplay/onnx/_table.py): shapes and views, factories,
indexing."""

import numpy as np

import tensorplay as tp
from tensorplay.onnx._errors import OnnxExportError
from tensorplay.onnx._exporter import INT64_MAX, Value, is_float, onnx_dtype
from tensorplay.onnx._symbolic import Sym, Unfit
from tensorplay.onnx._table import TABLE, _dim, _dims, _h, _nd, aten, reg


# ---- shapes and views --------------------------------------------------------------------

def _reshape_to(g, x, shape):
    shape = list(shape)
    if list(x.shape) == shape and not any(isinstance(d, Sym) for d in shape):
        return x.name
    dynamic = any(isinstance(d, Sym) for d in shape)
    zero = any((not isinstance(d, Sym)) and d == 0 for d in shape)
    return g.op('Reshape', x.name, g.ints(shape), allowzero=1 if (dynamic or zero) else None)


@reg(aten.reshape.default, aten.view.default)
def _reshape(g, x, shape):
    return _reshape_to(g, x, shape)


@reg(aten.flatten.using_ints, aten.unflatten.int, *_h('_unsafe_view', 'default'))
def _reshape_out(g, x, *args, **kwargs):
    return _reshape_to(g, x, g.out.shape)


@reg(aten.unsqueeze.default)
def _unsqueeze(g, x, dim):
    return g.op('Unsqueeze', x.name, g.const(np.array([_dim(dim, x.rank + 1)], np.int64)))


@reg(aten._squeeze_dims.default, *_h('squeeze', 'dim', 'dims', 'default'))
def _squeeze(g, x, dims=None):
    if dims is None:
        dims = list(range(x.rank))
    elif isinstance(dims, int):
        dims = [dims]
    axes = sorted({_dim(d, x.rank) for d in dims if x.rank and (not isinstance(
        x.shape[_dim(d, x.rank)], Sym)) and x.shape[_dim(d, x.rank)] == 1})
    if not axes:
        return x.name
    return g.op('Squeeze', x.name, g.const(np.array(axes, np.int64)))


@reg(aten.permute.default)
def _permute(g, x, dims):
    perm = _dims(dims, x.rank)
    if perm == list(range(x.rank)):
        return x.name
    return g.op('Transpose', x.name, perm=perm)


@reg(aten.transpose.int)
def _transpose(g, x, dim0, dim1):
    if x.rank < 2:
        return x.name
    perm = list(range(x.rank))
    a, b = _dim(dim0, x.rank), _dim(dim1, x.rank)
    if a == b:
        return x.name
    perm[a], perm[b] = perm[b], perm[a]
    return g.op('Transpose', x.name, perm=perm)


@reg(aten.expand.default)
def _expand(g, x, size, implicit=False):
    return g.op('Expand', x.name, g.ints(g.out.shape))


@reg(aten.repeat.default)
def _repeat(g, x, repeats):
    repeats = list(repeats)
    name = x.name
    if len(repeats) > x.rank:
        extra = len(repeats) - x.rank
        name = g.op('Unsqueeze', name, g.const(np.arange(extra, dtype=np.int64)))
    return g.op('Tile', name, g.ints(repeats))


def _slice(g, x, starts, ends, axes, steps=None):
    ins = [x, g.ints(starts), g.ints(ends), g.const(np.array(axes, np.int64))]
    if steps is not None and any(s != 1 for s in steps):
        ins.append(g.ints(steps))
    return g.op('Slice', *ins)


@reg(aten.narrow.default)
def _narrow(g, x, dim, start, length):
    d = _dim(dim, x.rank)
    if not isinstance(start, Sym) and start < 0:
        start = start + x.shape[d]
    return _slice(g, x.name, [start], [start + length], [d])


@reg(aten.select.int)
def _select(g, x, dim, index):
    d = _dim(dim, x.rank)
    if not isinstance(index, Sym) and index < 0:
        index = index + x.shape[d]
    return g.op('Gather', x.name, g.int0(index), axis=d)


@reg(aten.cat.default)
def _cat(g, tensors, dim=0):
    dt = g.out.dtype
    rank = len(g.out.shape)
    parts = [t for t in tensors if not (t.rank == 1 and rank > 1 and t.shape[0] == 0)]
    if len(parts) == 1:
        return g.cast(parts[0], dt)
    return g.op('Concat', *[g.cast(t, dt) for t in parts], axis=_dim(dim, rank))


@reg(aten.stack.default)
def _stack(g, tensors, dim=0):
    dt = g.out.dtype
    d = _dim(dim, len(g.out.shape))
    ax = g.const(np.array([d], np.int64))
    parts = [g.op('Unsqueeze', g.cast(t, dt), ax) for t in tensors]
    return parts[0] if len(parts) == 1 else g.op('Concat', *parts, axis=d)


@reg(aten.flip.default)
def _flip(g, x, dims):
    dims = _dims(dims, x.rank)
    if not dims:
        return x.name
    k = len(dims)
    return _slice(g, x.name, [-1] * k, [-INT64_MAX - 1] * k, dims, [-1] * k)


@reg(aten.roll.default)
def _roll(g, x, shifts, dims=()):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = list(dims) if not isinstance(dims, int) else [dims]
    if not dims:
        flat = g.op('Reshape', x.name, g.const(np.array([-1], np.int64)))
        n = g.numel(x.shape)
        r = _roll_dim(g, flat, n, shifts[0], 0)
        return g.op('Reshape', r, g.shape_tensor(x))
    name = x.name
    for s, d in zip(shifts, dims):
        d = _dim(d, x.rank)
        name = _roll_dim(g, name, x.shape[d], s, d)
    return name


def _roll_dim(g, name, size, shift, d):
    if not isinstance(size, Sym) and not isinstance(shift, Sym):
        if size == 0:
            return name
        k = shift % size
        if k == 0:
            return name
        cut = size - k
        return g.op('Concat', _slice(g, name, [cut], [INT64_MAX], [d]),
                    _slice(g, name, [0], [cut], [d]), axis=d)
    size_t, shift_t = g.int1(size), g.int1(shift)
    k = g.op('Mod', shift_t, size_t)
    cut = g.op('Sub', size_t, k)
    axes = g.const(np.array([d], np.int64))
    a = g.op('Slice', name, cut, g.const(np.array([INT64_MAX], np.int64)), axes)
    b = g.op('Slice', name, g.const(np.array([0], np.int64)), cut, axes)
    return g.op('Concat', a, b, axis=d)


@reg(aten.tril.default, aten.triu.default)
def _tril(g, x, diagonal=0):
    upper = 1 if g.node.target._opname == 'triu' else 0
    dt = x.dtype
    work = dt if dt in (tp.float32, tp.float64, tp.int64) else \
        (tp.float32 if is_float(dt) else tp.int64)
    r = g.op('Trilu', g.cast(x, work), g.int0(diagonal), upper=upper)
    return r if work == dt else g.op('Cast', r, to=onnx_dtype(dt))


def _pad(g, x, pad, mode, value=None):
    pad = list(pad)
    k = len(pad) // 2
    axes = [x.rank - 1 - i for i in range(k)]
    pads = [pad[2 * i] for i in range(k)] + [pad[2 * i + 1] for i in range(k)]
    ins = [x.name, g.ints(pads), g.scalar(value, x.dtype) if mode == 'constant' else '',
           g.const(np.array(axes, np.int64))]
    return g.op('Pad', *ins, mode=mode)


@reg(aten.constant_pad_nd.default)
def _constant_pad(g, x, pad, value=0):
    return _pad(g, x, pad, 'constant', value)


@reg(*_h('reflection_pad1d', 'default'), *_h('reflection_pad2d', 'default'),
     *_h('reflection_pad3d', 'default'))
def _reflection_pad(g, x, padding):
    return _pad(g, x, padding, 'reflect')


@reg(*_h('replication_pad1d', 'default'), *_h('replication_pad2d', 'default'),
     *_h('replication_pad3d', 'default'))
def _replication_pad(g, x, padding):
    return _pad(g, x, padding, 'edge')


@reg(aten.fill_.Scalar, *_h('fill', 'Scalar'))
def _fill(g, x, value):
    return g.op('Expand', g.scalar(value, x.dtype), g.shape_tensor(x))


@reg(*_h('zero_', 'default'), *_h('zero', 'default'))
def _zero(g, x):
    return g.op('Expand', g.scalar(0, x.dtype), g.shape_tensor(x))


@reg(aten.copy_.default)
def _copy(g, x, src, non_blocking=False):
    return g.op('Expand', g.cast(src, x.dtype), g.shape_tensor(x))


@reg(aten.as_strided.default)
def _as_strided(g, x, size, stride, storage_offset=None):
    """A strided view (what basic indexing makes) as Slice + Transpose + Reshape: each output
    dim of size > 1 must step through one input dim; the offset picks the starts
    (Note [as_strided as slicing])."""
    per = g.cap.per_trace(g.node)
    plans = []
    for n in per:
        src = n.args[0].meta['val']
        a = list(n.args) + [None] * (4 - len(n.args))
        off = a[3] if a[3] is not None else n.kwargs.get('storage_offset')
        off = src.storage_offset() if off is None else off
        p = _strided_plan(list(src.shape), list(src.stride()), src.storage_offset(),
                          list(a[1]), list(a[2]), off)
        if p is None:
            raise OnnxExportError(
                f'tp.onnx.export: as_strided with sizes {list(a[1])}, strides {list(a[2])} and '
                f'offset {off} over a tensor of shape {list(src.shape)} and strides '
                f'{list(src.stride())} is no slicing of it (overlapping windows, or a layout '
                f'ONNX cannot express)')
        plans.append(p)
    mapping = plans[0][0]
    if any(p[0] != mapping for p in plans):
        from tensorplay.onnx._capture import _specialised
        raise _specialised(g.node, 'the dims a strided view steps through change with the '
                           'sizes', g.cap.plan)
    in_rank = x.rank
    starts, ends, axes, steps = [], [], [], []
    for d in range(in_rank):
        st = [p[1][d] for p in plans]
        en = [p[2][d] for p in plans]
        sp = [p[3][d] for p in plans]
        full = [p[4][d] for p in plans]
        if all(full):
            continue
        s = g.cap.fit(st, 'a slice start', g.node)
        e = INT64_MAX if all(p[5][d] for p in plans) else g.cap.fit(en, 'a slice end', g.node)
        step = g.cap.fit(sp, 'a slice step', g.node)
        starts.append(s)
        ends.append(e)
        axes.append(d)
        steps.append(step)
    name = x.name
    if axes:
        name = _slice(g, name, starts, ends, axes, steps)
    mapped = [m for m in mapping if m is not None]
    perm = mapped + [d for d in range(in_rank) if d not in mapped]
    if perm != list(range(in_rank)):
        name = g.op('Transpose', name, perm=perm)
    out_shape = list(g.out.shape)
    size_after = {}
    for d in range(in_rank):
        if d not in axes:
            size_after[d] = x.shape[d]
        elif d in mapped:
            size_after[d] = out_shape[mapping.index(d)]
        else:
            size_after[d] = 1
    if [size_after[d] for d in perm] != out_shape:
        name = g.op('Reshape', name, g.ints(out_shape),
                    allowzero=1 if any(isinstance(d, Sym) for d in out_shape) else None)
    return name


def _strided_plan(isz, ist, ioff, osz, ost, ooff):
    """Note [as_strided as slicing]: output dim j of size > 1 steps through input dim m[j]
    with step ost[j] / ist[m[j]]; the storage offset, written in the input's (nested,
    non-overlapping) strides, gives each input dim's start. Returns (m, starts, ends,
    steps, full, to_end) per input dim, or None when the view is no slicing."""
    r = len(isz)
    if any(s == 0 for s in osz):
        return None
    dims = sorted([d for d in range(r) if isz[d] > 1], key=lambda d: -ist[d])
    for a, b in zip(dims, dims[1:]):
        if ist[a] < ist[b] * isz[b] or ist[b] <= 0:
            return None
    delta = ooff - ioff
    if delta < 0:
        return None
    starts = [0] * r
    for d in dims:
        q, delta = divmod(delta, ist[d])
        if q >= isz[d]:
            return None
        starts[d] = q
    if delta != 0:
        return None
    used = set()
    mapping = []
    step_of = {}
    for j in range(len(osz)):
        if osz[j] == 1:
            mapping.append(None)
            continue
        found = None
        for d in dims:
            if d in used or ost[j] <= 0 or ost[j] % ist[d]:
                continue
            step = ost[j] // ist[d]
            if starts[d] + (osz[j] - 1) * step < isz[d]:
                found = d
                step_of[d] = step
                break
        if found is None:
            return None
        used.add(found)
        mapping.append(found)
    # the mapped dims must appear in the output in an order we can transpose to: any
    ends, steps, full, to_end = [], [], [], []
    for d in range(r):
        n = osz[mapping.index(d)] if d in used else 1
        step = step_of.get(d, 1)
        end = starts[d] + (n - 1) * step + 1
        ends.append(end)
        steps.append(step)
        full.append(starts[d] == 0 and step == 1 and end == isz[d])
        # no further element fits: slicing to the end takes the same ones (x[::2] of any size)
        to_end.append(starts[d] + n * step >= isz[d])
    return mapping, starts, ends, steps, full, to_end


# ---- factories ---------------------------------------------------------------------------

def _constant_of_shape(g, size, value, dt):
    from onnx import helper
    work = tp.float32 if dt == tp.bfloat16 else dt
    from tensorplay.onnx._exporter import np_dtype
    t = helper.make_tensor('value', onnx_dtype(work), [1],
                           np.array([value], dtype=np_dtype(work)).tolist()
                           if work != tp.bool else [bool(value)])
    r = g.op('ConstantOfShape', g.ints(size), value=t)
    return r if work == dt else g.op('Cast', r, to=onnx_dtype(dt))


@reg(aten.zeros.default, aten.ones.default, aten.empty.memory_format,
     *_h('empty_strided', 'default'))
def _zeros(g, size, *args, **kwargs):
    value = 1 if g.node.target._opname == 'ones' else 0
    return _constant_of_shape(g, g.out.shape, value, g.out.dtype)


@reg(aten.full.default)
def _full(g, size, fill_value, *args, **kwargs):
    return _constant_of_shape(g, g.out.shape, fill_value, g.out.dtype)


@reg(aten.arange.default)
def _arange(g, start, end=None, step=1, **kwargs):
    dt = g.out.dtype
    if not any(isinstance(v, (Sym, Unfit)) for v in (start, end, step)):
        return _folded(g)
    work = tp.int64 if all(isinstance(v, (int, Sym)) for v in (start, end, step)) else tp.float64
    ins = [g.int0(v) if isinstance(v, Sym) else g.scalar(v, work) for v in (start, end, step)]
    if work != tp.int64:
        ins = [g.op('Cast', i, to=onnx_dtype(work)) if isinstance(v, Sym) else i
               for i, v in zip(ins, (start, end, step))]
    r = g.op('Range', *ins)
    return r if work == dt else g.op('Cast', r, to=onnx_dtype(dt))


def _folded(g):
    """A factory op without tensor inputs or dynamic sizes, computed here (a constant)."""
    n = g.node
    t = n.target(*n.args, **{k: v for k, v in n.kwargs.items() if k != 'device'})
    from tensorplay.onnx._exporter import tensor_proto
    name = g.fresh(f'{n.name}_const')
    g.initializers.append(tensor_proto(t, name))
    return name


@reg(aten.linspace.default, *_h('logspace', 'default'), *_h('eye', 'default', 'm'),
     *_h('tril_indices', 'default'), *_h('triu_indices', 'default'))
def _factory_folded(g, *args, **kwargs):
    for a in list(args) + list(kwargs.values()):
        for v in (a if isinstance(a, (list, tuple)) else [a]):
            if isinstance(v, (Sym, Unfit)):
                g.static(v, f'an argument of {g.node.target}')
    return _folded(g)


# ---- indexing ----------------------------------------------------------------------------

@reg(aten.index_select.default)
def _index_select(g, x, dim, index):
    idx = index.name if index.rank == 1 else g.op('Reshape', index.name,
                                                  g.const(np.array([-1], np.int64)))
    if x.rank == 0:
        return g.op('Reshape', x.name, g.const(np.zeros(0, np.int64)))
    return g.op('Gather', x.name, idx, axis=_dim(dim, x.rank))


@reg(aten.gather.default)
def _gather(g, x, dim, index, sparse_grad=False):
    if x.rank == 0:
        return x.name
    return g.op('GatherElements', x.name, index.name, axis=_dim(dim, x.rank))


def _fit_src(g, src, index):
    """scatter's src cut to the index's shape (PyTorch reads only that part)."""
    if list(src.shape) == list(index.shape):
        return src.name
    r = src.rank
    return _slice(g, src.name, [0] * r, list(index.shape), list(range(r)))


_REDUCTION = {None: 'none', 'add': 'add', 'sum': 'add', 'multiply': 'mul', 'prod': 'mul',
              'amax': 'max', 'amin': 'min'}


@reg(aten.scatter.src, aten.scatter.value)
def _scatter(g, x, dim, index, src, reduce=None):
    if isinstance(src, Value):
        upd = g.cast(Value(_fit_src(g, src, index), src.dtype, index.shape), x.dtype)
    else:
        upd = g.op('Expand', g.scalar(src, x.dtype), g.shape_tensor(index))
    return g.op('ScatterElements', x.name, index.name, upd, axis=_dim(dim, x.rank),
                reduction=_REDUCTION[reduce])


@reg(aten.scatter_add.default)
def _scatter_add(g, x, dim, index, src):
    upd = g.cast(Value(_fit_src(g, src, index), src.dtype, index.shape), x.dtype)
    return g.op('ScatterElements', x.name, index.name, upd, axis=_dim(dim, x.rank),
                reduction='add')


@reg(aten.scatter_reduce.two)
def _scatter_reduce(g, x, dim, index, src, reduce, include_self=True):
    if reduce not in ('sum', 'prod', 'amax', 'amin') or not include_self:
        raise OnnxExportError(f'tp.onnx.export: scatter_reduce with reduce={reduce!r}, '
                              f'include_self={include_self} has no ONNX translation')
    upd = g.cast(Value(_fit_src(g, src, index), src.dtype, index.shape), x.dtype)
    return g.op('ScatterElements', x.name, index.name, upd, axis=_dim(dim, x.rank),
                reduction=_REDUCTION[reduce])


@reg(aten.index_put.hacked_twin)
def _index_put(g, x, indices, values, accumulate=False):
    indices = list(indices)
    if len(indices) == 1 and indices[0].dtype == tp.bool:
        mask = indices[0]
        m = mask.name
        if mask.rank < x.rank:
            m = g.op('Unsqueeze', m, g.const(np.arange(mask.rank, x.rank, dtype=np.int64)))
        if g.numel(values.shape) != 1 or accumulate:
            raise OnnxExportError('tp.onnx.export: index_put with a bool mask translates only '
                                  'for one value written without accumulate')
        return g.op('Where', m, g.cast(values, x.dtype), x.name)
    if any(i.dtype == tp.bool for i in indices):
        raise OnnxExportError('tp.onnx.export: index_put with bool masks among other indices '
                              'has no ONNX translation (its positions depend on the data)')
    k = len(indices)
    for i in indices:
        for d in i.shape:
            g.static(d, 'the shape of an index_put index')
    bshape = list(tp.broadcast_shapes(*[tuple(i.shape) for i in indices]))
    parts = []
    last = g.const(np.array([-1], np.int64))
    for j, i in enumerate(indices):
        ii = g.cast(i, tp.int64)
        size = g.int0(x.shape[j])
        ii = g.op('Where', g.op('Less', ii, g.scalar(0, tp.int64)), g.op('Add', ii, size), ii)
        ii = g.op('Expand', ii, g.ints(bshape))
        parts.append(g.op('Unsqueeze', ii, last))
    idx = parts[0] if k == 1 else g.op('Concat', *parts, axis=-1)
    upd = g.op('Expand', g.cast(values, x.dtype), g.ints(bshape + list(x.shape[k:])))
    return g.op('ScatterND', x.name, idx, upd, reduction='add' if accumulate else None)


@reg(*_h('take_along_dim', 'default'))
def _take_along_dim(g, x, index, dim=None):
    if dim is None:
        flat = g.op('Reshape', x.name, g.const(np.array([-1], np.int64)))
        fi = g.op('Reshape', index.name, g.const(np.array([-1], np.int64)))
        return g.op('GatherElements', flat, fi, axis=0)
    d = _dim(dim, x.rank)
    shape = [max(int(a), int(b)) if i != d else b for i, (a, b) in
             enumerate(zip(x.shape, index.shape))]
    xs = [int(a) if i == d else s for i, (a, s) in enumerate(zip(x.shape, shape))]
    xe = g.op('Expand', x.name, g.ints(xs))
    ie = g.op('Expand', index.name, g.ints(shape))
    return g.op('GatherElements', xe, ie, axis=d)


# ---- more views and indexing ---------------------------------------------------------------

@reg(*_h('movedim', 'intlist'), *_h('moveaxis', 'intlist'))
def _movedim(g, x, source, destination):
    src = _dims([source] if isinstance(source, int) else source, x.rank)
    dst = _dims([destination] if isinstance(destination, int) else destination, x.rank)
    perm = [None] * x.rank
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(x.rank) if d not in src)
    perm = [p if p is not None else next(rest) for p in perm]
    return _permute(g, x, perm)


@reg(*_h('swapaxes', 'default'))
def _swapaxes(g, x, axis0, axis1):
    return _transpose(g, x, axis0, axis1)


@reg(*_h('diagonal', 'default'))
def _diagonal(g, x, offset=0, dim1=0, dim2=1):
    """The diagonal moved last: rows picked by Gather, then one column per row by
    GatherElements."""
    d1, d2 = _dim(dim1, x.rank), _dim(dim2, x.rank)
    rest = [d for d in range(x.rank) if d not in (d1, d2)]
    moved = g.op('Transpose', x.name, perm=rest + [d1, d2])
    n1, n2 = (g.static(x.shape[d], 'a diagonal\'s matrix size') for d in (d1, d2))
    r0, c0 = max(-offset, 0), max(offset, 0)
    length = max(min(n1 - r0, n2 - c0), 0)
    rows = g.op('Gather', moved, g.const(np.arange(r0, r0 + length, dtype=np.int64)), axis=-2)
    lead = [x.shape[d] for d in rest]
    cols = g.op('Expand', g.const(np.arange(c0, c0 + length, dtype=np.int64).reshape(length, 1)),
                g.ints(lead + [length, 1]))
    picked = g.op('GatherElements', rows, cols, axis=-1)
    return g.op('Squeeze', picked, g.const(np.array([-1], np.int64)))


@reg(*_h('unfold', 'default'))
def _unfold(g, x, dimension, size, step):
    """Windows of ``size`` every ``step`` along a dim, the window last: a Gather of an index
    matrix (windows, size), then the window dim moved to the end."""
    if x.rank == 0:
        return g.op('Unsqueeze', x.name, g.const(np.array([0], np.int64)))
    d = _dim(dimension, x.rank)
    n = g.static(x.shape[d], 'the unfolded dim\'s size')
    count = (n - size) // step + 1
    idx = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    r = g.op('Gather', x.name, g.const(idx), axis=d)  # dims: ..., count, size, ...
    perm = list(range(d + 1)) + list(range(d + 2, x.rank + 1)) + [d + 1]
    return g.op('Transpose', r, perm=perm)


def _index_along(g, x, dim, index, source):
    """index (k,) along dim of source, expanded to source's shape (for ScatterElements)."""
    shape = [1] * source.rank
    shape[dim] = -1
    idx = g.op('Reshape', g.cast(index, tp.int64), g.ints(shape))
    size = g.int0(x.shape[dim])
    idx = g.op('Where', g.op('Less', idx, g.scalar(0, tp.int64)), g.op('Add', idx, size), idx)
    return g.op('Expand', idx, g.shape_tensor(source))


@reg(*_h('index_add', 'default'))
def _index_add(g, x, dim, index, source, alpha=1):
    if x.rank == 0:
        return g.op('Add', x.name, g.cast(source, x.dtype))
    d = _dim(dim, x.rank)
    src = g.cast(source, x.dtype)
    if alpha != 1:
        src = g.op('Mul', src, g.scalar(alpha, x.dtype))
    return g.op('ScatterElements', x.name, _index_along(g, x, d, index, source), src, axis=d,
                reduction='add')


@reg(*_h('index_copy', 'default'))
def _index_copy(g, x, dim, index, source):
    d = _dim(dim, x.rank)
    return g.op('ScatterElements', x.name, _index_along(g, x, d, index, source),
                g.cast(source, x.dtype), axis=d)


@reg(*_h('take', 'default'))
def _take(g, x, index):
    flat = g.op('Reshape', x.name, g.const(np.array([-1], np.int64)))
    return g.op('Gather', flat, index.name, axis=0)


@reg(*_h('xlogy', 'Tensor'))
def _xlogy(g, x, y):
    dt = g.out.dtype
    x, y = g.cast(x, dt), g.cast(y, dt)
    r = g.op('Where', g.op('Equal', x, g.scalar(0.0, dt)), g.scalar(0.0, dt),
             g.op('Mul', x, g.op('Log', y)))
    return g.op('Where', g.op('IsNaN', y), y, r)


@reg(*_h('tile', 'default'))
def _tile(g, x, dims):
    dims = list(dims)
    if len(dims) < x.rank:
        dims = [1] * (x.rank - len(dims)) + dims
    return _repeat(g, x, dims)


@reg(*_h('im2col', 'default'))
def _im2col(g, x, kernel_size, dilation, padding, stride):
    """F.unfold: (N, C, H, W) -> (N, C*kh*kw, L), one strided Slice per kernel offset."""
    kh, kw = _nd(kernel_size, 2)
    dh, dw = _nd(dilation, 2)
    ph, pw = _nd(padding, 2)
    sh, sw = _nd(stride, 2)
    h, w = (g.static(s, 'an unfolded image size') for s in x.shape[-2:])
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    name = x.name
    batched = x.rank == 4
    if not batched:
        name = g.op('Unsqueeze', name, g.const(np.array([0], np.int64)))
    if ph or pw:
        name = g.op('Pad', name, g.ints([0, 0, ph, pw, 0, 0, ph, pw]), g.scalar(0, x.dtype))
    parts = []
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            s = _slice(g, name, [r0, c0], [r0 + (oh - 1) * sh + 1, c0 + (ow - 1) * sw + 1],
                       [2, 3], [sh, sw])
            parts.append(g.op('Unsqueeze', s, g.const(np.array([2], np.int64))))
    cols = parts[0] if len(parts) == 1 else g.op('Concat', *parts, axis=2)  # N, C, k, oh, ow
    n, c = x.shape[0] if batched else 1, x.shape[-3]
    r = g.op('Reshape', cols, g.ints([n, c * kh * kw, oh * ow]))
    if not batched:
        r = g.op('Squeeze', r, g.const(np.array([0], np.int64)))
    return r


@reg(*_h('broadcast_to', 'default'))
def _broadcast_to(g, x, size):
    return g.op('Expand', x.name, g.ints(g.out.shape))


@reg(*_h('kthvalue', 'default'))
def _kthvalue(g, x, k, dim=-1, keepdim=False):
    """The k-th smallest along dim: TopK's k smallest, sorted, and the last of them."""
    if x.rank == 0:
        return x.name, g.const(np.array(0, np.int64))
    d = _dim(dim, x.rank)
    v, i = g.op('TopK', x.name, g.int1(k), axis=d, largest=0, sorted=1, outputs=2)
    last = g.int1(k - 1) if isinstance(k, Sym) else g.const(np.array([k - 1], np.int64))
    ax = g.const(np.array([d], np.int64))
    v = g.op('Gather', v, last, axis=d)
    i = g.op('Gather', i, last, axis=d)
    if not keepdim:
        v, i = g.op('Squeeze', v, ax), g.op('Squeeze', i, ax)
    return v, i


@reg(*_h('tensordot', 'default'))
def _tensordot(g, a, b, dims_a, dims_b):
    letters = iter('abcdefghijklmnopqrstuvwxyz')
    la = [next(letters) for _ in range(a.rank)]
    lb = [next(letters) for _ in range(b.rank)]
    for da, db in zip(_dims(dims_a, a.rank), _dims(dims_b, b.rank)):
        lb[db] = la[da]
    contracted = {la[d] for d in _dims(dims_a, a.rank)}
    out = [c for c in la if c not in contracted] + [c for c in lb if c not in contracted]
    dt = g.out.dtype
    eq = f'{"".join(la)},{"".join(lb)}->{"".join(out)}'
    return g.op('Einsum', g.cast(a, dt), g.cast(b, dt), equation=eq)


def _rnn_layer(g, gi, h0, w_hh, b_hh, mode, reverse):
    """tp_onnx::rnn_layer (Note [Recurrent layers in the export], _rnn.py): a Scan whose body
    is one GRU / RNN step, PyTorch's gate order (r, z, n) and arithmetic."""
    from onnx import helper
    dt = gi.dtype
    et = onnx_dtype(dt)
    hidden = w_hh.shape[1]
    gates = w_hh.shape[0]
    w_t = g.op('Transpose', w_hh.name, perm=[1, 0])
    with g.subgraph() as body:
        h_in, x_in = g.fresh('rnn_h'), g.fresh('rnn_x')
        gh = g.op('MatMul', h_in, w_t)
        if b_hh is not None:
            gh = g.op('Add', gh, b_hh.name)
        if mode == 'GRU':
            ir, iz, inn = g.op('Split', x_in, axis=1, num_outputs=3, outputs=3)
            hr, hz, hn = g.op('Split', gh, axis=1, num_outputs=3, outputs=3)
            r = g.op('Sigmoid', g.op('Add', ir, hr))
            z = g.op('Sigmoid', g.op('Add', iz, hz))
            n = g.op('Tanh', g.op('Add', inn, g.op('Mul', r, hn)))
            one_minus_z = g.op('Sub', g.scalar(1, dt), z)
            h = g.op('Add', g.op('Mul', one_minus_z, n), g.op('Mul', z, h_in))
        else:
            pre = g.op('Add', x_in, gh)
            h = g.op('Tanh' if mode == 'RNN_TANH' else 'Relu', pre)
        h_out, h_scan = g.op('Identity', h), g.op('Identity', h)
    graph = helper.make_graph(
        body.nodes, g.fresh('rnn_step'),
        [helper.make_tensor_value_info(h_in, et, [None, hidden]),
         helper.make_tensor_value_info(x_in, et, [None, gates])],
        [helper.make_tensor_value_info(n_, et, [None, hidden]) for n_ in (h_out, h_scan)])
    d = 1 if reverse else 0
    last, seq = g.op('Scan', h0.name, gi.name, body=graph, num_scan_inputs=1,
                     scan_input_directions=[d], scan_output_directions=[d], outputs=2)
    return seq, last


def register_rnn_layer():
    """Adds the tp_onnx::rnn_layer entry (its op is registered on first use)."""
    from tensorplay.onnx._rnn import rnn_layer_op
    op = rnn_layer_op()
    if op not in TABLE:
        TABLE[op] = _rnn_layer


register_rnn_layer()
