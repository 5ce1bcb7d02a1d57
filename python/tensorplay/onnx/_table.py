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

This module holds the table and the helpers every entry uses; the entries themselves live by
concern in _table_pointwise.py, _table_reductions.py (and matrix products), _table_shapes.py
(views, factories, indexing) and _table_nn.py (layers), imported at the end.
"""
import numpy as np

import tensorplay as tp
from tensorplay.onnx._exporter import is_float

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


def _nd(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


# the entries, by concern (each module registers into TABLE with reg)
from tensorplay.onnx import (_table_nn, _table_pointwise,  # noqa: E402,F401
                             _table_reductions, _table_shapes)
