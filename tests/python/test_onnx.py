"""tp.onnx (issue 37): every entry of the translation table exported alone on sample inputs
and run in ONNX Runtime against TensorPlay's eager result; whole models (an MLP, the main
job's CNN, ResNet-18, an LSTM language model, a transformer encoder, a nanoGPT GPT with
dynamic batch and sequence axes) exported, checked by onnx.checker and run at the traced and
at other sizes; and the errors (unsupported op, data-dependent control flow, a dynamic axis
the model specialises on)."""
import io
import math
import pathlib
import subprocess
import sys

import pytest

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')

import tensorplay as tp  # noqa: E402
from tensorplay.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from tensorplay.onnx._decompositions import DECOMPOSITIONS  # noqa: E402
from tensorplay.onnx._rnn import rnn_layer_op  # noqa: E402
from tensorplay.onnx._table import TABLE  # noqa: E402

nn = tp.nn
F = nn.functional
aten = tp.ops.aten
ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---- samples of every table entry ----------------------------------------------------------

class In:
    """A graph input of the sample: its shape and how to fill it."""

    def __init__(self, *shape, dtype=tp.float32, kind='randn', high=None):
        self.shape, self.dtype, self.kind, self.high = shape, dtype, kind, high

    def make(self, gen):
        s = self.shape
        if self.kind == 'randn':
            t = tp.randn(*s, generator=gen)
        elif self.kind == 'pos':      # (0.1, 2.1)
            t = tp.rand(*s, generator=gen) * 2 + 0.1
        elif self.kind == 'unit':     # (-0.9, 0.9)
            t = (tp.rand(*s, generator=gen) * 2 - 1) * 0.9
        elif self.kind == 'prob':     # (0.05, 0.95)
            t = tp.rand(*s, generator=gen) * 0.9 + 0.05
        elif self.kind == 'gt1':
            t = tp.rand(*s, generator=gen) * 2 + 1.1
        elif self.kind == 'int':
            return tp.randint(-5, 6, s, generator=gen).to(self.dtype)
        elif self.kind == 'nonzero':  # ints without 0
            t = tp.randint(1, 6, s, generator=gen)
            sign = tp.randint(0, 2, s, generator=gen) * 2 - 1
            return (t * sign).to(self.dtype)
        elif self.kind == 'idx':      # indices in [0, high)
            return tp.randint(0, self.high, s, generator=gen).to(self.dtype)
        elif self.kind == 'bool':
            return tp.rand(*s, generator=gen) > 0.5
        elif self.kind == 'halves':   # ties of round-half-to-even
            t = tp.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, 3.6])
        elif self.kind == 'signed_zero':
            t = tp.tensor([0.0, -1.0, 2.0, 0.0, -3.0, 1.0, 0.0, -0.5])
        elif self.kind == 'special':  # NaN, +-inf and ordinary values
            t = tp.tensor([0.5, -1.5, float('nan'), float('inf'), -float('inf'), 3.0])
            return t.reshape(s).to(self.dtype)
        else:
            raise ValueError(self.kind)
        return t.to(self.dtype)


class Sample:
    def __init__(self, op, args, kwargs, out=None, tol=None, name=''):
        self.op, self.args, self.kwargs, self.out, self.tol, self.name = \
            op, args, kwargs, out, tol, name

    def inputs(self, seed):
        gen = tp.Generator().manual_seed(seed)
        found = []

        def walk(a):
            if isinstance(a, In):
                found.append(a.make(gen))
            elif isinstance(a, (list, tuple)):
                for x in a:
                    walk(x)
            elif isinstance(a, dict):
                for x in a.values():
                    walk(x)
        walk(self.args)
        walk(self.kwargs)
        return found

    def fn(self):
        op, args, kwargs, out = self.op, self.args, self.kwargs, self.out

        def call(*tensors):
            it = iter(tensors)

            def fill(a):
                if isinstance(a, In):
                    return next(it)
                if isinstance(a, list):
                    return [fill(x) for x in a]
                if isinstance(a, tuple):
                    return tuple(fill(x) for x in a)
                if isinstance(a, dict):
                    return {k: fill(v) for k, v in a.items()}
                return a
            r = op(*fill(args), **fill(kwargs))
            if out is not None:
                return tuple(r[i] for i in out)
            return r
        return call


SAMPLES = []


def add(op, *args, out=None, tol=None, name='', **kwargs):
    SAMPLES.append(Sample(op, args, kwargs, out, tol, name))


X = In(3, 4)
X3 = In(2, 3, 4)
for _op in ['abs', 'neg', 'exp', 'sin', 'cos', 'atan', 'sinh', 'cosh', 'asinh', 'tanh',
            'sigmoid', 'erf', 'sign', 'relu', 'floor', 'ceil', 'round', 'trunc', 'frac',
            'square', 'expm1', 'exp2', '_gelu', '_gelu_tanh', '_silu', '_mish',
            '_hardsigmoid', '_hardswish', 'clone', 'contiguous', 'detach', 'lift_fresh']:
    add(getattr(aten, _op).default, X3)
for _op, _kind in [('log', 'pos'), ('sqrt', 'pos'), ('rsqrt', 'pos'), ('reciprocal', 'pos'),
                   ('log1p', 'pos'), ('log2', 'pos'), ('log10', 'pos'), ('tan', 'unit'),
                   ('asin', 'unit'), ('acos', 'unit'), ('atanh', 'unit'), ('acosh', 'gt1')]:
    add(getattr(aten, _op).default, In(2, 3, 4, kind=_kind))
add(aten.abs.default, In(3, 4, dtype=tp.int64, kind='int'), name='int')
add(aten.neg.default, In(3, 4, dtype=tp.int32, kind='int'), name='int32')
add(aten.exp.default, In(3, 4, dtype=tp.int64, kind='int'), name='int->float')
add(aten.floor.default, In(3, 4, dtype=tp.int64, kind='int'), name='int')
add(aten.round.default, X3, decimals=2, name='decimals')
add(aten.round.default, In(8, kind='halves'), name='halves')
add(aten.sigmoid.default, In(3, 4, dtype=tp.float64), name='float64')
add(aten.relu.default, In(3, 4, dtype=tp.float16), name='float16')
add(aten.logit.default, In(3, 4, kind='prob'))
add(aten.logit.default, X, eps=0.1, name='eps')
add(aten.isnan.default, In(6, kind='special'))
add(aten.isinf.default, In(6, kind='special'))
add(aten.nan_to_num.default, In(6, kind='special'))
add(aten.nan_to_num.default, In(6, kind='special'), nan=1.0, posinf=2.0, neginf=-3.0,
    name='values')
add(aten.logical_not.default, In(3, 4, kind='bool'))
add(aten.logical_not.default, X, name='float')
add(aten.bitwise_not.default, In(3, 4, kind='bool'))
add(aten.bitwise_not.default, In(3, 4, dtype=tp.int64, kind='int'), name='int')
add(aten._softplus.default, X3, 1, 20)
add(aten._softplus.default, X3, 2.0, 1.0, name='beta')
add(aten._elu.default, X3, 1.0, 1.0, 1.0)
add(aten._elu.default, X3, 1.6732632423543772, 1.0507009873554805, 1.0, name='selu')
add(aten._elu.default, X3, 0.5, 1.0, 2.0, name='celu')
add(aten._leaky_relu.default, X3, 0.1)
add(aten._to_dtype.default, X3, tp.int32)
add(aten._to_dtype.default, X3, tp.float16, name='half')
add(aten._to_dtype.default, In(2, 3, dtype=tp.int64, kind='int'), tp.float32, name='int')
add(aten._to_dtype.default, X3, tp.bool, name='bool')
# binary
Y3 = In(2, 3, 4)
B4 = In(4)
add(aten.add.Tensor, X3, Y3)
add(aten.add.Tensor, X3, B4, alpha=2.5, name='alpha_broadcast')
add(aten.add.Tensor, X3, 1.5, name='scalar')
add(aten.add.Tensor, In(3, dtype=tp.int64, kind='int'), 2.5, name='int+float')
add(aten.add.Tensor, In(3, kind='bool'), In(3, kind='bool'), name='bool')
add(aten.sub.Tensor, X3, Y3, alpha=0.5)
add(aten.sub.Tensor, In(3, 4, dtype=tp.int64, kind='int'), 3, name='int')
add(aten.mul.Tensor, X3, Y3)
add(aten.mul.Tensor, X3, 3, name='scalar')
add(aten.mul.Tensor, In(3, kind='bool'), In(3, kind='bool'), name='bool')
add(aten.true_divide.Tensor, X3, In(2, 3, 4, kind='pos'))
add(aten.true_divide.Tensor, In(3, dtype=tp.int64, kind='int'), 2, name='int')
for _mode in (None, 'trunc', 'floor'):
    add(aten.div.Tensor_mode, X3, In(2, 3, 4, kind='pos'), rounding_mode=_mode, name=str(_mode))
    add(aten.div.Tensor_mode, In(3, 4, dtype=tp.int64, kind='int'),
        In(3, 4, dtype=tp.int64, kind='nonzero'), rounding_mode=_mode, name=f'int_{_mode}')
add(aten.floor_divide.default, X3, In(2, 3, 4, kind='pos'))
add(aten.floor_divide.default, In(3, 4, dtype=tp.int64, kind='int'),
    In(3, 4, dtype=tp.int64, kind='nonzero'), name='int')
add(aten.remainder.Tensor, X3, In(2, 3, 4, kind='pos'))
add(aten.remainder.Tensor, In(3, 4, dtype=tp.int64, kind='int'),
    In(3, 4, dtype=tp.int64, kind='nonzero'), name='int')
add(aten.fmod.Tensor, X3, In(2, 3, 4, kind='pos'))
add(aten.fmod.Tensor, In(3, 4, dtype=tp.int64, kind='int'),
    In(3, 4, dtype=tp.int64, kind='nonzero'), name='int')
add(aten.pow.Tensor_Tensor, In(2, 3, kind='pos'), In(2, 3))
add(aten.pow.Tensor_Tensor, X3, 2, name='square')
add(aten.pow.Tensor_Tensor, In(3, dtype=tp.int64, kind='int'), 3, name='int')
add(aten.pow.Scalar, 2.0, X3)
for _op in (aten.maximum.default, aten.minimum.default, aten.max.other, aten.min.other):
    add(_op, X3, Y3)
add(aten.maximum.default, In(6, kind='special'), In(6), name='nan')
add(aten.maximum.default, In(3, dtype=tp.int64, kind='int'), In(3, dtype=tp.int64, kind='int'),
    name='int')
add(aten.atan2.default, X3, Y3)
add(aten.atan2.default, In(8, kind='halves'), In(8, kind='signed_zero'), name='axes')
add(aten.hypot.default, X3, Y3)
add(aten.lerp.Tensor, X3, Y3, In(2, 3, 4, kind='prob'))
add(aten.addcmul.default, X3, Y3, In(4), value=0.5)
add(aten.addcdiv.default, X3, Y3, In(4, kind='pos'), value=2)
for _op in ('eq', 'ne', 'lt', 'le', 'gt', 'ge'):
    add(getattr(aten, _op).Tensor, In(3, 4, dtype=tp.int64, kind='int'),
        In(3, 4, dtype=tp.int64, kind='int'))
    add(getattr(aten, _op).Tensor, X3, 0.25, name='scalar')
    add(getattr(aten, _op).Tensor, In(3, 4, dtype=tp.int64, kind='int'), 0.5, name='int_float')
add(aten.lt.Tensor, In(4, kind='bool'), In(4, kind='bool'), name='bool')
for _op in ('bitwise_and', 'bitwise_or', 'bitwise_xor'):
    add(getattr(aten, _op).Tensor, In(3, 4, kind='bool'), In(3, 4, kind='bool'))
    add(getattr(aten, _op).Tensor, In(3, 4, dtype=tp.int64, kind='int'),
        In(3, 4, dtype=tp.int64, kind='int'), name='int')
for _op in ('logical_and', 'logical_or', 'logical_xor'):
    add(getattr(aten, _op).default, In(3, 4, kind='bool'), X)
add(aten.where.self, In(2, 3, 4, kind='bool'), X3, Y3)
add(aten.where.self, In(3, 4, kind='bool'), X, 0.0, name='scalar')
add(aten.masked_fill.Tensor, X3, In(3, 4, kind='bool'), -math.inf)
add(aten.masked_fill.Tensor, X3, In(4, kind='bool'), 2, name='int_value')
add(aten.clamp.Tensor, X3, In(4), In(4, kind='pos'))
add(aten.clamp.Tensor, In(6, kind='special'), -1.0, 1.0, name='nan')
add(aten.clamp.Tensor, X3, None, 0.5, name='max_only')
# reductions
for _op in (aten.sum.default, aten.mean.default):
    add(_op, X3)
    add(_op, X3, [1], True, name='dim_keepdim')
    add(_op, X3, [0, 2], name='dims')
    add(_op, X3, [-1], name='neg')
add(aten.sum.default, In(3, 4, kind='bool'), [1], name='bool')
add(aten.sum.default, In(3, 4, dtype=tp.int32, kind='int'), dtype=tp.float32, name='dtype')
add(aten.prod.default, X3)
add(aten.prod.default, X3, 1, True, name='dim')
for _op in (aten.amax.default, aten.amin.default):
    add(_op, X3, [1])
    add(_op, X3, [0, 2], True, name='dims_keepdim')
    add(_op, In(3, 4, kind='bool'), [1], name='bool')
add(aten.max.default, X3)
add(aten.min.default, X3)
add(aten.max.dim, X3, 1, out=(0, 1))
add(aten.max.dim, X3, -1, True, out=(0, 1), name='keepdim')
add(aten.min.dim, X3, 0, out=(0, 1))
add(aten.max.dim, In(3, 4, dtype=tp.int64, kind='int'), 1, out=(0,), name='int')
add(aten.argmax.default, X3, 1)
add(aten.argmax.default, X3, name='flat')
add(aten.argmax.default, X3, None, True, name='flat_keepdim')
add(aten.argmin.default, X3, 2, True)
add(aten.any.dims, In(3, 4, kind='bool'), [1])
add(aten.any.dims, X, name='all_dims_float')
add(aten.all.dims, In(3, 4, kind='bool'), [0], True)
for _ov in ('correction', 'dim', 'default'):
    for _op in (aten.var, aten.std):
        h = getattr(_op, _ov)
        if _ov == 'correction':
            add(h, X3, [1], correction=0, name='corr0')
            add(h, X3, [0, 2], keepdim=True, name='keepdim')
            add(h, X3, name='all')
        elif _ov == 'dim':
            add(h, X3, [2], False, True)
        else:
            add(h, X3)
add(aten.logsumexp.default, X3, [1])
add(aten.logsumexp.default, In(2, 3), [0, 1], True, name='keepdim')
add(aten.logsumexp.default, In(2, 3, kind='int', dtype=tp.int64), [1], name='int')
for _ord in (2, 1, 3, math.inf, -math.inf, 0):
    add(aten.linalg_vector_norm.default, X3, _ord, [1], name=f'ord{_ord}')
add(aten.linalg_vector_norm.default, X3, name='all')
add(aten.linalg_vector_norm.default, X3, 2, [2], True, name='keepdim')
add(aten.cumsum.default, X3, 1)
add(aten.cumsum.default, In(3, 4, dtype=tp.int64, kind='int'), 0, name='int')
add(aten.cumsum.default, In(3, 4, kind='bool'), -1, name='bool')
add(aten.softmax.int, X3, -1)
add(aten.softmax.int, X3, 0, name='dim0')
add(aten.log_softmax.int, X3, 1)
add(aten.sort.default, In(3, 6), out=(0, 1))
add(aten.sort.default, In(3, 6), 0, True, out=(0, 1), name='descending')
add(aten.argsort.default, In(3, 6), 1)
add(aten.topk.default, In(3, 6), 2, out=(0, 1))
add(aten.topk.default, In(3, 6), 2, 0, False, out=(0, 1), name='smallest')
# matrix products
add(aten.mm.default, In(3, 4), In(4, 5))
add(aten.bmm.default, In(2, 3, 4), In(2, 4, 5))
add(aten.matmul.default, In(2, 3, 4), In(4, 5))
add(aten.matmul.default, In(2, 1, 3, 4), In(5, 4, 2), name='broadcast')
add(aten.matmul.default, In(4), In(2, 4, 3), name='vec')
add(aten.dot.default, In(5), In(5))
add(aten.mv.default, In(3, 5), In(5))
add(aten.addmm.default, In(5), In(3, 4), In(4, 5))
add(aten.addmm.default, In(3, 5), In(3, 4), In(4, 5), beta=0.5, alpha=2.0, name='scaled')
add(aten.addmm.default, In(5), In(3, 4), In(4, 5), beta=0, name='beta0')
add(aten.addmm.default, In(5, dtype=tp.int64, kind='int'), In(3, 4, dtype=tp.int64, kind='int'),
    In(4, 5, dtype=tp.int64, kind='int'), name='int')
add(aten.baddbmm.default, In(3, 5), In(2, 3, 4), In(2, 4, 5), beta=0.5, alpha=2)
add(aten.addbmm.default, In(3, 5), In(2, 3, 4), In(2, 4, 5))
add(aten.addmv.default, In(3), In(3, 5), In(5), alpha=0.5)
add(aten.einsum.default, 'bij,bjk->bik', [In(2, 3, 4), In(2, 4, 5)])
add(aten.einsum.default, 'i j, j -> i', [In(3, 4), In(4)], name='spaces')
add(aten.einsum.default, '...ij->...ji', [In(2, 3, 4)], name='ellipsis')
add(aten.t.default, In(3, 4))
add(aten.t.default, In(3), name='1d')
# shapes and views
add(aten.reshape.default, X3, [4, -1])
add(aten.reshape.default, X3, [24], name='flat')
add(aten.view.default, X3, [2, 12])
add(aten.flatten.using_ints, In(2, 3, 4, 5), 1, 2)
add(aten.unflatten.int, X3, 2, [2, 2])
add(aten.unsqueeze.default, X3, -1)
add(aten.unsqueeze.default, X3, 1, name='mid')
add(aten._squeeze_dims.default, In(2, 1, 4, 1), [1, 3])
add(aten._squeeze_dims.default, In(2, 1, 4), [0, -2], name='partial')
add(aten.permute.default, X3, [2, 0, 1])
add(aten.transpose.int, X3, 0, -1)
add(aten.expand.default, In(3, 1), [2, 3, 4])
add(aten.expand.default, In(3, 1), [-1, 5], name='minus1')
add(aten.repeat.default, In(2, 3), [2, 1, 3])
add(aten.narrow.default, X3, 2, 1, 2)
add(aten.narrow.default, X3, -1, -3, 2, name='negative')
add(aten.select.int, X3, 1, 2)
add(aten.select.int, X3, -1, -1, name='negative')
add(aten.cat.default, [X3, Y3], 1)
add(aten.cat.default, [X3, In(2, 3, 2), In(2, 3, 1)], -1, name='three')
add(aten.cat.default, [X3, In(2, 3, 4, dtype=tp.int64, kind='int')], 0, name='promote')
add(aten.stack.default, [X, X, X], 1)
add(aten.stack.default, [X, X], -1, name='last')
add(aten.flip.default, X3, [0, 2])
add(aten.roll.default, X3, [1, -2], [1, 2])
add(aten.roll.default, X3, [5], name='flat')
add(aten.tril.default, In(4, 5))
add(aten.triu.default, In(2, 4, 5), 1)
add(aten.tril.default, In(4, 4, kind='bool'), -1, name='bool')
add(aten.triu.default, In(4, 4, dtype=tp.int32, kind='int'), name='int32')
add(aten.constant_pad_nd.default, X3, [1, 2], 0.5)
add(aten.constant_pad_nd.default, In(1, 2, 3, 4), [1, 0, 2, 1, 0, 1], name='3dims')
add(aten.constant_pad_nd.default, In(2, 5, 6), [-1, 1, 2, -2], name='negative')
add(aten.reflection_pad1d.default, In(2, 3, 5), [2, 1])
add(aten.reflection_pad2d.default, In(1, 2, 4, 5), [1, 2, 2, 1])
add(aten.reflection_pad3d.default, In(1, 1, 3, 4, 5), [1, 1, 1, 2, 2, 1])
add(aten.replication_pad1d.default, In(2, 3, 5), [2, 1])
add(aten.replication_pad2d.default, In(1, 2, 4, 5), [1, 2, 2, 1])
add(aten.replication_pad3d.default, In(1, 1, 3, 4, 5), [1, 1, 1, 2, 2, 1])
add(aten.as_strided.default, In(4, 6), [2, 3], [6, 2], 7, name='slice_steps')
add(aten.as_strided.default, In(4, 6), [4, 1, 3], [6, 0, 1], 2, name='new_dim')
add(aten.as_strided.default, In(4, 6), [3], [6], 1, name='column')
add(aten.as_strided.default, In(4, 6), [6, 4], [1, 6], 0, name='transposed')
add(aten.as_strided.default, In(2, 3, 4), [2, 2], [12, 4], 5, name='select_inner')
# factories (constant outputs: the graph adds an input so it has one)
add(lambda x: x + aten.zeros.default([3, 4]), X, name='zeros')
add(lambda x: x + aten.ones.default([3, 4], dtype=tp.float32), X, name='ones')
add(lambda x: aten.full.default([3, 4], 2.5) * x, X, name='full')
add(lambda x: aten.full.default([3, 4], 7, dtype=tp.int64) + x, X, name='full_int')
add(lambda x: aten.full.default([2], True, dtype=tp.bool) & (x > 0), In(2), name='full_bool')
add(lambda x: aten.empty.memory_format([3, 4]).fill_(1.0) + x, X, name='empty')
add(lambda x: aten.empty_strided.default([3, 4], [4, 1]).zero_() + x, X, name='empty_strided')
add(lambda x: aten.arange.default(0, 4) + x, X, name='arange')
add(lambda x: aten.arange.default(0.5, 2.0, 0.25) + x, In(6), name='arange_float')
add(lambda x: aten.linspace.default(0, 1, 4) + x, X, name='linspace')
add(lambda x: aten.logspace.default(0, 2, 4) * x, X, name='logspace')
add(lambda x: aten.eye.default(4) * x, In(4, 4), name='eye')
add(lambda x: aten.tril_indices.default(3, 4) + x, In(2, 1, dtype=tp.int64, kind='int'),
    name='tril_indices')
add(lambda x: aten.triu_indices.default(3, 3, 1) + x, In(2, 1, dtype=tp.int64, kind='int'),
    name='triu_indices')
# in-place ops, written into a fresh tensor and into a view of one
add(lambda x: aten.fill_.Scalar(x.clone(), 3.0), X, name='fill_')
add(lambda x: aten.zero_.default(x.clone()), X, name='zero_')
add(lambda x, y: aten.copy_.default(x.clone(), y), X, In(4), name='copy_')


def _setitem(x, v):
    y = x.clone()
    y[1, 1:3] = v
    y[:, 0] = 5.0
    return y * 2


add(_setitem, X, In(2), name='setitem_views')
# indexing
add(aten.index_select.default, X3, 1, In(4, dtype=tp.int64, kind='idx', high=3))
add(aten.index_select.default, X3, -1, In(2, dtype=tp.int32, kind='idx', high=4), name='int32')
add(aten.gather.default, X3, 2, In(2, 3, 5, dtype=tp.int64, kind='idx', high=4))
add(aten.gather.default, X3, 0, In(1, 2, 4, dtype=tp.int64, kind='idx', high=2), name='smaller')
add(aten.scatter.src, X3, 1, In(2, 2, 4, dtype=tp.int64, kind='idx', high=3), In(2, 2, 4))
add(aten.scatter.src, X3, 2, In(2, 3, 1, dtype=tp.int64, kind='idx', high=4), In(2, 3, 4),
    reduce='add', name='add_src_larger')
add(aten.scatter.value, X3, 2, In(2, 3, 1, dtype=tp.int64, kind='idx', high=4), 1.5)
add(aten.scatter_add.default, X3, 1, In(2, 2, 4, dtype=tp.int64, kind='idx', high=3), In(2, 2, 4))
add(aten.scatter_reduce.two, X3, 2, In(2, 3, 2, dtype=tp.int64, kind='idx', high=4),
    In(2, 3, 2), 'amax')
add(aten.scatter_reduce.two, X3, 2, In(2, 3, 2, dtype=tp.int64, kind='idx', high=4),
    In(2, 3, 2), 'sum', name='sum')
add(aten.index_put.hacked_twin, X3, [In(2, dtype=tp.int64, kind='idx', high=2)], In(2, 3, 4))
add(aten.index_put.hacked_twin, X3, [In(3, dtype=tp.int64, kind='idx', high=2),
                                     In(3, dtype=tp.int64, kind='idx', high=3)], In(4),
    accumulate=True, name='two_accumulate')
add(aten.index_put.hacked_twin, X3, [In(2, 3, kind='bool')], In(1), name='mask')
add(aten.take_along_dim.default, X3, In(2, 3, 2, dtype=tp.int64, kind='idx', high=4), 2)
add(aten.take_along_dim.default, X3, In(5, dtype=tp.int64, kind='idx', high=24), name='flat')
# layers
add(aten.convolution.default, In(2, 3, 9), In(4, 3, 3), In(4), [2], [1], [1], False, [0], 1,
    name='1d')
add(aten.convolution.default, In(2, 4, 9, 8), In(6, 2, 3, 2), None, [1, 2], [1, 0], [2, 1],
    False, [0, 0], 2, name='2d_groups_dilation')
add(aten.convolution.default, In(1, 2, 5, 6, 4), In(3, 2, 3, 3, 2), In(3), [1, 1, 1],
    [1, 1, 0], [1, 1, 1], False, [0, 0, 0], 1, name='3d')
add(aten.convolution.default, In(2, 3, 7), In(3, 4, 3), In(4), [2], [1], [1], True, [1], 1,
    name='transposed1d')
add(aten.convolution.default, In(1, 4, 5, 5), In(4, 3, 3, 3), In(6), [2, 2], [1, 1], [1, 1],
    True, [1, 0], 2, name='transposed2d_groups')
add(aten.convolution.default, In(1, 2, 3, 4, 3), In(2, 2, 2, 2, 2), None, [2, 1, 2],
    [0, 1, 0], [1, 1, 1], True, [0, 0, 1], 1, name='transposed3d')
add(aten.max_pool1d_with_indices.default, In(2, 3, 9), [3], [2], [1], out=(0, 1))
add(aten.max_pool2d_with_indices.default, In(2, 3, 9, 8), [3, 2], [2, 2], [1, 0], [1, 1],
    out=(0, 1))
add(aten.max_pool2d_with_indices.default, In(2, 3, 9, 8), [3, 3], [2, 2], [1, 1], [1, 1], True,
    out=(0, 1), name='ceil')
add(aten.max_pool2d_with_indices.default, In(2, 3, 9, 9), [2, 2], [], [0, 0], [2, 2],
    out=(0, 1), name='dilation')
add(aten.max_pool3d_with_indices.default, In(1, 2, 5, 6, 4), [2, 2, 2], out=(0, 1))
add(aten.max_pool2d_with_indices.default, In(3, 8, 8), [2, 2], out=(0, 1), name='unbatched')
add(aten.avg_pool1d.default, In(2, 3, 9), [3], [2], [1])
add(aten.avg_pool2d.default, In(2, 3, 9, 8), [3, 2], [2, 2], [1, 1], False, False,
    name='exclude_pad')
add(aten.avg_pool2d.default, In(2, 3, 9, 8), [3, 3], [2, 2], [1, 1], True, True, name='ceil')
add(aten.avg_pool2d.default, In(2, 3, 8, 8), [2, 2], divisor_override=3, name='divisor')
add(aten.avg_pool3d.default, In(1, 2, 4, 6, 4), [2, 2, 2])
add(aten.adaptive_avg_pool1d.default, In(2, 3, 10), [4])
add(aten.adaptive_avg_pool2d.default, In(2, 3, 9, 8), [1, 1], name='global')
add(aten.adaptive_avg_pool2d.default, In(2, 3, 8, 8), [4, 2], name='divisible')
add(aten.adaptive_avg_pool2d.default, In(2, 3, 9, 7), [4, 3], name='uneven')
add(aten.adaptive_avg_pool3d.default, In(1, 2, 5, 4, 6), [2, 2, 3])
add(aten.adaptive_max_pool1d.default, In(2, 3, 8), [4], out=(0,))
add(aten.adaptive_max_pool2d.default, In(2, 3, 8, 6), [1, 1], out=(0,), name='global')
add(aten.adaptive_max_pool2d.default, In(2, 3, 8, 6), [2, 3], out=(0,))
add(aten.native_batch_norm.default, In(2, 3, 4, 5), In(3), In(3), In(3), In(3, kind='pos'),
    False, 0.1, 1e-5, out=(0,))
add(aten.native_batch_norm.default, In(4, 3), None, None, In(3), In(3, kind='pos'),
    False, 0.1, 1e-3, out=(0,), name='1d_no_affine')
add(aten.native_batch_norm.default, In(4, 3, 5), In(3), In(3), None, None, True, 0.1, 1e-5,
    out=(0,), name='training')
add(aten.native_layer_norm.default, X3, [4], In(4), In(4), 1e-5, out=(0,))
add(aten.native_layer_norm.default, X3, [3, 4], None, None, 1e-5, out=(0,), name='no_affine')
add(aten.native_group_norm.default, In(2, 6, 4, 3), In(6), In(6), 2, 6, 12, 3, 1e-5, out=(0,))
add(aten.native_group_norm.default, In(2, 4, 5), None, None, 2, 4, 5, 1, 1e-5, out=(0,),
    name='no_affine')
add(aten._fused_rms_norm.default, X3, [4], In(4), 1e-6, out=(0, 1))
add(aten._fused_rms_norm.default, X3, [3, 4], None, None, out=(0,), name='no_weight_eps')
add(aten._lstm_layer.default, In(5, 2, 12), In(2, 3), In(2, 3), In(12, 3), In(12), False,
    out=(0, 2))
add(aten._lstm_layer.default, In(5, 2, 12), In(2, 3), In(2, 3), In(12, 3), None, True,
    out=(0, 2), name='reverse_no_bias')
add(rnn_layer_op(), In(5, 2, 9), In(2, 3), In(9, 3), In(9), 'GRU', False, out=(0, 1),
    name='gru')
add(rnn_layer_op(), In(5, 2, 3), In(2, 3), In(3, 3), None, 'RNN_TANH', True, out=(0, 1),
    name='rnn_tanh_reverse')
add(rnn_layer_op(), In(4, 3, 2), In(3, 2), In(2, 2), In(2), 'RNN_RELU', False, out=(0, 1),
    name='rnn_relu')
add(aten._cross_entropy_rows.default, In(4, 5),
    In(4, dtype=tp.int64, kind='idx', high=5), -100, out=(0, 1))
add(lambda x, t: aten._cross_entropy_rows.default(x, t.masked_fill(t == 0, -100), -100),
    In(6, 5), In(6, dtype=tp.int64, kind='idx', high=5), out=(0, 1), name='ignore_index')
add(aten.movedim.intlist, In(2, 3, 4, 5), [0, 1], [3, 0])
add(aten.moveaxis.intlist, X3, [2], [0])
add(aten.swapaxes.default, X3, 0, 2)
add(aten.diagonal.default, In(4, 5))
add(aten.diagonal.default, In(2, 4, 5), 1, 1, 2, name='offset')
add(aten.diagonal.default, In(4, 3, 2), -1, 0, 1, name='negative_offset')
add(aten.unfold.default, In(2, 7, 3), 1, 3, 2)
add(aten.index_add.default, X3, 1, In(4, dtype=tp.int64, kind='idx', high=3), In(2, 4, 4),
    alpha=0.5)
add(lambda x, s: aten.index_copy.default(x, 2, tp.tensor([3, 0]), s), X3, In(2, 3, 2),
    name='index_copy')
add(aten.take.default, X3, In(2, 3, dtype=tp.int64, kind='idx', high=24))
add(aten.xlogy.Tensor, In(6, kind='special'), In(6, kind='pos'))
add(aten.xlogy.Tensor, In(3, 4, kind='bool'), In(3, 4, kind='pos'), name='zeros')
add(aten.tile.default, X3, [2, 1])
add(aten.im2col.default, In(2, 3, 6, 5), [2, 3], [1, 1], [1, 0], [2, 1])
add(aten.im2col.default, In(3, 5, 5), [3, 3], [2, 1], [2, 2], [1, 2], name='unbatched')
add(aten.broadcast_to.default, In(3, 1), [2, 3, 4])
add(aten.kthvalue.default, In(3, 6), 2, 1, out=(0, 1))
add(aten.kthvalue.default, In(3, 6), 3, 0, True, out=(0,), name='keepdim')
add(aten.tensordot.default, In(2, 3, 4), In(4, 3, 5), [1, 2], [1, 0])
add(aten.adaptive_max_pool2d.default, In(2, 3, 8, 7), [3, 5], out=(0,), name='uneven')
# ops without a translation of their own, exported through their decompositions
add(aten.trace.default, In(4, 5))
add(aten.diag.default, In(4, 5), 1)
add(aten.diag.default, In(3), -1, name='embed')
add(aten.diag_embed.default, In(2, 3), 1, 0, 2)
add(aten.cross.default, In(4, 3), In(4, 3))
add(aten.cross.default, In(3, 2), In(3, 1), 0, name='dim_broadcast')
for _p in ('std_mean', 'var_mean'):
    add(getattr(aten, _p).correction, X3, [1], correction=0, keepdim=True, out=(0, 1))
    add(getattr(aten, _p).dim, X3, [2], False, out=(0, 1))
    add(getattr(aten, _p).default, X3, out=(0, 1))
add(aten.aminmax.default, X3, dim=1, out=(0, 1))
add(aten.aminmax.default, X3, out=(0, 1), name='all')
add(aten.nansum.default, In(6, kind='special'))
add(aten.nanmean.default, In(6, kind='special'))
add(aten.count_nonzero.default, In(3, 4, dtype=tp.int64, kind='int'), [1])
add(aten.isclose.default, In(6, kind='special'), In(6, kind='special'), equal_nan=True)
add(aten.isclose.default, X3, Y3, 0.5, 0.5, name='loose')
add(aten.sgn.default, X3)
add(aten.erfc.default, X3)
add(lambda x: aten.bucketize.Tensor(x, tp.tensor([-1.0, 0.0, 0.5, 2.0])), X3, name='bucketize')
add(lambda x: aten.bucketize.Tensor(x, tp.tensor([-1.0, 0.0, 0.5]), right=True, out_int32=True),
    X3, name='bucketize_right')
add(lambda x: aten.searchsorted.Tensor(tp.tensor([-1.0, 0.0, 0.5]), x, side='right'), X3,
    name='searchsorted')
add(lambda x: aten.searchsorted.Tensor(tp.tensor([[-1.0, 0.0], [0.5, 1.0]]), x), In(2, 3),
    name='searchsorted_rows')
add(aten.fliplr.default, X3)
add(aten.flipud.default, X3)
for _k in (1, 2, 3, 4):
    add(aten.rot90.default, X3, _k, [1, 2], name=f'k{_k}')
add(lambda x: aten.index_fill.int_Tensor(x, 1, tp.tensor([2, 0]), tp.tensor(-1.0)), X3,
    name='index_fill')
add(aten.median.default, In(3, 5))
add(aten.median.dim, In(3, 6), 1, out=(0, 1))
add(aten.grid_sampler_2d.default, In(1, 2, 5, 6), In(1, 3, 4, 2, kind='unit'), 0, 0, False)
add(aten.grid_sampler_2d.default, In(1, 2, 5, 6), In(1, 3, 4, 2, kind='unit'), 1, 1, True,
    name='nearest_border')


def _sample_id(s):
    name = str(s.op) if hasattr(s.op, '_schema') else 'fn'
    return f'{name}-{s.name}' if s.name else name


def _graph_targets(fn, inputs):
    with tp.no_grad():
        gm = make_fx(fn)(*inputs)
    return {n.target for n in gm.graph.nodes if n.op == 'call_function'}


def test_table_keys_are_op_handles():
    for key in TABLE:
        assert isinstance(key, tp._ops.OpOverload), key
        packet = getattr(getattr(tp.ops, key.namespace), key._opname)
        assert getattr(packet, key._overloadname) is key, key


def test_every_table_entry_has_a_sample():
    covered = set()
    for s in SAMPLES:
        covered |= _graph_targets(s.fn(), s.inputs(0))
        with tp.no_grad():
            gm = make_fx(s.fn(), decomposition_table=DECOMPOSITIONS)(*s.inputs(0))
        covered |= {n.target for n in gm.graph.nodes if n.op == 'call_function'}
    missing = sorted(str(k) for k in list(TABLE) + list(DECOMPOSITIONS) if k not in covered)
    assert not missing, f'table entries no sample reaches: {missing}'


def test_decompositions_are_op_handles_without_translations():
    for key in DECOMPOSITIONS:
        assert isinstance(key, tp._ops.OpOverload), key
        assert getattr(getattr(tp.ops.aten, key._opname), key._overloadname) is key
        assert key not in TABLE, f'{key} has a translation and a decomposition'


def _export_and_check(fn, inputs, rtol=1e-5, atol=1e-5, **kw):
    prog = tp.onnx.export(fn, tuple(inputs), **kw)
    onnx.checker.check_model(prog.model_proto, full_check=True)
    tp.onnx.verify(fn, tuple(inputs), prog, rtol=rtol, atol=atol)
    return prog


@pytest.mark.parametrize('sample', SAMPLES, ids=[_sample_id(s) for s in SAMPLES])
def test_op(sample):
    inputs = sample.inputs(1)
    fn = sample.fn()
    if hasattr(sample.op, '_schema'):
        assert sample.op in _graph_targets(fn, inputs), \
            f'{sample.op} does not reach the graph (a composite op?)'
    tol = sample.tol or (1e-5, 1e-5)
    if any(t.dtype == tp.float16 for t in inputs):
        tol = (1e-3, 1e-3)
    _export_and_check(fn, inputs, *tol)


# ---- layers of tp.nn -----------------------------------------------------------------------

def _seeded(seed=0):
    tp.manual_seed(seed)


def _bn(m):
    """Non-trivial running statistics and affine parameters for every batch norm in m."""
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            c = mod.num_features
            mod.running_mean.copy_(tp.randn(c) * 0.1)
            mod.running_var.copy_(tp.rand(c) + 0.5)
            if mod.weight is not None:
                mod.weight.data.copy_(tp.rand(c) + 0.5)
                mod.bias.data.copy_(tp.randn(c) * 0.1)
    return m


class _Fn(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *args):
        return self.f(*args)


class _MaskedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        pad = tp.tensor([[False] * 4 + [True], [False] * 5])
        causal = nn.Transformer.generate_square_subsequent_mask(5)
        return self.mha(x, x, x, key_padding_mask=pad, attn_mask=causal)


LAYERS = [
    ('Linear', lambda: nn.Linear(6, 5), lambda: (tp.randn(4, 6),)),
    ('Linear3d_nobias', lambda: nn.Linear(6, 5, bias=False), lambda: (tp.randn(2, 3, 6),)),
    ('Bilinear', lambda: nn.Bilinear(3, 4, 5), lambda: (tp.randn(2, 3), tp.randn(2, 4))),
    ('Conv1d', lambda: nn.Conv1d(3, 4, 3, padding=1), lambda: (tp.randn(2, 3, 10),)),
    ('Conv2d', lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), lambda: (tp.randn(2, 3, 9, 9),)),
    ('Conv2d_same', lambda: nn.Conv2d(3, 4, 3, padding='same', dilation=2),
     lambda: (tp.randn(2, 3, 9, 9),)),
    ('Conv2d_depthwise', lambda: nn.Conv2d(4, 8, 3, groups=4), lambda: (tp.randn(2, 4, 7, 7),)),
    ('Conv2d_unbatched', lambda: nn.Conv2d(3, 4, 3), lambda: (tp.randn(3, 7, 7),)),
    ('Conv3d', lambda: nn.Conv3d(2, 3, 3, padding=1), lambda: (tp.randn(1, 2, 5, 6, 4),)),
    ('ConvTranspose1d', lambda: nn.ConvTranspose1d(3, 4, 3, stride=2, output_padding=1),
     lambda: (tp.randn(2, 3, 6),)),
    ('ConvTranspose2d', lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1),
     lambda: (tp.randn(2, 4, 5, 5),)),
    ('ConvTranspose3d', lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), lambda: (tp.randn(1, 2, 3, 3, 2),)),
    ('MaxPool1d', lambda: nn.MaxPool1d(3, 2, 1), lambda: (tp.randn(2, 3, 11),)),
    ('MaxPool2d', lambda: nn.MaxPool2d(3, 2, 1, ceil_mode=True), lambda: (tp.randn(2, 3, 10, 9),)),
    ('MaxPool2d_indices', lambda: nn.MaxPool2d(2, return_indices=True), lambda: (tp.randn(2, 3, 8, 8),)),
    ('MaxPool3d', lambda: nn.MaxPool3d(2), lambda: (tp.randn(1, 2, 4, 6, 4),)),
    ('AvgPool1d', lambda: nn.AvgPool1d(3, 2, 1), lambda: (tp.randn(2, 3, 11),)),
    ('AvgPool2d', lambda: nn.AvgPool2d(3, 2, 1, count_include_pad=False), lambda: (tp.randn(2, 3, 10, 9),)),
    ('AvgPool3d', lambda: nn.AvgPool3d(2), lambda: (tp.randn(1, 2, 4, 6, 4),)),
    ('AdaptiveAvgPool2d', lambda: nn.AdaptiveAvgPool2d((3, 5)), lambda: (tp.randn(2, 3, 10, 11),)),
    ('AdaptiveMaxPool2d', lambda: nn.AdaptiveMaxPool2d(1), lambda: (tp.randn(2, 3, 10, 11),)),
    ('BatchNorm1d', lambda: _bn(nn.BatchNorm1d(5)), lambda: (tp.randn(4, 5, 3),)),
    ('BatchNorm2d', lambda: _bn(nn.BatchNorm2d(3)), lambda: (tp.randn(2, 3, 4, 5),)),
    ('BatchNorm3d', lambda: _bn(nn.BatchNorm3d(2)), lambda: (tp.randn(1, 2, 3, 4, 5),)),
    ('InstanceNorm2d', lambda: nn.InstanceNorm2d(3, affine=True), lambda: (tp.randn(2, 3, 5, 5),)),
    ('LayerNorm', lambda: nn.LayerNorm([3, 4]), lambda: (tp.randn(2, 3, 4),)),
    ('LayerNorm_nobias', lambda: nn.LayerNorm(4, bias=False), lambda: (tp.randn(2, 3, 4),)),
    ('GroupNorm', lambda: nn.GroupNorm(2, 6), lambda: (tp.randn(2, 6, 4, 3),)),
    ('RMSNorm', lambda: nn.RMSNorm(8), lambda: (tp.randn(2, 3, 8),)),
    ('Embedding', lambda: nn.Embedding(20, 4), lambda: (tp.randint(0, 20, (3, 5)),)),
    ('Embedding_padding_idx', lambda: nn.Embedding(20, 4, padding_idx=0),
     lambda: (tp.randint(0, 20, (3, 5)),)),
    ('Dropout_eval', lambda: nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.Dropout1d(0.3)),
     lambda: (tp.randn(3, 4, 4),)),
    ('Flatten_Unflatten', lambda: nn.Sequential(nn.Flatten(), nn.Unflatten(1, (4, 6))),
     lambda: (tp.randn(2, 3, 8),)),
    ('PixelShuffle', lambda: nn.Sequential(nn.PixelShuffle(2), nn.PixelUnshuffle(2)),
     lambda: (tp.randn(1, 8, 3, 3),)),
    ('Upsample_nearest', lambda: nn.Upsample(scale_factor=2), lambda: (tp.randn(1, 2, 3, 4),)),
    ('Upsample_bilinear', lambda: nn.Upsample(size=(5, 7), mode='bilinear'), lambda: (tp.randn(1, 2, 3, 4),)),
    ('Pads', lambda: nn.Sequential(nn.ZeroPad2d((1, 2, 0, 1)), nn.ReflectionPad2d(1),
                                   nn.ReplicationPad2d((2, 0, 1, 1)), nn.ConstantPad2d(1, 0.5)),
     lambda: (tp.randn(1, 2, 4, 5),)),
    ('CosineSimilarity', lambda: nn.CosineSimilarity(dim=1), lambda: (tp.randn(3, 5), tp.randn(3, 5))),
    ('PairwiseDistance', lambda: nn.PairwiseDistance(), lambda: (tp.randn(3, 5), tp.randn(3, 5))),
    ('LSTM_batch_first', lambda: nn.LSTM(4, 6, 2, batch_first=True), lambda: (tp.randn(2, 5, 4),)),
    ('LSTM_bidirectional', lambda: nn.LSTM(4, 6, bidirectional=True), lambda: (tp.randn(5, 2, 4),)),
    ('GRU', lambda: nn.GRU(4, 6, 2), lambda: (tp.randn(5, 2, 4),)),
    ('RNN_relu_bidirectional', lambda: nn.RNN(4, 6, nonlinearity='relu', bidirectional=True),
     lambda: (tp.randn(5, 2, 4),)),
    ('LSTMCell', lambda: nn.LSTMCell(4, 6), lambda: (tp.randn(3, 4),)),
    ('GRUCell', lambda: nn.GRUCell(4, 6), lambda: (tp.randn(3, 4),)),
    ('MultiheadAttention', lambda: nn.MultiheadAttention(8, 2),
     lambda: (tp.randn(5, 2, 8), tp.randn(6, 2, 8), tp.randn(6, 2, 8))),
    ('MultiheadAttention_masks', _MaskedAttention, lambda: (tp.randn(2, 5, 8),)),
    ('sdpa_causal', lambda: _Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
     lambda: (tp.randn(2, 2, 5, 4), tp.randn(2, 2, 5, 4), tp.randn(2, 2, 5, 4))),
    ('sdpa_masks', lambda: _Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3)
                              + F.scaled_dot_product_attention(q, k, v, attn_mask=m > 0)),
     lambda: (tp.randn(2, 2, 5, 4), tp.randn(2, 2, 6, 4), tp.randn(2, 2, 6, 4), tp.randn(5, 6))),
    ('TransformerEncoderLayer_gelu_norm_first',
     lambda: nn.TransformerEncoderLayer(8, 2, 16, activation='gelu', norm_first=True, batch_first=True),
     lambda: (tp.randn(2, 5, 8),)),
    ('TransformerDecoderLayer', lambda: nn.TransformerDecoderLayer(8, 2, 16),
     lambda: (tp.randn(5, 2, 8), tp.randn(6, 2, 8))),
    ('Transformer', lambda: nn.Transformer(8, 2, 1, 1, 16, batch_first=True),
     lambda: (tp.randn(2, 5, 8), tp.randn(2, 4, 8))),
]
for _a in ['ReLU', 'ReLU6', 'LeakyReLU', 'ELU', 'SELU', 'CELU', 'GELU', 'SiLU', 'Mish', 'Sigmoid',
           'Tanh', 'Softplus', 'Softsign', 'Hardtanh', 'Hardsigmoid', 'Hardswish', 'LogSigmoid',
           'Tanhshrink', 'Softshrink', 'Hardshrink', 'PReLU', 'GLU', 'Softmin', 'Softmax2d']:
    LAYERS.append((_a, getattr(nn, _a), lambda: (tp.randn(2, 4, 6, 6) * 3,)))
LAYERS += [
    ('GELU_tanh', lambda: nn.GELU('tanh'), lambda: (tp.randn(3, 5) * 3,)),
    ('Softmax', lambda: nn.Softmax(dim=1), lambda: (tp.randn(3, 5),)),
    ('LogSoftmax', lambda: nn.LogSoftmax(dim=-1), lambda: (tp.randn(3, 5),)),
    ('Threshold', lambda: nn.Threshold(0.1, 20.0), lambda: (tp.randn(3, 5),)),
    ('RReLU_eval', lambda: nn.RReLU(), lambda: (tp.randn(3, 5),)),
]


@pytest.mark.parametrize('name,make,inputs', LAYERS, ids=[x[0] for x in LAYERS])
def test_layer(name, make, inputs):
    _seeded()
    model = make().eval()
    args = inputs()
    _export_and_check(model, args)


# ---- tensor functions: shapes, indexing, reductions ------------------------------------------

def _indexing(x, i):
    a = x[:, 1:3, ::2] + x[:, -2:, 1::2]
    b = x[0, None, :, -1] * x[..., 0].unsqueeze(-1)
    c = x[i][:, :4] + x[:, i].transpose(0, 1)
    return a.sum(-1), b, c.mean((0, 1)), x[:, :, i.flip(0)], x[i[:1], i[1:2]], x.mT


def _split_cat(x):
    a, b = x.split([2, 4], dim=-1)
    c = tp.cat(x.chunk(3, 1), dim=0)
    parts = x.unbind(0)
    return tp.cat([b, a], -1), c, tp.stack(parts, -1), tp.hstack(x.tensor_split(3, dim=2))


def _reductions(x):
    return (x.sum(), x.mean((0, 2), keepdim=True), x.amax(1), x.std(-1), x.var(0, correction=0),
            x.norm(dim=-1), x.logsumexp(1), x.max(1).indices, x.min(), x.argmax(),
            x.cumsum(2), x.prod(1), (x > 0).any(1), (x > -3).all(), x.abs().log().sum(-1))


def _casts(x):
    i = (x * 10).int()
    return (i.float() / 3, x.half().float(), (x > 0).long(), x.double() * 2, i.to(tp.int64) // 3,
            x.type_as(i), i.bool())


def _where_masked(x, m):
    return tp.where(m, x, -x), x.masked_fill(~m, 0.5), tp.where(x > 0, x, 0.0), x.clamp(-0.5, 0.5)


def _matmul_einsum(a, b):
    return (a @ b, tp.einsum('bij,bjk->bik', a, b), tp.einsum('bii->bi', a @ a.transpose(1, 2)),
            tp.einsum('bij,bkj->bik', a, b.transpose(1, 2)), a.matmul(b[0]), tp.bmm(a, b).relu())


def _permute_reshape(x):
    y = x.permute(2, 0, 1).reshape(6, -1).t().contiguous().view(2, 3, -1)
    return y.flatten(), y.unsqueeze(1).expand(2, 4, 3, 6).repeat(1, 1, 2, 1), y.movedim(0, -1)


FUNCTIONS = [
    ('indexing', _indexing, lambda: (tp.randn(4, 5, 6), tp.tensor([2, 0, 3]))),
    ('split_cat_stack', _split_cat, lambda: (tp.randn(3, 6, 6),)),
    ('reductions', _reductions, lambda: (tp.randn(3, 4, 5),)),
    ('casts', _casts, lambda: (tp.randn(3, 4),)),
    ('where_masked_fill', _where_masked, lambda: (tp.randn(3, 4), tp.rand(3, 4) > 0.5)),
    ('matmul_einsum', _matmul_einsum, lambda: (tp.randn(2, 3, 3), tp.randn(2, 3, 3))),
    ('permute_reshape', _permute_reshape, lambda: (tp.randn(2, 3, 6),)),
    ('losses', lambda x, y, t: (F.cross_entropy(x, t), F.mse_loss(x, y), F.l1_loss(x, y),
                                F.binary_cross_entropy_with_logits(x, y.sigmoid()),
                                F.nll_loss(F.log_softmax(x, 1), t), F.smooth_l1_loss(x, y),
                                F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1), reduction='batchmean')),
     lambda: (tp.randn(4, 5), tp.randn(4, 5), tp.tensor([1, 0, 4, 2]))),
    ('one_hot_like', lambda x: (tp.zeros_like(x) + tp.ones_like(x) * 2 + tp.full_like(x, 3.0),
                                tp.arange(x.shape[1]) * x, tp.triu(x) - tp.tril(x, -1)),
     lambda: (tp.randn(4, 4),)),
    ('in_place', lambda x: (x.clone().add_(1).mul_(2).clamp_(max=2.5).relu_(),
                            x.clone().masked_fill_(x > 0, 0.0)), lambda: (tp.randn(3, 4),)),
    ('in_place_view', lambda x: _inplace_view(x), lambda: (tp.randn(3, 4),)),
    ('bool_mask_setitem', lambda x: _mask_setitem(x), lambda: (tp.randn(3, 4),)),
]


def _mask_setitem(x):
    y = x.clone()
    y[y > 0.5] = 0.5
    y[x[:, 0] < 0] = -1.0
    return y


def _inplace_view(x):
    y = x.clone()
    v = y[:, 1:3]       # a view read before and after the write
    before = v * 1
    y[0].mul_(10)
    v.add_(1)
    return y, before, v * 1, y.t()


@pytest.mark.parametrize('name,fn,inputs', FUNCTIONS, ids=[x[0] for x in FUNCTIONS])
def test_function(name, fn, inputs):
    _export_and_check(fn, inputs())


# ---- whole models ----------------------------------------------------------------------------

def _check_file(model, args, path, sizes=(), **kw):
    """Exports to a file, checks it, runs ORT at the traced inputs and at each of ``sizes``
    (other input tuples for the dynamic axes); returns the ONNXProgram."""
    prog = tp.onnx.export(model, args, str(path), **kw)
    onnx.checker.check_model(str(path), full_check=True)
    loaded = tp.onnx.ONNXProgram.load(str(path))
    for a in (args,) + tuple(sizes):
        tp.onnx.verify(model, a, loaded, rtol=1e-5, atol=1e-5)
    return prog


def test_mlp(tmp_path):
    _seeded()
    model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 3)).eval()
    _check_file(model, (tp.randn(4, 10),), tmp_path / 'mlp.onnx', sizes=[(tp.randn(9, 10),)],
                input_names=['x'], output_names=['logits'], dynamic_axes={'x': {0: 'batch'}})


def test_main_job_cnn(tmp_path):
    sys.path.insert(0, str(ROOT / 'examples'))
    try:
        from train_digits import build_model
    finally:
        sys.path.pop(0)
    _seeded()
    model = build_model(nn).eval()
    prog = _check_file(model, (tp.rand(5, 1, 8, 8),), tmp_path / 'cnn.onnx',
                       sizes=[(tp.rand(17, 1, 8, 8),)], dynamic_axes={'input': {0: 'batch'}})
    assert prog.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == 'batch'


def test_resnet18(tmp_path):
    from tensorplay.testing.resnet import resnet18
    _seeded()
    model = _bn(resnet18(tp)).eval()
    prog = _check_file(model, (tp.randn(2, 3, 64, 64),), tmp_path / 'resnet18.onnx',
                       sizes=[(tp.randn(1, 3, 64, 64),)], dynamic_axes={'x': {0: 'N'}})
    names = {t.name for t in prog.model_proto.graph.initializer}
    assert {'conv1.weight', 'layer4.1.bn2.running_var', 'fc.bias'} <= names
    assert (tmp_path / 'resnet18.onnx.data').exists()  # external data, as PyTorch's default


class WordLM(nn.Module):
    """pytorch/examples' word_language_model RNNModel (LSTM): Embedding -> LSTM -> Linear."""

    def __init__(self, ntoken=60, ninp=16, nhid=24, nlayers=2, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


def test_lstm_language_model(tmp_path):
    _seeded()
    model = WordLM().eval()

    def inputs(seq, batch):
        return (tp.randint(0, 60, (seq, batch)), (tp.randn(2, batch, 24), tp.randn(2, batch, 24)))
    _check_file(model, inputs(7, 3), tmp_path / 'lm.onnx', sizes=[inputs(12, 5), inputs(3, 2)],
                input_names=['input', 'h0', 'c0'], output_names=['log_probs', 'hn', 'cn'],
                dynamic_axes={'input': {0: 'seq', 1: 'batch'}, 'h0': {1: 'batch'},
                              'c0': {1: 'batch'}})


def test_transformer_encoder(tmp_path):
    _seeded()
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    _check_file(model, (tp.randn(2, 7, 32),), tmp_path / 'encoder.onnx',
                sizes=[(tp.randn(3, 11, 32),), (tp.randn(1, 4, 32),)],
                dynamic_shapes=({0: 'batch', 1: 'seq'},))


class _Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(16, 2, 1, 1, 32, batch_first=True)

    def forward(self, src, tgt, pad):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.t(src, tgt, tgt_mask=mask, src_key_padding_mask=pad, tgt_is_causal=True)


def test_transformer_masks_dynamic_lengths():
    """nn.Transformer with a causal mask built from the target length and a padding mask,
    batch and both lengths dynamic."""
    _seeded()
    model = _Seq2Seq().eval()

    def inputs(b, s, t):
        pad = tp.zeros(b, s, dtype=tp.bool)
        pad[:, -1] = True
        return tp.randn(b, s, 16), tp.randn(b, t, 16), pad
    prog = tp.onnx.export(model, inputs(2, 5, 4), dynamic_axes={
        'src': {0: 'b', 1: 's'}, 'tgt': {0: 'b', 1: 't'}, 'pad': {0: 'b', 1: 's'}})
    onnx.checker.check_model(prog.model_proto, full_check=True)
    for sizes in ((2, 5, 4), (3, 7, 9), (1, 2, 3)):
        tp.onnx.verify(model, inputs(*sizes), prog)


def test_gpt_dynamic_batch_and_sequence(tmp_path):
    from tensorplay.testing.gpt import gpt2
    _seeded()
    model = gpt2(tp, n_layer=2, n_head=4, n_embd=64, vocab_size=128, block_size=64).eval()
    prog = _check_file(model, (tp.randint(0, 128, (2, 16)),), tmp_path / 'gpt.onnx',
                       sizes=[(tp.randint(0, 128, (3, 29)),), (tp.randint(0, 128, (1, 64)),),
                              (tp.randint(0, 128, (5, 2)),)],
                       input_names=['idx'], dynamic_axes={'idx': {0: 'batch', 1: 'seq'},
                                                          'output': {0: 'batch', 1: 'seq'}},
                       output_names=['output'])
    dims = prog.model_proto.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ['batch', 'seq', 128]
    # no size of a dynamic axis is baked into the graph: ORT at other sizes agrees (above),
    # and the tied embedding / head weight is stored once
    names = [t.name for t in prog.model_proto.graph.initializer]
    assert names.count('transformer.wte.weight') + names.count('lm_head.weight') == 1


class _MinGPTAttention(nn.Module):
    """minGPT's CausalSelfAttention: the causal mask is a registered buffer, sliced to T."""

    def __init__(self, n_embd=32, n_head=4, block_size=16):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout, self.resid_dropout = nn.Dropout(0.1), nn.Dropout(0.1)
        self.register_buffer('bias', tp.tril(tp.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        y = self.attn_dropout(F.softmax(att, dim=-1)) @ v
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class _MinGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(50, 32)
        self.pos = nn.Parameter(tp.randn(1, 16, 32) * 0.02)
        self.blocks = nn.ModuleList([_MinGPTAttention() for _ in range(2)])
        self.ln, self.head = nn.LayerNorm(32), nn.Linear(32, 50, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        assert t <= 16, 'Cannot forward, model block size is exhausted.'
        x = self.tok(idx) + self.pos[:, :t, :]
        for blk in self.blocks:
            x = x + blk(x)
        return self.head(self.ln(x))


def test_mingpt_sliced_mask_buffer_dynamic(tmp_path):
    """A buffer sliced to the dynamic length (bias[:, :, :T, :T], pos[:, :t]) and an assert on
    the length (the exporter picks other sizes within it)."""
    _seeded()
    model = _MinGPT().eval()
    _check_file(model, (tp.randint(0, 50, (2, 8)),), tmp_path / 'mingpt.onnx',
                sizes=[(tp.randint(0, 50, s),) for s in ((3, 16), (1, 3), (4, 11))],
                dynamic_axes={'idx': {0: 'b', 1: 't'}})


# ---- dynamic axes ----------------------------------------------------------------------------

def test_dynamic_shapes_forms():
    model = nn.Linear(4, 3).eval()
    x = tp.randn(5, 4)
    for kw in (dict(dynamic_shapes={'input': {0: 'b'}}), dict(dynamic_shapes=(['b', None],)),
               dict(dynamic_axes={'input': [0]}), dict(dynamic_shapes=({0: _Dim('b')},))):
        prog = tp.onnx.export(model, (x,), **kw)
        d = prog.model_proto.graph.input[0].type.tensor_type.shape.dim[0]
        assert d.dim_param and not d.dim_value, kw
        tp.onnx.verify(model, (tp.randn(8, 4),), prog)


class _Dim:
    def __init__(self, name):
        self.__name__ = name


def test_dynamic_size_expressions():
    """Shapes computed from sizes: products, differences, sums of two dynamic sizes."""
    def f(x, y):
        b, t, c = x.shape
        z = x.reshape(b * t, c)[: b * t - 1]          # a product and a difference
        w = tp.cat([x, y], 1).view(b, -1)             # t + s
        ar = tp.arange(t + 2) * 1.0                   # an arange of a size expression
        pad = F.pad(x, (0, 0, 1, 2))
        return z.sum(0), w, ar, pad[:, -t:], x.new_zeros(t, b).shape[0] * x[:, :1]
    x, y = tp.randn(2, 5, 3), tp.randn(2, 4, 3)
    prog = tp.onnx.export(f, (x, y), dynamic_axes={'x': {0: 'B', 1: 'T'}, 'y': {0: 'B', 1: 'S'}})
    onnx.checker.check_model(prog.model_proto, full_check=True)
    for b, t, s in ((3, 9, 2), (4, 2, 7), (1, 6, 6)):
        tp.onnx.verify(f, (tp.randn(b, t, 3), tp.randn(b, s, 3)), prog)


def _dynamic_ops(x, y):
    B, T, C = x.shape
    a = x[:, 1:].sum(1) + x[:, -3:].sum(1) + x[:, ::2].sum(1) + x[..., None].squeeze(-1).sum(1)
    b = x.narrow(1, 1, T - 2).mean(1) + x[:, -1] + x.select(1, T - 1)
    c = x.var(1) + x.std((0, 1)) + x.roll(2, 1).sum(1) + \
        x.flatten(0, 1).unflatten(0, (B, T)).sum(1)
    d = x.unsqueeze(1).expand(B, 2, T, C).reshape(B, -1).sum(1, keepdim=True) + \
        y.repeat(1, 2, 1).sum((1, 2)).unsqueeze(1)
    e = tp.arange(T, dtype=tp.float32).unsqueeze(-1) * tp.ones(T, C) + \
        tp.zeros(T, T).tril().sum(0, keepdim=True).T
    f = x.sort(1).values.sum(1) + x.cumsum(1)[:, -1] + x.softmax(1).amax(1) + \
        x.topk(2, 1).values.sum(1)
    g = tp.cat([x, y], 1).sum(1) + tp.stack([x[:, 0], y[:, 0]], 1).sum(1)
    return a, b, c, d, e, f, g, x.new_full((B, T), 2.0) * x.mean(-1)


def _dynamic_conv(x):
    y, i = F.max_pool2d(F.conv2d(x, tp.ones(4, 3, 3, 3) * 0.1, padding=1), 2, return_indices=True)
    return (y, i, x.flip(2), F.group_norm(x, 3), F.adaptive_avg_pool2d(x, 1),
            F.avg_pool2d(x, 3, 2, 1))


def test_dynamic_ops():
    """Ops whose sizes follow the dynamic axes (slices with steps and negative starts, narrow,
    select, var's count, roll, flatten/unflatten, expand/repeat, arange/ones/zeros, sort, cat
    of two dynamic sizes; pools whose output sizes are floor divisions ONNX computes)."""
    prog = tp.onnx.export(_dynamic_ops, (tp.randn(2, 6, 3), tp.randn(2, 5, 3)),
                          dynamic_axes={'x': {0: 'B', 1: 'T'}, 'y': {0: 'B', 1: 'S'}})
    onnx.checker.check_model(prog.model_proto, full_check=True)
    for b, t, s in ((2, 6, 5), (3, 9, 2), (1, 4, 8), (4, 13, 3)):
        tp.onnx.verify(_dynamic_ops, (tp.randn(b, t, 3), tp.randn(b, s, 3)), prog, atol=1e-5)
    prog = tp.onnx.export(_dynamic_conv, (tp.randn(2, 3, 8, 10),),
                          dynamic_axes={'x': {0: 'B', 2: 'H', 3: 'W'}})
    for shape in ((2, 3, 8, 10), (3, 3, 12, 7), (1, 3, 5, 4)):
        tp.onnx.verify(_dynamic_conv, (tp.randn(*shape),), prog)


def test_dynamic_axis_into_a_host_computed_constant():
    """interpolate computes its gather indices on the host from the sizes: a constant that
    depends on a dynamic axis is an error naming the line, not a baked-in index table."""
    def up(x):
        return F.interpolate(x, scale_factor=2)  # indices built from the size
    with pytest.raises(tp.onnx.DynamicShapeError, match='computed from a dynamic size') as e:
        tp.onnx.export(up, (tp.randn(1, 2, 4, 4),), dynamic_axes={'x': {2: 'H'}})
    assert 'F.interpolate(x, scale_factor=2)' in str(e.value)
    prog = tp.onnx.export(up, (tp.randn(2, 2, 4, 4),), dynamic_axes={'x': {0: 'N'}})
    tp.onnx.verify(up, (tp.randn(3, 2, 4, 4),), prog)


def test_lstm_bidirectional_batch_first_dynamic():
    _seeded()
    model = nn.LSTM(4, 5, 2, batch_first=True, bidirectional=True).eval()
    prog = tp.onnx.export(model, (tp.randn(2, 6, 4),), dynamic_axes={'input': {0: 'b', 1: 't'}})
    for b, t in ((2, 6), (3, 9), (1, 2)):
        tp.onnx.verify(model, (tp.randn(b, t, 4),), prog)


# ---- errors ----------------------------------------------------------------------------------

def test_unsupported_op_names_op_and_source_line():
    def f(x):
        y = x * 2
        return tp.erfinv(y)  # the line the error must name
    with pytest.raises(tp.onnx.UnsupportedOperatorError) as e:
        tp.onnx.export(f, (tp.rand(3),))
    msg = str(e.value)
    assert 'aten.erfinv.default' in msg and 'test_onnx.py' in msg
    assert 'return tp.erfinv(y)  # the line the error must name' in msg
    assert e.value.op is aten.erfinv.default


def test_training_mode_dropout_hints_eval():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).train()
    with pytest.raises(tp.onnx.UnsupportedOperatorError, match='model.eval()'):
        tp.onnx.export(model, (tp.randn(2, 3),))


def test_data_dependent_control_flow():
    def f(x):
        if x.sum() > 0:  # a branch on a value
            return x * 2
        return x
    with pytest.raises(tp.onnx.OnnxExportError, match='data-dependent') as e:
        tp.onnx.export(f, (tp.randn(3),))
    assert 'if x.sum() > 0:  # a branch on a value' in str(e.value)
    with pytest.raises(tp.onnx.OnnxExportError, match='output shape depends on the data'):
        tp.onnx.export(lambda x: x.nonzero(), (tp.randn(3),))


def test_dynamic_axis_the_model_branches_on():
    def f(x):
        if x.shape[1] > 8:  # branches on the dynamic size
            return x.relu()
        return x * 2
    with pytest.raises(tp.onnx.DynamicShapeError, match='changes') as e:
        tp.onnx.export(f, (tp.randn(2, 8),), dynamic_axes={'x': {1: 'n'}})
    assert 'n=9' in str(e.value)


def test_dynamic_axis_the_model_asserts():
    def f(x):
        assert x.shape[0] == 4, 'batch of 4 only'
        return x + 1
    with pytest.raises(tp.onnx.DynamicShapeError, match="axis 'b'.*batch of 4 only"):
        tp.onnx.export(f, (tp.randn(4, 3),), dynamic_axes={'x': {0: 'b'}})


def test_dynamic_axis_baked_into_a_reshape():
    def f(x):
        return x[:, : x.shape[1] // 3]  # a floor division of the size: no polynomial
    with pytest.raises(tp.onnx.DynamicShapeError) as e:
        tp.onnx.export(f, (tp.randn(2, 12),), dynamic_axes={'x': {1: 'n'}})
    assert 'x[:, : x.shape[1] // 3]' in str(e.value)


def test_dynamic_axis_the_model_loops_over():
    """A Python loop over the sequence bakes its length into the graph."""
    cell = nn.RNNCell(3, 4).eval()

    def run(x):
        h = tp.zeros(x.shape[1], 4)
        for t in range(x.shape[0]):  # one step per element: a loop over the size
            h = cell(x[t], h)
        return h
    with pytest.raises(tp.onnx.DynamicShapeError, match='changes') as e:
        tp.onnx.export(run, (tp.randn(5, 2, 3),), dynamic_axes={'x': {0: 'seq'}})
    assert 'seq=6' in str(e.value)
    prog = tp.onnx.export(run, (tp.randn(5, 2, 3),), dynamic_axes={'x': {1: 'batch'}})
    tp.onnx.verify(run, (tp.randn(5, 7, 3),), prog)


@pytest.mark.parametrize('make', [lambda: nn.GRU(4, 6, 2), lambda: nn.RNN(4, 6, bidirectional=True),
                                  lambda: nn.GRU(4, 5, batch_first=True, bidirectional=True),
                                  lambda: nn.RNN(4, 5, 2, nonlinearity='relu', bias=False)],
                         ids=['gru2', 'rnn_bidirectional', 'gru_batch_first_bidirectional',
                              'rnn_relu_nobias'])
def test_gru_rnn_dynamic_sequence(make):
    """GRU / RNN layers export as Scans (Note [Recurrent layers in the export]): any length."""
    _seeded()
    model = make().eval()
    axes = {0: 'b', 1: 't'} if model.batch_first else {0: 't', 1: 'b'}
    layers = model.num_layers * (2 if model.bidirectional else 1)

    def inputs(t, b):
        x = tp.randn(b, t, 4) if model.batch_first else tp.randn(t, b, 4)
        return x, tp.randn(layers, b, model.hidden_size)
    prog = tp.onnx.export(model, inputs(5, 2), dynamic_axes={'input': axes, 'hx': {1: 'b'}})
    onnx.checker.check_model(prog.model_proto, full_check=True)
    for t, b in ((5, 2), (9, 3), (2, 1)):
        tp.onnx.verify(model, inputs(t, b), prog)


def test_dynamic_axis_example_size_one():
    with pytest.raises(tp.onnx.DynamicShapeError, match='at least 2'):
        tp.onnx.export(nn.Linear(3, 3), (tp.randn(1, 3),), dynamic_axes={'input': {0: 'b'}})


def test_bad_arguments():
    m = nn.Linear(3, 3)
    with pytest.raises(ValueError, match='no input'):
        tp.onnx.export(m, (tp.randn(2, 3),), dynamic_axes={'nope': {0: 'b'}})
    with pytest.raises(ValueError, match='opset_version'):
        tp.onnx.export(m, (tp.randn(2, 3),), opset_version=11)
    with pytest.raises(ValueError, match='not both'):
        tp.onnx.export(m, (tp.randn(2, 3),), dynamic_axes={}, dynamic_shapes={})


# ---- the API ---------------------------------------------------------------------------------

def test_file_like_and_external_data(tmp_path):
    _seeded()
    model = nn.Sequential(nn.Linear(40, 40), nn.ReLU()).eval()
    x = tp.randn(2, 40)
    buf = io.BytesIO()
    prog = tp.onnx.export(model, (x,), buf)
    loaded = onnx.load_model_from_string(buf.getvalue())
    assert len(loaded.graph.initializer) == 2
    tp.onnx.verify(model, (x,), loaded)
    tp.onnx.export(model, (x,), tmp_path / 'inline.onnx', external_data=False)
    assert not (tmp_path / 'inline.onnx.data').exists()
    tp.onnx.export(model, (x,), tmp_path / 'ext.onnx')
    assert (tmp_path / 'ext.onnx.data').stat().st_size >= 40 * 40 * 4
    tp.onnx.verify(model, (x,), tmp_path / 'ext.onnx')
    out = prog(x)
    assert isinstance(out, list) and tp.allclose(out[0], model(x), atol=1e-6)
    assert tp.onnx.export(model, (x,), verify=True) is not None


def test_kwargs_and_nested_inputs():
    class M(nn.Module):
        def forward(self, x, pair, scale=1.0, bias=None):
            a, b = pair
            return x * scale + a - b + (0 if bias is None else bias), {'sum': x.sum()}
    m = M()
    args = (tp.randn(2, 3), (tp.randn(2, 3), tp.randn(3)))
    prog = tp.onnx.export(m, args, kwargs={'scale': 2.0, 'bias': tp.randn(3)})
    assert [i.name for i in prog.model_proto.graph.input] == ['x', 'pair_0', 'pair_1', 'bias']
    assert len(prog.model_proto.graph.output) == 2
    bias = tp.randn(3)
    prog = tp.onnx.export(m, args, kwargs={'scale': 2.0, 'bias': bias})
    tp.onnx.verify(m, args, prog, kwargs={'scale': 2.0, 'bias': bias})


def test_custom_translation_table_and_opset():
    def f(x):
        return F.gelu(x) + tp.erfinv(x)

    def erfinv(g, x):  # a deliberately rough approximation, to see the entry used
        return g.op('Mul', x.name, g.scalar(0.0, x.dtype))
    prog = tp.onnx.export(f, (tp.rand(3) * 0.5,), custom_translation_table={aten.erfinv.default: erfinv},
                          opset_version=20)
    ops = [n.op_type for n in prog.model_proto.graph.node]
    assert 'Gelu' in ops and prog.model_proto.opset_import[0].version == 20
    x = tp.rand(3) * 0.5
    assert tp.allclose(prog(x)[0], F.gelu(x), atol=1e-6)


def test_import_tensorplay_does_not_import_onnx():
    code = 'import sys, tensorplay as tp; tp.onnx.DEFAULT_OPSET; print("onnx" in sys.modules)'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         env={**__import__('os').environ,
                              # the tensorplay this test imported (in-tree or installed)
                              'PYTHONPATH': str(pathlib.Path(tp.__file__).parent.parent)})
    assert out.stdout.strip() == 'False', out.stderr


def test_make_fx_records_user_source_lines():
    def f(x):
        return x.relu() + 1  # recorded line
    with tp.no_grad():
        gm = make_fx(f, record_stack_traces=True)(tp.randn(3))
    relu = next(n for n in gm.graph.nodes if n.target is aten.relu.default)
    assert 'x.relu() + 1  # recorded line' in relu.stack_trace
    assert 'tensorplay/nn' not in relu.stack_trace and 'proxy_tensor' not in relu.stack_trace


@pytest.mark.parametrize('opset', [18, 20, 23])
def test_opsets(opset):
    """Newer opsets use newer operators where they exist (Gelu from 20, GridSample's modes)."""
    _seeded()
    model = nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.GELU(), nn.GroupNorm(2, 8),
                          nn.Flatten(), nn.Linear(8 * 6, 5)).eval()
    x = tp.randn(3, 4, 6)
    prog = tp.onnx.export(model, (x,), opset_version=opset, dynamic_axes={'input': {0: 'b'}})
    assert prog.model_proto.opset_import[0].version == opset
    onnx.checker.check_model(prog.model_proto, full_check=True)
    assert ('Gelu' in [n.op_type for n in prog.model_proto.graph.node]) == (opset >= 20)
    tp.onnx.verify(model, (tp.randn(5, 4, 6),), prog)
