"""The translation table: one entry per op overload (keyed by its ``tp.ops.aten`` handle),
a function ``fn(g, *args, **kwargs)`` that emits the ONNX nodes computing the op through the
GraphContext ``g`` (_exporter.py) and returns the output's name (a tuple for several
outputs, None where an output has no translation). Tensor arguments arrive as Values (name,
dtype, shape); sizes may be Syms (dynamic). Ops without an entry here either never reach a
graph (they decompose into these before dispatch) or raise UnsupportedOperatorError.

The entries follow PyTorch's semantics (type promotion through the traced result dtype,
negative dims, the defaults of each schema); where ONNX has no operator with the same
meaning the entry writes it out of simpler ONNX operators (GELU before opset 20, RMSNorm,
GroupNorm, logsumexp, adaptive pooling, ...).
"""
import math

import numpy as np

import tensorplay as tp
from tensorplay.onnx._errors import OnnxExportError
from tensorplay.onnx._exporter import INT64_MAX, Value, is_float, onnx_dtype
from tensorplay.onnx._symbolic import Sym, Unfit

aten = tp.ops.aten
TABLE = {}

__all__ = ['TABLE']


def reg(*handles):
    def deco(fn):
        for h in handles:
            if h in TABLE:
                raise AssertionError(f'two translations for {h}')
            TABLE[h] = fn
        return fn
    return deco


def _h(packet, *overloads):
    """The handles of a packet's overloads that exist (ops differ between builds)."""
    p = getattr(aten, packet, None)
    if p is None:
        return []
    return [getattr(p, o) for o in overloads if o in p._overloads]


def _dim(d, rank):
    return d + rank if d < 0 else d


def _dims(dims, rank):
    return [_dim(d, rank) for d in dims]


def _axes_arg(dim, rank):
    """A reduction's dim argument (None, int or list; [] means all) -> list or None."""
    if dim is None:
        return None
    if isinstance(dim, int):
        return [_dim(dim, rank)]
    dim = list(dim)
    return _dims(dim, rank) if dim else None


def _reduce(g, op, x, axes, keepdim):
    """ReduceX over ``axes`` (None: all) at opset >= 18 (axes as an input)."""
    keep = 1 if keepdim else 0
    if axes is None:
        return g.op(op, x, keepdims=keep)
    if not axes:
        return x
    return g.op(op, x, g.const(np.array(axes, np.int64)), keepdims=keep)


def _f(g, x):
    """A float name for x (Value or number), in the node's output dtype when that is float."""
    dt = g.out.dtype if is_float(g.out.dtype) else tp.float32
    return g.cast(x, dt)


# ---- identity-like ---------------------------------------------------------------------

@reg(aten.clone.default, aten.contiguous.default, aten.detach.default, aten.lift_fresh.default,
     *_h('alias', 'default'))
def _identity(g, x, *args, **kwargs):
    return x.name


@reg(aten._to_dtype.default)
def _to_dtype(g, x, dtype, copy=False):
    return g.cast(x, dtype)


# ---- pointwise unary -------------------------------------------------------------------

def _unary(op_type):
    def fn(g, x):
        return g.op(op_type, g.cast(x, g.out.dtype))
    fn.__name__ = op_type
    return fn


for _name, _op in [('abs', 'Abs'), ('neg', 'Neg'), ('exp', 'Exp'), ('log', 'Log'),
                   ('sqrt', 'Sqrt'), ('reciprocal', 'Reciprocal'), ('sin', 'Sin'),
                   ('cos', 'Cos'), ('tan', 'Tan'), ('asin', 'Asin'), ('acos', 'Acos'),
                   ('atan', 'Atan'), ('sinh', 'Sinh'), ('cosh', 'Cosh'), ('asinh', 'Asinh'),
                   ('acosh', 'Acosh'), ('atanh', 'Atanh'), ('tanh', 'Tanh'),
                   ('sigmoid', 'Sigmoid'), ('erf', 'Erf'), ('sign', 'Sign'), ('relu', 'Relu')]:
    reg(*_h(_name, 'default'))(_unary(_op))


@reg(aten.floor.default, aten.ceil.default, aten.round.default, aten.trunc.default)
def _rounding(g, x, decimals=0):
    if not is_float(x.dtype):
        return x.name
    op = g.node.target._opname
    if op == 'trunc':
        return g.op('Mul', g.op('Sign', x.name), g.op('Floor', g.op('Abs', x.name)))
    if op == 'round' and decimals:
        s = g.scalar(10.0 ** decimals, x.dtype)
        return g.op('Div', g.op('Round', g.op('Mul', x.name, s)), s)
    return g.op({'floor': 'Floor', 'ceil': 'Ceil', 'round': 'Round'}[op], x.name)


@reg(aten.frac.default)
def _frac(g, x):
    trunc = g.op('Mul', g.op('Sign', x.name), g.op('Floor', g.op('Abs', x.name)))
    return g.op('Sub', x.name, trunc)


@reg(aten.rsqrt.default)
def _rsqrt(g, x):
    return g.op('Reciprocal', g.op('Sqrt', g.cast(x, g.out.dtype)))


@reg(aten.square.default)
def _square(g, x):
    x = g.cast(x, g.out.dtype)
    return g.op('Mul', x, x)


@reg(aten.log1p.default)
def _log1p(g, x):
    x = g.cast(x, g.out.dtype)
    return g.op('Log', g.op('Add', x, g.scalar(1, g.out.dtype)))


@reg(aten.expm1.default)
def _expm1(g, x):
    x = g.cast(x, g.out.dtype)
    return g.op('Sub', g.op('Exp', x), g.scalar(1, g.out.dtype))


@reg(aten.log2.default, aten.log10.default)
def _logb(g, x):
    base = 2.0 if g.node.target._opname == 'log2' else 10.0
    x = g.cast(x, g.out.dtype)
    return g.op('Div', g.op('Log', x), g.scalar(math.log(base), g.out.dtype))


@reg(aten.exp2.default)
def _exp2(g, x):
    return g.op('Pow', g.scalar(2.0, g.out.dtype), g.cast(x, g.out.dtype))


@reg(aten.logit.default)
def _logit(g, x, eps=None):
    x = g.cast(x, g.out.dtype)
    dt = g.out.dtype
    if eps is not None:
        x = _clip(g, x, g.scalar(eps, dt), g.scalar(1 - eps, dt))
    return g.op('Log', g.op('Div', x, g.op('Sub', g.scalar(1, dt), x)))


@reg(aten.isnan.default)
def _isnan(g, x):
    if not is_float(x.dtype):
        return g.op('Expand', g.const(np.array(False)), g.shape_tensor(x))
    return g.op('IsNaN', x.name)


@reg(aten.isinf.default)
def _isinf(g, x):
    if not is_float(x.dtype):
        return g.op('Expand', g.const(np.array(False)), g.shape_tensor(x))
    return g.op('IsInf', x.name)


@reg(aten.logical_not.default)
def _logical_not(g, x):
    return g.op('Not', g.cast(x, tp.bool))


@reg(aten.bitwise_not.default)
def _bitwise_not(g, x):
    if x.dtype == tp.bool:
        return g.op('Not', x.name)
    return g.op('BitwiseNot', x.name)


@reg(aten.nan_to_num.default)
def _nan_to_num(g, x, nan=0.0, posinf=None, neginf=None):
    if not is_float(x.dtype):
        return x.name
    info = tp.finfo(x.dtype)
    dt = x.dtype
    pos = info.max if posinf is None else posinf
    neg = info.min if neginf is None else neginf
    r = g.op('Where', g.op('IsNaN', x.name), g.scalar(0.0 if nan is None else nan, dt), x.name)
    r = g.op('Where', g.op('IsInf', r, detect_negative=0), g.scalar(pos, dt), r)
    return g.op('Where', g.op('IsInf', r, detect_positive=0), g.scalar(neg, dt), r)


# ---- activations -----------------------------------------------------------------------

def _gelu_erf(g, x, dt):
    half = g.op('Mul', x, g.scalar(0.5, dt))
    e = g.op('Erf', g.op('Mul', x, g.scalar(1 / math.sqrt(2.0), dt)))
    return g.op('Mul', half, g.op('Add', e, g.scalar(1.0, dt)))


@reg(aten._gelu.default)
def _gelu(g, x):
    if g.opset >= 20:
        return g.op('Gelu', x.name)
    return _gelu_erf(g, x.name, x.dtype)


@reg(aten._gelu_tanh.default)
def _gelu_tanh(g, x):
    if g.opset >= 20:
        return g.op('Gelu', x.name, approximate='tanh')
    dt = x.dtype
    x3 = g.op('Mul', g.op('Mul', x.name, x.name), x.name)
    inner = g.op('Add', x.name, g.op('Mul', x3, g.scalar(0.044715, dt)))
    t = g.op('Tanh', g.op('Mul', inner, g.scalar(math.sqrt(2 / math.pi), dt)))
    return g.op('Mul', g.op('Mul', x.name, g.scalar(0.5, dt)), g.op('Add', t, g.scalar(1.0, dt)))


@reg(aten._silu.default)
def _silu(g, x):
    return g.op('Mul', x.name, g.op('Sigmoid', x.name))


@reg(aten._mish.default)
def _mish(g, x):
    return g.op('Mul', x.name, g.op('Tanh', _softplus_core(g, x.name, x.dtype)))


def _softplus_core(g, x, dt):
    # log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))
    pos = g.op('Relu', x)
    return g.op('Add', pos, g.op('Log', g.op('Add', g.scalar(1.0, dt),
                                             g.op('Exp', g.op('Neg', g.op('Abs', x))))))


@reg(aten._softplus.default)
def _softplus(g, x, beta=1, threshold=20):
    dt = x.dtype
    bx = g.op('Mul', x.name, g.scalar(beta, dt)) if beta != 1 else x.name
    sp = _softplus_core(g, bx, dt)
    if beta != 1:
        sp = g.op('Div', sp, g.scalar(beta, dt))
    return g.op('Where', g.op('Greater', bx, g.scalar(threshold, dt)), x.name, sp)


@reg(aten._elu.default)
def _elu(g, x, alpha=1.0, scale=1.0, input_scale=1.0):
    dt = x.dtype
    xs = g.op('Mul', x.name, g.scalar(input_scale, dt)) if input_scale != 1 else x.name
    neg = g.op('Mul', g.op('Sub', g.op('Exp', xs), g.scalar(1.0, dt)), g.scalar(alpha * scale, dt))
    pos = g.op('Mul', x.name, g.scalar(scale, dt)) if scale != 1 else x.name
    return g.op('Where', g.op('Greater', x.name, g.scalar(0.0, dt)), pos, neg)


@reg(aten._leaky_relu.default)
def _leaky_relu(g, x, negative_slope=0.01):
    return g.op('LeakyRelu', x.name, alpha=float(negative_slope))


@reg(aten._hardsigmoid.default)
def _hardsigmoid(g, x):
    return g.op('HardSigmoid', x.name, alpha=1 / 6, beta=0.5)


@reg(aten._hardswish.default)
def _hardswish(g, x):
    return g.op('HardSwish', x.name)


# ---- pointwise binary ------------------------------------------------------------------

def _promote(*xs):
    """PyTorch's result dtype of tensors (Values) and Python numbers."""
    def cat(d):
        return 2 if is_float(d) else (0 if d == tp.bool else 1)
    dim = [x.dtype for x in xs if isinstance(x, Value) and x.rank > 0]
    zero = [x.dtype for x in xs if isinstance(x, Value) and x.rank == 0]
    r = None
    for d in dim:
        r = d if r is None else tp.promote_types(r, d)
    z = None
    for d in zero:
        z = d if z is None else tp.promote_types(z, d)
    if r is None:
        r = z
    elif z is not None and cat(z) > cat(r):
        r = z
    for p in xs:
        if isinstance(p, Value) or p is None:
            continue
        pc = 0 if isinstance(p, bool) else (1 if isinstance(p, int) else 2)
        if r is None:
            r = (tp.bool, tp.int64, tp.float32)[pc]
        elif pc > cat(r):
            r = tp.float32 if pc == 2 else tp.int64
    return r


@reg(aten.add.Tensor, aten.sub.Tensor)
def _add_sub(g, a, b, alpha=1):
    dt = g.out.dtype
    sub = g.node.target._opname == 'sub'
    if dt == tp.bool:
        return g.op('Or', g.cast(a, dt), g.cast(b, dt))
    b = g.cast(b, dt) if alpha == 1 else g.op('Mul', g.cast(b, dt), g.scalar(alpha, dt))
    return g.op('Sub' if sub else 'Add', g.cast(a, dt), b)


@reg(aten.mul.Tensor)
def _mul(g, a, b):
    dt = g.out.dtype
    if dt == tp.bool:
        return g.op('And', g.cast(a, dt), g.cast(b, dt))
    return g.op('Mul', g.cast(a, dt), g.cast(b, dt))


@reg(aten.true_divide.Tensor)
def _true_divide(g, a, b):
    dt = g.out.dtype
    return g.op('Div', g.cast(a, dt), g.cast(b, dt))


def _floor_div(g, a, b, dt):
    if is_float(dt):
        return g.op('Floor', g.op('Div', a, b))
    # integers: (a - a mod b) / b is exact, and mod (fmod=0) takes the divisor's sign
    return g.op('Div', g.op('Sub', a, g.op('Mod', a, b)), b)


@reg(aten.div.Tensor_mode)
def _div_mode(g, a, b, rounding_mode=None):
    dt = g.out.dtype
    a, b = g.cast(a, dt), g.cast(b, dt)
    if rounding_mode is None:
        return g.op('Div', a, b)
    if rounding_mode == 'floor':
        return _floor_div(g, a, b, dt)
    q = g.op('Div', a, b)  # integer Div truncates
    if is_float(dt):
        q = g.op('Mul', g.op('Sign', q), g.op('Floor', g.op('Abs', q)))
    return q


@reg(aten.floor_divide.default)
def _floor_divide(g, a, b):
    dt = g.out.dtype
    return _floor_div(g, g.cast(a, dt), g.cast(b, dt), dt)


@reg(aten.remainder.Tensor)
def _remainder(g, a, b):
    dt = g.out.dtype
    a, b = g.cast(a, dt), g.cast(b, dt)
    if is_float(dt):
        return g.op('Sub', a, g.op('Mul', b, g.op('Floor', g.op('Div', a, b))))
    return g.op('Mod', a, b)


@reg(aten.fmod.Tensor)
def _fmod(g, a, b):
    dt = g.out.dtype
    return g.op('Mod', g.cast(a, dt), g.cast(b, dt), fmod=1)


@reg(aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow(g, a, b):
    dt = g.out.dtype
    return g.op('Pow', g.cast(a, dt), g.cast(b, dt))


@reg(aten.maximum.default, aten.minimum.default, aten.max.other, aten.min.other)
def _maximum(g, a, b):
    dt = g.out.dtype
    op = 'Max' if g.node.target._opname in ('maximum', 'max') else 'Min'
    a, b = g.cast(a, dt), g.cast(b, dt)
    if dt == tp.bool:
        return g.op('Or' if op == 'Max' else 'And', a, b)
    r = g.op(op, a, b)
    if is_float(dt):  # NaN wins, as in PyTorch
        nan = g.op('Or', g.op('IsNaN', a), g.op('IsNaN', b))
        r = g.op('Where', nan, g.op('Add', a, b), r)
    return r


@reg(aten.atan2.default)
def _atan2(g, y, x):
    dt = g.out.dtype
    y, x = g.cast(y, dt), g.cast(x, dt)
    zero = g.scalar(0.0, dt)
    pi = g.scalar(math.pi, dt)
    base = g.op('Atan', g.op('Div', y, x))
    ypos = g.op('GreaterOrEqual', y, zero)
    shift = g.op('Where', ypos, pi, g.op('Neg', pi))
    r = g.op('Where', g.op('Less', x, zero), g.op('Add', base, shift), base)
    half = g.op('Where', g.op('Greater', y, zero), g.scalar(math.pi / 2, dt),
                g.op('Where', g.op('Less', y, zero), g.scalar(-math.pi / 2, dt), zero))
    return g.op('Where', g.op('Equal', x, zero), half, r)


@reg(aten.hypot.default)
def _hypot(g, a, b):
    dt = g.out.dtype
    a, b = g.cast(a, dt), g.cast(b, dt)
    return g.op('Sqrt', g.op('Add', g.op('Mul', a, a), g.op('Mul', b, b)))


@reg(aten.lerp.Tensor)
def _lerp(g, a, b, w):
    dt = g.out.dtype
    a, b, w = g.cast(a, dt), g.cast(b, dt), g.cast(w, dt)
    return g.op('Add', a, g.op('Mul', w, g.op('Sub', b, a)))


@reg(aten.addcmul.default, aten.addcdiv.default)
def _addc(g, x, t1, t2, value=1):
    dt = g.out.dtype
    x, t1, t2 = g.cast(x, dt), g.cast(t1, dt), g.cast(t2, dt)
    r = g.op('Mul' if g.node.target._opname == 'addcmul' else 'Div', t1, t2)
    if value != 1:
        r = g.op('Mul', r, g.scalar(value, dt))
    return g.op('Add', x, r)


_CMP = {'eq': 'Equal', 'ne': 'Equal', 'lt': 'Less', 'le': 'LessOrEqual', 'gt': 'Greater',
        'ge': 'GreaterOrEqual'}


@reg(*[h for n in _CMP for h in _h(n, 'Tensor', 'Scalar')])
def _compare(g, a, b):
    name = g.node.target._opname
    dt = _promote(a, b)
    if dt == tp.bool and name not in ('eq', 'ne'):
        dt = tp.int32
    r = g.op(_CMP[name], g.cast(a, dt), g.cast(b, dt))
    return g.op('Not', r) if name == 'ne' else r


@reg(*_h('bitwise_and', 'Tensor'), *_h('bitwise_or', 'Tensor'), *_h('bitwise_xor', 'Tensor'))
def _bitwise(g, a, b):
    name = g.node.target._opname.split('_')[1]
    dt = g.out.dtype
    if dt == tp.bool:
        return g.op(name.capitalize(), g.cast(a, dt), g.cast(b, dt))
    return g.op('Bitwise' + name.capitalize(), g.cast(a, dt), g.cast(b, dt))


@reg(*_h('logical_and', 'default'), *_h('logical_or', 'default'), *_h('logical_xor', 'default'))
def _logical(g, a, b):
    name = g.node.target._opname.split('_')[1]
    return g.op(name.capitalize(), g.cast(a, tp.bool), g.cast(b, tp.bool))


@reg(aten.where.self)
def _where(g, cond, a, b):
    dt = g.out.dtype
    return g.op('Where', g.cast(cond, tp.bool), g.cast(a, dt), g.cast(b, dt))


@reg(aten.masked_fill.Tensor)
def _masked_fill(g, x, mask, value):
    return g.op('Where', g.cast(mask, tp.bool), g.cast(value, x.dtype), x.name)


def _clip(g, x, lo, hi):
    """min(max(x, lo), hi) with NaN in x kept (names)."""
    if lo is not None:
        x = g.op('Where', g.op('Less', x, lo), lo, x)
    if hi is not None:
        x = g.op('Where', g.op('Greater', x, hi), hi, x)
    return x


@reg(aten.clamp.Tensor)
def _clamp(g, x, min=None, max=None):
    dt = g.out.dtype
    lo = g.cast(min, dt) if min is not None else None
    hi = g.cast(max, dt) if max is not None else None
    return _clip(g, g.cast(x, dt), lo, hi)


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


# ---- neural-network layers ---------------------------------------------------------------

def _nd(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def _batched(g, x, spatial, fn):
    """Runs fn on x with a batch dim (unbatched inputs get one, and lose it after)."""
    if x.rank == spatial + 2:
        return fn(x.name)
    zero = g.const(np.array([0], np.int64))
    r = fn(g.op('Unsqueeze', x.name, zero))
    if isinstance(r, tuple):
        return tuple(None if o is None else g.op('Squeeze', o, zero) for o in r)
    return g.op('Squeeze', r, zero)


@reg(aten.convolution.default)
def _convolution(g, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    n = w.rank - 2
    stride, padding, dilation = _nd(stride, n), _nd(padding, n), _nd(dilation, n)
    for v in stride + padding + dilation + [groups]:
        g.static(v, 'a convolution parameter')
    kernel = [g.static(k, 'a kernel size') for k in w.shape[2:]]
    attrs = dict(strides=stride, pads=padding + padding, dilations=dilation, group=groups,
                 kernel_shape=kernel)
    if transposed:
        attrs['output_padding'] = _nd(output_padding, n)
    op = 'ConvTranspose' if transposed else 'Conv'
    dt = g.out.dtype
    ins = [g.cast(w, dt)] + ([g.cast(b, dt)] if b is not None else [])
    return g.op(op, x.name, *ins, **attrs)


def _pool_attrs(kernel, stride, padding, n, dilation=None, ceil_mode=False):
    kernel = _nd(kernel, n)
    stride = _nd(stride, n) if stride not in (None, [], ()) else kernel
    padding = _nd(padding, n)
    attrs = dict(kernel_shape=kernel, strides=stride, pads=padding + padding,
                 ceil_mode=1 if ceil_mode else 0)
    if dilation is not None:
        attrs['dilations'] = _nd(dilation, n)
    return attrs


def _max_pool(n):
    def fn(g, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        attrs = _pool_attrs(kernel_size, stride, padding, n, dilation, ceil_mode)

        def run(xx):
            y, idx = g.op('MaxPool', xx, outputs=2, **attrs)
            # ONNX counts positions over the whole tensor, PyTorch within each (n, c) plane
            plane = g.numel(x.shape[-n:])
            idx = g.op('Mod', idx, g.int1(plane) if isinstance(plane, Sym) else
                       g.const(np.array(plane, np.int64)))
            return y, idx
        return _batched(g, x, n, run)
    return fn


for _n in (1, 2, 3):
    reg(*_h(f'max_pool{_n}d_with_indices', 'default'))(_max_pool(_n))


def _avg_pool(n):
    def fn(g, x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
           divisor_override=None):
        attrs = _pool_attrs(kernel_size, stride, padding, n, None, ceil_mode)
        attrs['count_include_pad'] = 1 if count_include_pad else 0

        def run(xx):
            if divisor_override:
                attrs['count_include_pad'] = 1
                y = g.op('AveragePool', xx, **attrs)
                k = math.prod(attrs['kernel_shape'])
                return g.op('Mul', y, g.scalar(k / divisor_override, x.dtype))
            return g.op('AveragePool', xx, **attrs)
        return _batched(g, x, n, run)
    return fn


for _n in (1, 2, 3):
    reg(*_h(f'avg_pool{_n}d', 'default'))(_avg_pool(_n))


def _pool_matrix(n_in, n_out):
    """The (n_in, n_out) matrix of adaptive average pooling along one dim."""
    m = np.zeros((n_in, n_out), np.float64)
    for i in range(n_out):
        s = (i * n_in) // n_out
        e = -((-(i + 1) * n_in) // n_out)
        m[s:e, i] = 1.0 / (e - s)
    return m


def _adaptive_avg(n):
    def fn(g, x, output_size):
        out = _nd(output_size, n)
        spatial = list(x.shape[-n:])

        def run(xx):
            if all(o == 1 for o in out):
                return g.op('GlobalAveragePool', xx)
            sp = [g.static(s, 'the input size of an adaptive pool') for s in spatial]
            if all(s % o == 0 for s, o in zip(sp, out)):
                k = [s // o for s, o in zip(sp, out)]
                return g.op('AveragePool', xx, kernel_shape=k, strides=k)
            # each dim pooled by a matrix product, the dim moved last and back
            rank = n + 2
            name = xx
            from tensorplay.onnx._exporter import np_dtype
            for i in range(n):
                d = rank - 1 - i
                s, o = sp[n - 1 - i], out[n - 1 - i]
                if s == o:
                    continue
                perm = list(range(rank))
                perm[d], perm[rank - 1] = perm[rank - 1], perm[d]
                moved = name if d == rank - 1 else g.op('Transpose', name, perm=perm)
                p = g.const(_pool_matrix(s, o).astype(np_dtype(x.dtype)
                                                      if x.dtype != tp.bfloat16 else np.float32))
                if x.dtype == tp.bfloat16:
                    p = g.op('Cast', p, to=onnx_dtype(tp.bfloat16))
                r = g.op('MatMul', moved, p)
                name = r if d == rank - 1 else g.op('Transpose', r, perm=perm)
            return name
        return _batched(g, x, n, run)
    return fn


for _n in (1, 2, 3):
    reg(*_h(f'adaptive_avg_pool{_n}d', 'default'))(_adaptive_avg(_n))


def _adaptive_max(n):
    def fn(g, x, output_size):
        out = _nd(output_size, n)

        def run(xx):
            if all(o == 1 for o in out):
                return g.op('GlobalMaxPool', xx), None
            sp = [g.static(s, 'the input size of an adaptive pool') for s in x.shape[-n:]]
            if all(s % o == 0 for s, o in zip(sp, out)):
                k = [s // o for s, o in zip(sp, out)]
                return g.op('MaxPool', xx, kernel_shape=k, strides=k), None
            # max is separable: each dim's bins reduced in turn (one ReduceMax per bin)
            name = xx
            for i in range(n):
                d = 2 + i
                s, o = sp[i], out[i]
                if s == o:
                    continue
                parts = []
                for j in range(o):
                    lo, hi = (j * s) // o, -((-(j + 1) * s) // o)
                    piece = _slice(g, name, [lo], [hi], [d])
                    parts.append(g.op('ReduceMax', piece, g.const(np.array([d], np.int64)),
                                      keepdims=1))
                name = g.op('Concat', *parts, axis=d)
            return name, None
        return _batched(g, x, n, run)
    return fn


for _n in (1, 2, 3):
    reg(*_h(f'adaptive_max_pool{_n}d', 'default'))(_adaptive_max(_n))


def _channel_shaped(g, v, rank):
    """A per-channel (C,) vector reshaped to broadcast over (N, C, *spatial)."""
    return g.op('Reshape', v.name, g.ints([-1] + [1] * (rank - 2)))


def _ones_like_channels(g, c, dt, value):
    return _constant_of_shape(g, [c], value, dt)


@reg(aten.native_batch_norm.default)
def _batch_norm(g, x, w, b, mean, var, training, momentum, eps):
    dt = x.dtype
    c = x.shape[1]
    if not training and mean is not None and var is not None:
        scale = w.name if w is not None else _ones_like_channels(g, c, dt, 1)
        bias = b.name if b is not None else _ones_like_channels(g, c, dt, 0)
        y = g.op('BatchNormalization', x.name, scale, bias, g.cast(mean, dt), g.cast(var, dt),
                 epsilon=float(eps))
        return y, None, None
    axes = [0] + list(range(2, x.rank))
    m = _reduce(g, 'ReduceMean', x.name, axes, True)
    d = g.op('Sub', x.name, m)
    v = _reduce(g, 'ReduceMean', g.op('Mul', d, d), axes, True)
    y = g.op('Div', d, g.op('Sqrt', g.op('Add', v, g.scalar(eps, dt))))
    if w is not None:
        y = g.op('Mul', y, _channel_shaped(g, w, x.rank))
    if b is not None:
        y = g.op('Add', y, _channel_shaped(g, b, x.rank))
    return y, None, None


@reg(aten.native_layer_norm.default)
def _layer_norm(g, x, normalized_shape, w, b, eps):
    k = len(normalized_shape)
    dt = x.dtype
    scale = w.name if w is not None else _constant_of_shape(g, list(normalized_shape), 1, dt)
    ins = [x.name, scale] + ([b.name] if b is not None else [])
    y = g.op('LayerNormalization', *ins, axis=-k, epsilon=float(eps))
    return y, None, None


@reg(aten.native_group_norm.default)
def _group_norm(g, x, w, b, N, C, HxW, group, eps):
    dt = x.dtype
    xr = g.op('Reshape', x.name, g.ints([N, group, -1]),
              allowzero=None)
    axis = g.const(np.array([2], np.int64))
    m = g.op('ReduceMean', xr, axis, keepdims=1)
    d = g.op('Sub', xr, m)
    v = g.op('ReduceMean', g.op('Mul', d, d), axis, keepdims=1)
    y = g.op('Div', d, g.op('Sqrt', g.op('Add', v, g.scalar(eps, dt))))
    y = g.op('Reshape', y, g.shape_tensor(x))
    if w is not None:
        y = g.op('Mul', y, _channel_shaped(g, w, x.rank))
    if b is not None:
        y = g.op('Add', y, _channel_shaped(g, b, x.rank))
    return y, None, None


def _rms(g, x, normalized_shape, w, eps):
    dt = x.dtype
    k = len(normalized_shape)
    if eps is None:
        eps = tp.finfo(dt).eps
    axes = g.const(np.arange(x.rank - k, x.rank, dtype=np.int64))
    ms = g.op('ReduceMean', g.op('Mul', x.name, x.name), axes, keepdims=1)
    rstd = g.op('Reciprocal', g.op('Sqrt', g.op('Add', ms, g.scalar(eps, dt))))
    y = g.op('Mul', x.name, rstd)
    if w is not None:
        y = g.op('Mul', y, w.name)
    return y, rstd


@reg(aten._fused_rms_norm.default)
def _fused_rms_norm(g, x, normalized_shape, w, eps):
    return _rms(g, x, normalized_shape, w, eps)


@reg(aten._lstm_layer.default)
def _lstm_layer(g, gi, h0, c0, w_hh, b_hh, reverse):
    """One LSTM layer and direction over the whole sequence, from the precomputed input
    projections gi (seq, batch, 4H): an ONNX Scan whose body is one step (the gates in
    PyTorch's order i, f, g, o). Outputs: the hidden state of every step, no gates, the
    cell state of every step."""
    from onnx import helper
    dt = gi.dtype
    hidden = w_hh.shape[1]
    w_t = g.op('Transpose', w_hh.name, perm=[1, 0])
    et = onnx_dtype(dt)
    with g.subgraph() as body:
        h_in, c_in, x_in = g.fresh('lstm_h'), g.fresh('lstm_c'), g.fresh('lstm_x')
        gates = g.op('Add', x_in, g.op('MatMul', h_in, w_t))
        if b_hh is not None:
            gates = g.op('Add', gates, b_hh.name)
        i, f, gg, o = g.op('Split', gates, axis=1, num_outputs=4, outputs=4)
        c = g.op('Add', g.op('Mul', g.op('Sigmoid', f), c_in),
                 g.op('Mul', g.op('Sigmoid', i), g.op('Tanh', gg)))
        h = g.op('Mul', g.op('Sigmoid', o), g.op('Tanh', c))
        h_out, c_out = g.op('Identity', h), g.op('Identity', c)
        h_scan, c_scan = g.op('Identity', h), g.op('Identity', c)
    graph = helper.make_graph(
        body.nodes, g.fresh('lstm_step'),
        [helper.make_tensor_value_info(h_in, et, [None, hidden]),
         helper.make_tensor_value_info(c_in, et, [None, hidden]),
         helper.make_tensor_value_info(x_in, et, [None, 4 * hidden])],
        [helper.make_tensor_value_info(n, et, [None, hidden]) for n in
         (h_out, c_out, h_scan, c_scan)])
    d = 1 if reverse else 0
    outs = g.op('Scan', h0.name, c0.name, gi.name, body=graph, num_scan_inputs=1,
                scan_input_directions=[d], scan_output_directions=[d, d], outputs=4)
    return outs[2], None, outs[3]


@reg(aten._cross_entropy_rows.default)
def _cross_entropy_rows(g, x, target, ignore_index):
    """Per-row cross-entropy of logits (N, C) and class indices (N,): (loss, logsumexp);
    rows whose target is ignore_index get loss 0."""
    dt = x.dtype
    lse = _logsumexp(g, x.name, [1], False, dt)
    ign = g.op('Equal', target.name, g.scalar(ignore_index, target.dtype))
    safe = g.op('Where', ign, g.scalar(0, target.dtype), target.name)
    one = g.const(np.array([1], np.int64))
    picked = g.op('GatherElements', x.name, g.op('Unsqueeze', safe, one), axis=1)
    picked = g.op('Squeeze', picked, one)
    loss = g.op('Where', ign, g.scalar(0.0, dt), g.op('Sub', lse, picked))
    return loss, lse


@reg(aten.grid_sampler_2d.default)
def _grid_sampler_2d(g, x, grid, interpolation_mode, padding_mode, align_corners):
    if g.opset >= 20:
        modes = ('linear', 'nearest', 'cubic')
    else:
        modes = ('bilinear', 'nearest', 'bicubic')
    return g.op('GridSample', x.name, grid.name, mode=modes[interpolation_mode],
                padding_mode=('zeros', 'border', 'reflection')[padding_mode],
                align_corners=1 if align_corners else 0)


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
