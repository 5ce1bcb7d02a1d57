"""Translation-table entries (Note in tensorplay/onnx/_table.py): reductions and matrix
products."""
import math

import numpy as np

import tensorplay as tp
from tensorplay.onnx._exporter import is_float, onnx_dtype
from tensorplay.onnx._symbolic import Sym
from tensorplay.onnx._table import _axes_arg, _dim, _h, _reduce, aten, reg


# ---- reductions --------------------------------------------------------------------------

@reg(aten.sum.default, aten.mean.default)
def _sum_mean(g, x, dim=None, keepdim=False, dtype=None):
    op = 'ReduceSum' if g.node.target._opname == 'sum' else 'ReduceMean'
    return _reduce(g, op, g.cast(x, g.out.dtype), _axes_arg(dim, x.rank), keepdim)


@reg(aten.prod.default)
def _prod(g, x, dim=None, keepdim=False, dtype=None):
    return _reduce(g, 'ReduceProd', g.cast(x, g.out.dtype), _axes_arg(dim, x.rank), keepdim)


def _minmax_reduce(g, op, x, axes, keepdim):
    dt = x.dtype
    xx = g.cast(x, tp.int32) if dt == tp.bool else x.name
    r = _reduce(g, op, xx, axes, keepdim)
    return g.op('Cast', r, to=onnx_dtype(tp.bool)) if dt == tp.bool else r


@reg(aten.amax.default, aten.amin.default)
def _amax(g, x, dim=None, keepdim=False):
    op = 'ReduceMax' if g.node.target._opname == 'amax' else 'ReduceMin'
    return _minmax_reduce(g, op, x, _axes_arg(dim, x.rank), keepdim)


@reg(aten.max.default, aten.min.default)
def _max_all(g, x):
    op = 'ReduceMax' if g.node.target._opname == 'max' else 'ReduceMin'
    return _minmax_reduce(g, op, x, None, False)


@reg(aten.max.dim, aten.min.dim)
def _max_dim(g, x, dim, keepdim=False):
    is_max = g.node.target._opname == 'max'
    if x.rank == 0:
        return x.name, g.const(np.array(0, np.int64))
    d = _dim(dim, x.rank)
    values = _minmax_reduce(g, 'ReduceMax' if is_max else 'ReduceMin', x, [d], keepdim)
    xx = g.cast(x, tp.int32) if x.dtype == tp.bool else x.name
    idx = g.op('ArgMax' if is_max else 'ArgMin', xx, axis=d, keepdims=1 if keepdim else 0)
    return values, idx


@reg(aten.argmax.default, aten.argmin.default)
def _argmax(g, x, dim=None, keepdim=False):
    op = 'ArgMax' if g.node.target._opname == 'argmax' else 'ArgMin'
    xx = g.cast(x, tp.int32) if x.dtype == tp.bool else x.name
    if dim is None:
        flat = g.op('Reshape', xx, g.const(np.array([-1], np.int64)))
        r = g.op(op, flat, axis=0, keepdims=0)
        if keepdim:
            r = g.op('Reshape', r, g.ints([1] * x.rank))
        return r
    if x.rank == 0:
        return g.const(np.array(0, np.int64))
    return g.op(op, xx, axis=_dim(dim, x.rank), keepdims=1 if keepdim else 0)


@reg(*_h('any', 'dims', 'default', 'dim'), *_h('all', 'dims', 'default', 'dim'))
def _any_all(g, x, dim=None, keepdim=False):
    op = 'ReduceMax' if g.node.target._opname == 'any' else 'ReduceMin'
    xx = g.op('Cast', g.cast(x, tp.bool), to=onnx_dtype(tp.int32))
    r = _reduce(g, op, xx, _axes_arg(dim, x.rank), keepdim)
    return g.op('Cast', r, to=onnx_dtype(tp.bool))


def _reduced_count(g, x, axes):
    sizes = x.shape if axes is None else [x.shape[a] for a in axes]
    return g.numel(sizes)


def _var(g, x, axes, correction, keepdim):
    dt = g.out.dtype
    xx = g.cast(x, dt)
    mean = _reduce(g, 'ReduceMean', xx, axes, True)
    d = g.op('Sub', xx, mean)
    s = _reduce(g, 'ReduceSum', g.op('Mul', d, d), axes, keepdim)
    n = _reduced_count(g, x, axes)
    if isinstance(n, Sym):
        nt = g.op('Cast', g.op('Sub', g.sym(n), g.const(np.array([correction], np.int64))),
                  to=onnx_dtype(dt))
        nt = g.op('Squeeze', nt, g.const(np.array([0], np.int64)))
        return g.op('Div', s, nt)
    denom = max(n - correction, 0)
    return g.op('Div', s, g.scalar(float(denom), dt))


def _var_args(g, x, *args, **kwargs):
    """(axes, correction, keepdim) of var/std's three overloads."""
    ov = g.node.target._overloadname
    if ov == 'correction':
        dim = args[0] if args else kwargs.get('dim')
        corr = kwargs.get('correction', 1)
        return _axes_arg(dim, x.rank), 1 if corr is None else corr, kwargs.get('keepdim', False)
    if ov == 'dim':
        dim = args[0] if args else kwargs.get('dim')
        unbiased = args[1] if len(args) > 1 else kwargs.get('unbiased', True)
        keepdim = args[2] if len(args) > 2 else kwargs.get('keepdim', False)
        return _axes_arg(dim, x.rank), 1 if unbiased else 0, keepdim
    unbiased = args[0] if args else kwargs.get('unbiased', True)
    return None, 1 if unbiased else 0, False


@reg(*_h('var', 'correction', 'dim', 'default'))
def _var_op(g, x, *args, **kwargs):
    axes, corr, keep = _var_args(g, x, *args, **kwargs)
    return _var(g, x, axes, corr, keep)


@reg(*_h('std', 'correction', 'dim', 'default'))
def _std_op(g, x, *args, **kwargs):
    axes, corr, keep = _var_args(g, x, *args, **kwargs)
    return g.op('Sqrt', _var(g, x, axes, corr, keep))


def _logsumexp(g, x, axes, keepdim, dt):
    m = _reduce(g, 'ReduceMax', x, axes, True)
    m = g.op('Where', g.op('IsInf', m), g.scalar(0.0, dt), m)
    s = _reduce(g, 'ReduceSum', g.op('Exp', g.op('Sub', x, m)), axes, True)
    r = g.op('Add', g.op('Log', s), m)
    if not keepdim:
        r = g.op('Squeeze', r, g.const(np.array(axes, np.int64))) if axes is not None else \
            g.op('Reshape', r, g.const(np.zeros(0, np.int64)))
    return r


@reg(aten.logsumexp.default)
def _logsumexp_op(g, x, dim, keepdim=False):
    dt = g.out.dtype
    if x.rank == 0:
        return g.cast(x, dt)
    return _logsumexp(g, g.cast(x, dt), _axes_arg(dim, x.rank) or list(range(x.rank)), keepdim, dt)


@reg(aten.linalg_vector_norm.default)
def _vector_norm(g, x, ord=2, dim=None, keepdim=False, dtype=None):
    dt = g.out.dtype
    xx = g.cast(x, dt)
    axes = _axes_arg(dim, x.rank)
    if x.rank == 0:
        axes = None
    if ord == 2:
        return _reduce(g, 'ReduceL2', xx, axes, keepdim)
    if ord == 1:
        return _reduce(g, 'ReduceL1', xx, axes, keepdim)
    if ord == math.inf:
        return _reduce(g, 'ReduceMax', g.op('Abs', xx), axes, keepdim)
    if ord == -math.inf:
        return _reduce(g, 'ReduceMin', g.op('Abs', xx), axes, keepdim)
    if ord == 0:
        nz = g.op('Cast', g.op('Not', g.op('Equal', xx, g.scalar(0.0, dt))), to=onnx_dtype(dt))
        return _reduce(g, 'ReduceSum', nz, axes, keepdim)
    p = g.scalar(float(ord), dt)
    s = _reduce(g, 'ReduceSum', g.op('Pow', g.op('Abs', xx), p), axes, keepdim)
    return g.op('Pow', s, g.scalar(1.0 / ord, dt))


@reg(aten.cumsum.default)
def _cumsum(g, x, dim, dtype=None):
    if x.rank == 0:
        return g.cast(x, g.out.dtype)
    return g.op('CumSum', g.cast(x, g.out.dtype), g.const(np.array(_dim(dim, x.rank), np.int64)))


@reg(aten.softmax.int, aten.log_softmax.int)
def _softmax(g, x, dim, dtype=None):
    op = 'Softmax' if g.node.target._opname == 'softmax' else 'LogSoftmax'
    xx = g.cast(x, g.out.dtype)
    if x.rank == 0:
        return g.op('Exp', g.op('Sub', xx, xx)) if op == 'Softmax' else g.op('Sub', xx, xx)
    return g.op(op, xx, axis=_dim(dim, x.rank))


@reg(aten.sort.default)
def _sort(g, x, dim=-1, descending=False, stable=False):
    if x.rank == 0:
        return x.name, g.const(np.array(0, np.int64))
    d = _dim(dim, x.rank)
    v, i = g.op('TopK', x.name, g.int1(x.shape[d]), axis=d, largest=1 if descending else 0,
                sorted=1, outputs=2)
    return v, i


@reg(*_h('argsort', 'default'))
def _argsort(g, x, dim=-1, descending=False, stable=False):
    return _sort(g, x, dim, descending, stable)[1]


@reg(aten.topk.default)
def _topk(g, x, k, dim=-1, largest=True, sorted=True):
    d = _dim(dim, x.rank)
    v, i = g.op('TopK', x.name, g.int1(k), axis=d, largest=1 if largest else 0, sorted=1,
                outputs=2)
    return v, i


# ---- matrix products ---------------------------------------------------------------------

@reg(aten.mm.default, aten.bmm.default, aten.matmul.default, *_h('dot', 'default'),
     *_h('mv', 'default'))
def _matmul(g, a, b):
    dt = g.out.dtype
    return g.op('MatMul', g.cast(a, dt), g.cast(b, dt))


@reg(aten.addmm.default)
def _addmm(g, c, a, b, beta=1, alpha=1):
    dt = g.out.dtype
    if is_float(dt):
        if beta == 0:
            return g.op('Gemm', g.cast(a, dt), g.cast(b, dt), alpha=float(alpha))
        return g.op('Gemm', g.cast(a, dt), g.cast(b, dt), g.cast(c, dt), alpha=float(alpha),
                    beta=float(beta))
    return _scaled_sum(g, g.op('MatMul', g.cast(a, dt), g.cast(b, dt)), c, alpha, beta, dt)


def _scaled_sum(g, prod, c, alpha, beta, dt):
    if alpha != 1:
        prod = g.op('Mul', prod, g.scalar(alpha, dt))
    if beta == 0:
        return prod
    cc = g.cast(c, dt)
    if beta != 1:
        cc = g.op('Mul', cc, g.scalar(beta, dt))
    return g.op('Add', cc, prod)


@reg(aten.baddbmm.default, *_h('addbmm', 'default'), *_h('addmv', 'default'))
def _baddbmm(g, c, a, b, beta=1, alpha=1):
    dt = g.out.dtype
    prod = g.op('MatMul', g.cast(a, dt), g.cast(b, dt))
    if g.node.target._opname == 'addbmm':
        prod = g.op('ReduceSum', prod, g.const(np.array([0], np.int64)), keepdims=0)
    return _scaled_sum(g, prod, c, alpha, beta, dt)


@reg(aten.einsum.default)
def _einsum(g, equation, tensors, *args, **kwargs):
    dt = g.out.dtype
    return g.op('Einsum', *[g.cast(t, dt) for t in tensors], equation=equation.replace(' ', ''))


@reg(aten.t.default)
def _t(g, x):
    if x.rank < 2:
        return x.name
    return g.op('Transpose', x.name, perm=[1, 0])
