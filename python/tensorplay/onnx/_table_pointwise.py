"""Translation-table entries (Note in tensorplay/onnx/_table.py): identity-like ops, pointwise
unary and binary ops, activations."""
import math

import numpy as np

import tensorplay as tp
from tensorplay.onnx._exporter import Value, is_float
from tensorplay.onnx._table import _h, aten, reg


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
