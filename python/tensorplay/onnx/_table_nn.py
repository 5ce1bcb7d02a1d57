"""Translation-table entries (Note in tensorplay/onnx/_table.py): neural-network layers
(convolution, pooling, normalisation, attention, recurrent cells, losses)."""
import math

import numpy as np

import tensorplay as tp
from tensorplay.onnx._exporter import onnx_dtype
from tensorplay.onnx._symbolic import Sym
from tensorplay.onnx._table import _h, _nd, _reduce, aten, reg
from tensorplay.onnx._table_reductions import _logsumexp
from tensorplay.onnx._table_shapes import _constant_of_shape, _slice


# ---- neural-network layers ---------------------------------------------------------------

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
