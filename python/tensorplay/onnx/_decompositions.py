"""Decompositions for ops without an ONNX translation of their own: each function computes
the op with other ops (written here with TensorPlay's ops, on the traced values), and the
exporter traces with them (make_fx's ``decomposition_table``), so the graph holds ops of the
translation table instead. Because they run while tracing, they see the sizes of each trace
and dynamic axes work through them as through the model's own code."""
import tensorplay as tp
from tensorplay.onnx._table import _h

aten = tp.ops.aten
DECOMPOSITIONS = {}

__all__ = ['DECOMPOSITIONS']


def _dec(*handles):
    def deco(fn):
        for h in handles:
            DECOMPOSITIONS[h] = fn
        return fn
    return deco


@_dec(*_h('trace', 'default'))
def _trace(x):
    return aten.sum.default(aten.diagonal.default(x))


@_dec(*_h('diag', 'default'))
def _diag(x, diagonal=0):
    if x.dim() == 1:
        return aten.diag_embed.default(x, diagonal)
    return aten.clone.default(aten.diagonal.default(x, diagonal))


@_dec(*_h('diag_embed', 'default'))
def _diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """x's last dim on the diagonal ``offset`` of new (n, n) dims (n = len + |offset|): a
    where over a constant diagonal mask (no 0 * inf)."""
    m = x.shape[-1]
    n = m + abs(offset)
    pad = [0, abs(offset)]
    xp = aten.constant_pad_nd.default(x, pad, 0) if offset else x
    rows = aten.arange.default(0, n).unsqueeze(-1)
    cols = aten.arange.default(0, n).unsqueeze(0)
    mask = aten.eq.Tensor(aten.sub.Tensor(cols, rows), offset)
    val = xp.unsqueeze(-1) if offset >= 0 else xp.unsqueeze(-2)
    zero = aten.zeros.default([], dtype=x.dtype)
    out = aten.where.self(mask, val, zero)
    rank = out.dim()
    d1, d2 = dim1 % rank, dim2 % rank
    if (d1, d2) != (rank - 2, rank - 1):
        out = aten.movedim.intlist(out, [rank - 2, rank - 1], [d1, d2])
    return out


@_dec(*_h('cross', 'default'))
def _cross(a, b, dim=None):
    if dim is None:
        dim = next(i for i, s in enumerate(tp.broadcast_shapes(a.shape, b.shape)) if s == 3)
    a0, a1, a2 = (aten.select.int(a, dim, i) for i in range(3))
    b0, b1, b2 = (aten.select.int(b, dim, i) for i in range(3))
    sub, mul = aten.sub.Tensor, aten.mul.Tensor
    return aten.stack.default([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                               sub(mul(a0, b1), mul(a1, b0))], dim)


def _stat_mean(op_packet, overload):
    stat = getattr(aten, op_packet)

    def fn(x, *args, **kwargs):
        if overload == 'correction':
            dim = args[0] if args else kwargs.get('dim')
            s = stat.correction(x, dim, correction=kwargs.get('correction'),
                                keepdim=kwargs.get('keepdim', False))
            m = aten.mean.default(x, dim, kwargs.get('keepdim', False))
        elif overload == 'dim':
            dim = args[0] if args else kwargs.get('dim')
            unbiased = args[1] if len(args) > 1 else kwargs.get('unbiased', True)
            keepdim = args[2] if len(args) > 2 else kwargs.get('keepdim', False)
            s = stat.dim(x, dim, unbiased, keepdim)
            m = aten.mean.default(x, dim, keepdim)
        else:
            unbiased = args[0] if args else kwargs.get('unbiased', True)
            s = stat.default(x, unbiased)
            m = aten.mean.default(x)
        return s, m
    return fn


for _p in ('std', 'var'):
    for _ov in ('correction', 'dim', 'default'):
        for _h_ in _h(f'{_p}_mean', _ov):
            DECOMPOSITIONS[_h_] = _stat_mean(_p, _ov)


@_dec(*_h('aminmax', 'default'))
def _aminmax(x, *, dim=None, keepdim=False):
    dims = [] if dim is None else [dim]
    return aten.amin.default(x, dims, keepdim), aten.amax.default(x, dims, keepdim)


@_dec(*_h('nansum', 'default'))
def _nansum(x, dim=None, keepdim=False, *, dtype=None):
    if x.is_floating_point():
        x = aten.where.self(aten.isnan.default(x), aten.zeros.default([], dtype=x.dtype), x)
    return aten.sum.default(x, dim, keepdim, dtype=dtype)


@_dec(*_h('nanmean', 'default'))
def _nanmean(x, dim=None, keepdim=False, *, dtype=None):
    keep = aten.logical_not.default(aten.isnan.default(x))
    total = _nansum(x, dim, keepdim, dtype=dtype)
    count = aten.sum.default(keep, dim, keepdim)
    return aten.true_divide.Tensor(total, count)


@_dec(*_h('count_nonzero', 'default'))
def _count_nonzero(x, dim=None):
    return aten.sum.default(aten.ne.Tensor(x, 0), dim)


@_dec(*_h('isclose', 'default'))
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = aten.eq.Tensor(a, b)
    if equal_nan:
        both = aten.logical_and.default(aten.isnan.default(a), aten.isnan.default(b))
        close = aten.logical_or.default(close, both)
    if a.is_floating_point() or b.is_floating_point():
        err = aten.abs.default(aten.sub.Tensor(a, b))
        allowed = aten.add.Tensor(aten.mul.Tensor(aten.abs.default(b), rtol), atol)
        finite = aten.logical_not.default(aten.logical_or.default(aten.isnan.default(err),
                                                                  aten.isinf.default(err)))
        close = aten.logical_or.default(close, aten.logical_and.default(
            finite, aten.le.Tensor(err, allowed)))
    return close


@_dec(*_h('sgn', 'default'))
def _sgn(x):
    return aten.sign.default(x)


@_dec(*_h('erfc', 'default'))
def _erfc(x):
    return aten.sub.Tensor(1, aten.erf.default(x))


@_dec(*_h('bucketize', 'Tensor'))
def _bucketize(x, boundaries, *, out_int32=False, right=False):
    cmp = aten.ge.Tensor if right else aten.gt.Tensor
    count = aten.sum.default(cmp(aten.unsqueeze.default(x, -1), boundaries), [-1])
    return aten._to_dtype.default(count, tp.int32 if out_int32 else tp.int64)


@_dec(*_h('searchsorted', 'Tensor'))
def _searchsorted(seq, x, *, out_int32=False, right=False, side=None, sorter=None):
    if sorter is not None:
        return NotImplemented
    right = right or side == 'right'
    cmp = aten.ge.Tensor if right else aten.gt.Tensor
    if seq.dim() == 1:
        c = cmp(aten.unsqueeze.default(x, -1), seq)
    else:  # rows of seq against rows of x
        c = cmp(aten.unsqueeze.default(x, -1), aten.unsqueeze.default(seq, -2))
    count = aten.sum.default(c, [-1])
    return aten._to_dtype.default(count, tp.int32 if out_int32 else tp.int64)


@_dec(*_h('fliplr', 'default'))
def _fliplr(x):
    return aten.flip.default(x, [1])


@_dec(*_h('flipud', 'default'))
def _flipud(x):
    return aten.flip.default(x, [0])


@_dec(*_h('rot90', 'default'))
def _rot90(x, k=1, dims=(0, 1)):
    d0, d1 = dims
    k %= 4
    if k == 0:
        return aten.clone.default(x)
    if k == 1:
        return aten.transpose.int(aten.flip.default(x, [d1]), d0, d1)
    if k == 2:
        return aten.flip.default(x, [d0, d1])
    return aten.transpose.int(aten.flip.default(x, [d0]), d0, d1)


@_dec(*_h('index_fill', 'int_Tensor', 'int_Scalar'))
def _index_fill(x, dim, index, value):
    shape = list(x.shape)
    d = dim % max(x.dim(), 1)
    if x.dim() == 0:
        return aten.where.self(aten.ones.default([], dtype=tp.bool), value, x)
    shape[d] = index.shape[0] if index.dim() else 1
    if not isinstance(value, tp.Tensor):
        value = aten.full.default([], value, dtype=x.dtype)
    src = aten.expand.default(aten._to_dtype.default(value, x.dtype), shape)
    return aten.index_copy.default(x, d, aten.reshape.default(index, [-1]), src)


@_dec(*_h('median', 'default'))
def _median_all(x):
    flat = aten.reshape.default(x, [-1])
    return aten.kthvalue.default(flat, (flat.shape[0] + 1) // 2, 0)[0]


@_dec(*_h('median', 'dim'))
def _median_dim(x, dim, keepdim=False):
    n = x.shape[dim] if x.dim() else 1
    return aten.kthvalue.default(x, (n + 1) // 2, dim, keepdim)
