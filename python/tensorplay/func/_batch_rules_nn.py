"""vmap batching rules of the nn op families: convolution, pooling, padding, im2col and
grid sampling, normalization, embedding_bag, and their backward ops (Note [vmap as a
wrapper subclass]; the rule signature and helpers are _batch_rules.py's).
"""
from tensorplay import _C
from tensorplay._ops import ops

from ._batch_rules import _expand_batch, _get, _handle, _pad, _set, _wrap_all
from ._vmap import _RULES, BatchedTensor, _batch_size, _unwrap, _wrap, loop_fallback

Tensor = _C.Tensor
aten = ops.aten


def _grads(outs, level, like):
    """A backward's results, batched; a gradient not asked for stays None (the C++ caller
    reads it as an undefined tensor)."""
    return tuple(None if o is None else _wrap(o, level) for o in outs)


def _size(level, *tensors):
    return _batch_size([t for t in tensors if isinstance(t, Tensor)], {}, level)


# ------------------------------------------------------------- batch folded into N
def fold_rule(tensors, rank, sizes=()):
    """Ops on (N, C, *spatial) tensors that also take (C, *spatial) ones: the vmap batch
    folds into N (B*N), or becomes N when the samples have none. ``rank``: the rank with
    N, an int or ``rank(func, args, kwargs)``; ``sizes`` name size arguments describing a
    tensor of that shape (a backward's input size), which get the batch too."""
    def rule(func, level, args, kwargs):
        ts = [_get(func, args, kwargs, n) for n in tensors]
        full = rank if isinstance(rank, int) else rank(func, args, kwargs)
        if ts[0].dim() not in (full, full - 1):
            return loop_fallback(func, level, args, kwargs)  # raises the op's own error
        size, has_n = _size(level, *ts), ts[0].dim() == full
        args, kwargs = list(args), dict(kwargs)
        for n, t in zip(tensors, ts):
            if isinstance(t, Tensor):
                v = _expand_batch(t, level, size)
                _set(func, args, kwargs, n, v.flatten(0, 1) if has_n else v)
        for n in sizes:
            s = list(_get(func, args, kwargs, n))
            _set(func, args, kwargs, n, [size * s[0]] + s[1:] if has_n else [size] + s)
        out = func(*args, **kwargs)
        if has_n:
            n = ts[0].shape[0]
            out = out.unflatten(0, (size, n)) if isinstance(out, Tensor) else \
                tuple(o.unflatten(0, (size, n)) for o in out)
        return _wrap_all(out, level)
    return rule


def _spatial(func, args, kwargs):
    return _get(func, args, kwargs, 'spatial_dims') + 2


def _padded_rank(func, args, kwargs):
    return len(_get(func, args, kwargs, 'padding')) // 2 + 2


def _constant_pad_rule(func, level, args, kwargs):
    """constant_pad_nd pads trailing dims of any rank: the batch leads (more pairs than
    dims: the loop raises the op's error)."""
    x, pad = args[0], _get(func, args, kwargs, 'pad')
    if len(pad) // 2 > x.dim():
        return loop_fallback(func, level, args, kwargs)
    return _wrap(func(_unwrap(x, level), pad, *args[2:], **kwargs), level)


# --------------------------------------------------------------------- convolution
def _convolution_rule(func, level, args, kwargs):
    """convolution / _convolution_unfold (input N x C x *sp): an unbatched weight folds the
    batch into N; a batched weight makes each sample a group of its own (the input's and
    weight's channels, bias and groups times B). A bias batched alone is added after."""
    x, w, b = args[0], args[1], args[2]
    wv, bv = _unwrap(w, level), _unwrap(b, level) if b is not None else None
    size, rest = _size(level, x, w, b), list(args[3:])
    transposed, groups = rest[3], rest[5]
    if wv is None:
        xv = _expand_batch(x, level, size)
        out = func(xv.flatten(0, 1), w, None if bv is not None else b, *rest)
        out = out.unflatten(0, (size, x.shape[0]))
        if bv is not None:
            out = out + _pad(bv, 1, out.dim() - 2).unsqueeze(1)
        return _wrap(out, level)
    xv = _expand_batch(x, level, size).movedim(0, 1)  # N x B x C x *sp
    x2 = xv.reshape(xv.shape[0], -1, *xv.shape[3:])
    out_c = w.shape[1] * groups if transposed else w.shape[0]
    b2 = None if b is None else _expand_batch(b, level, size).reshape(-1)
    rest[5] = groups * size
    out = func(x2, wv.flatten(0, 1), b2, *rest)
    return _wrap(out.unflatten(1, (size, out_c)).movedim(1, 0), level)


def _convolution_weight_backward_rule(func, level, args, kwargs):
    """The weight gradient summed over each sample's N: one group per sample (both
    operands' channels and the weight's output channels times B)."""
    go, x, weight_size, stride, padding, dilation, groups = args
    size = _size(level, go, x)
    gv = _expand_batch(go, level, size).movedim(0, 1)
    xv = _expand_batch(x, level, size).movedim(0, 1)
    g2, x2 = gv.reshape(gv.shape[0], -1, *gv.shape[3:]), xv.reshape(xv.shape[0], -1, *xv.shape[3:])
    out = func(g2, x2, [size * weight_size[0]] + list(weight_size[1:]), stride, padding, dilation,
               groups * size)
    return _wrap(out.unflatten(0, (size, weight_size[0])), level)


# -------------------------------------------------------------------- normalization
def _affine(out, w, b, level, place):
    """``out * w + b`` with per-sample weights: ``place(t, v)`` shapes a weight ``t`` (its
    batch ``v``, or None when unbatched) to broadcast against ``out``."""
    for t, mul in ((w, True), (b, False)):
        if t is not None:
            v = place(t, _unwrap(t, level))
            out = out * v if mul else out + v
    return out


def _any_batched(level, *ts):
    return any(t is not None and _unwrap(t, level) is not None for t in ts)


def _layer_norm_rule(func, level, args, kwargs):
    """native_layer_norm / _fused_rms_norm normalise trailing dims: the batch leads; batched
    weights (or biases) are applied after a normalisation without them."""
    x = args[0]
    layer = func is aten.native_layer_norm.default
    w, b = args[2], args[3] if layer else None
    size = _size(level, x, w, b)
    xv = _expand_batch(x, level, size)
    if not _any_batched(level, w, b):
        return _wrap_all(func(xv, *args[1:]), level)
    plain = func(xv, args[1], None, None, args[4]) if layer else func(xv, args[1], None, args[3])
    out = _affine(plain[0], w, b, level,
                  lambda t, v: t if v is None else _pad(v, t.dim(), x.dim()))
    return _wrap_all((out,) + tuple(plain[1:]), level)


def _norm_dims(x, shape):
    """The batch's dims a per-sample weight gradient sums over (every dim before the
    normalised ones but the batch)."""
    return list(range(1, 1 + x.dim() - len(shape)))


def _layer_norm_backward_rule(func, level, args, kwargs):
    """native_layer_norm_backward / _fused_rms_norm_backward: the input gradient from the
    kernel (batched weights multiplied into the output gradient); weight and bias gradients
    summed per sample (the kernel would sum over the batch too)."""
    layer = func is aten.native_layer_norm_backward.default
    if layer:
        go, x, shape, mean, rstd, w, gi_, gw_, gb_ = args
    else:
        go, x, shape, rstd, w, gi_, gw_ = args
        mean, gb_ = None, False
    size = _size(level, go, x, mean, rstd, w)
    gv, xv = _expand_batch(go, level, size), _expand_batch(x, level, size)
    rv = _expand_batch(rstd, level, size)
    mv = _expand_batch(mean, level, size) if layer else None
    wv = _unwrap(w, level) if w is not None else None
    g_in, w_in = (gv * _pad(wv, w.dim(), x.dim()), None) if wv is not None else (gv, w)
    gi = None
    if gi_:
        gi = func(g_in, xv, shape, mv, rv, w_in, True, False, False)[0] if layer else \
            func(g_in, xv, shape, rv, w_in, True, False)[0]
    dims = _norm_dims(x, shape)
    gw = gb = None
    if gw_:
        xhat = (xv - mv) * rv if layer else xv * rv
        gw = gv * xhat
        gw = (gw.sum(dims) if dims else gw).to(w.dtype)
    if gb_:
        gb = (gv.sum(dims) if dims else gv).to(w.dtype if w is not None else gv.dtype)
    return _grads((gi, gw, gb) if layer else (gi, gw), level, gv)


def _group_norm_rule(func, level, args, kwargs):
    """native_group_norm (N x C x *): the batch folds into N; batched weights and biases
    are applied after."""
    x, w, b, n, c, hxw, group, eps = args
    size = _size(level, x, w, b)
    xv = _expand_batch(x, level, size).flatten(0, 1)
    if _any_batched(level, w, b):
        out, mean, rstd = func(xv, None, None, size * n, c, hxw, group, eps)
        ones = [1] * (x.dim() - 2)  # channels at dim 1, spatial dims after
        out = _affine(out.unflatten(0, (size, n)), w, b, level,
                      lambda t, v: t.reshape(-1, *ones) if v is None else v.reshape(size, 1, -1, *ones))
    else:
        out, mean, rstd = func(xv, w, b, size * n, c, hxw, group, eps)
        out = out.unflatten(0, (size, n))
    return _wrap_all((out, mean.unflatten(0, (size, n)), rstd.unflatten(0, (size, n))), level)


def _channels(t, level, size):
    """An N x C x * sample batch as N x (B*C) x *: per-channel statistics of each sample."""
    v = _expand_batch(t, level, size).movedim(0, 1)
    return v.reshape(v.shape[0], -1, *v.shape[3:])


def _vector(t, level, size):
    return None if t is None else _expand_batch(t, level, size).reshape(-1)


_BATCH_NORM_RUNNING = (
    'Batch norm got a batched tensor as input while the running_mean or running_var, which will '
    'be updated in place, were not batched.\nIf you are using a module and do not need eval mode, '
    'please set `track_running_stats` to be False.If you are using a prebuilt module and do not '
    'need eval mode, please see the functorch website for resources on how to patch your module '
    'to work with vmap')


def _batch_norm_rule(func, level, args, kwargs):
    """native_batch_norm: each sample's channels become channels of their own (N x (B*C)),
    so training statistics stay per sample; batched running statistics are updated in
    place through their flattened views."""
    x, w, b, rm, rv, training, momentum, eps = args
    size = _size(level, x, w, b, rm, rv)
    if training and any(t is not None and _unwrap(t, level) is None for t in (rm, rv)):
        raise RuntimeError(_BATCH_NORM_RUNNING)
    running = [_vector(t, level, size) for t in (rm, rv)]
    out, mean, invstd = func(_channels(x, level, size), _vector(w, level, size),
                             _vector(b, level, size), *running, training, momentum, eps)
    for t, flat in zip((rm, rv), running):  # a copy where the batch was not contiguous
        if training and t is not None and flat.data_ptr() != _unwrap(t, level).data_ptr():
            _unwrap(t, level).copy_(flat.view(_unwrap(t, level).shape))
    out = out.unflatten(1, (size, x.shape[1])).movedim(1, 0)
    return _wrap_all((out, mean.reshape(size, -1), invstd.reshape(size, -1)), level)


def _batch_norm_backward_rule(func, level, args, kwargs):
    """native_batch_norm_backward with each sample's channels as channels of their own."""
    go, x, w, mean, invstd, training, gi_, gw_, gb_ = args
    size = _size(level, go, x, w, mean, invstd)
    go_ = _channels(go, level, size)
    gi, gw, gb = func(go_, _channels(x, level, size), _vector(w, level, size),
                      _vector(mean, level, size), _vector(invstd, level, size), training, gi_,
                      gw_, gb_)
    if gi is not None:
        gi = gi.unflatten(1, (size, x.shape[1])).movedim(1, 0)
    return _grads((gi, None if gw is None else gw.reshape(size, -1),
                   None if gb is None else gb.reshape(size, -1)), level, go_)


# ------------------------------------------------------------------- embedding_bag
def _with_layout(w, contiguous):
    """``w`` (2-D), contiguous or not as asked: the kernel leaves offset2bag empty on its
    fast path, which needs a contiguous weight, so the batched call's weight must be as
    contiguous as each sample's."""
    if contiguous:
        return w.contiguous()
    if not w.is_contiguous():
        return w
    out = w.new_empty((w.shape[0], w.shape[1], 2))[..., 0]  # every other element
    out.copy_(w)
    return out


def _bags_valid(indices, offsets, num):
    """Whether every sample's indices (B x L) and offsets (B x m) pass the kernel's checks
    (those that read values); a sample that fails takes the loop, which raises its error."""
    if isinstance(indices, BatchedTensor) or isinstance(offsets, BatchedTensor):
        return False  # an outer vmap's values: not readable here
    m, n = offsets.shape[1], indices.shape[1]
    bad = ((indices < 0) | (indices >= num)).any()
    if m:
        bad = bad | (offsets[:, 0] != 0).any() | (offsets[:, -1] > n).any() | \
            (offsets[:, 1:] < offsets[:, :-1]).any()
    return not bool(bad)


def _embedding_bag_rule(func, level, args, kwargs):
    """_embedding_bag / _embedding_bag_forward_only. Shared indices, offsets and
    per-sample weights: the samples' weights side by side as one wider weight (num x B*D),
    every column bagged alone. Otherwise each sample's bags are bags of one call over the
    samples' weights stacked (B*num rows): sample b's indices move by b * num, its offsets by
    b * L, and padding_idx points at one extra row; the index results are moved back."""
    weight, indices, offsets, mode, psw, last, pad = (_get(func, args, kwargs, n) for n in (
        'weight', 'indices', 'offsets', 'mode', 'per_sample_weights', 'include_last_offset',
        'padding_idx'))
    index_dtypes = (_C.int32, _C.int64)
    if weight.dim() != 2 or indices.dim() != 1 or offsets.dim() != 1 or mode not in (0, 1, 2) or \
            not weight.is_floating_point() or indices.dtype not in index_dtypes or \
            offsets.dtype not in index_dtypes or (last and offsets.numel() == 0) or \
            psw is not None and (mode != 0 or psw.dtype != weight.dtype or
                                 tuple(psw.shape) != tuple(indices.shape)):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    forward_only = func is aten._embedding_bag_forward_only.default
    size = _size(level, weight, indices, offsets, psw)
    num, dim = weight.shape
    n, m = indices.shape[0], offsets.shape[0]
    bags = m - 1 if last else m
    args, kwargs = list(args), dict(kwargs)
    if all(t is None or _unwrap(t, level) is None for t in (indices, offsets, psw)):
        wide = _unwrap(weight, level).permute(1, 0, 2).reshape(num, size * dim)
        _set(func, args, kwargs, 'weight', _with_layout(wide, weight.is_contiguous()))
        out, offset2bag, bag_size, max_indices = func(*args, **kwargs)

        def columns(t):  # (bags, B*D) -> (B, bags, D)
            return t.reshape(bags, size, dim).movedim(1, 0)

        def every(t):  # the same for every sample: each its own copy
            return t.expand(size, *t.shape).clone()
        return _wrap_all((columns(out), every(offset2bag), every(bag_size),
                          columns(max_indices) if mode == 2 else every(max_indices)), level)
    iv, ov = _expand_batch(indices, level, size), _expand_batch(offsets, level, size)
    if not _bags_valid(iv, ov, num):
        return loop_fallback(func, level, args, kwargs)
    rows = _expand_batch(weight, level, size).reshape(size * num, dim)
    samples = aten.arange.default(0, size, dtype=iv.dtype, device=iv.device).unsqueeze(1)
    shift = samples * num
    idx = iv + shift
    if pad >= 0:  # one padding row for all samples (beyond the weight's rows: matches none)
        rows = aten.cat.default([rows, rows.new_zeros((1, dim))])
        idx = aten.where.self(iv == pad, iv.new_full((), size * num), idx)
        _set(func, args, kwargs, 'padding_idx', size * num)
    starts = ov + samples.to(ov.dtype) * n
    if last:  # every sample's last bag runs to its end, which is the next sample's start
        starts = aten.cat.default([starts[:, :-1].reshape(-1), ov.new_full((1,), size * n)])
    _set(func, args, kwargs, 'weight', _with_layout(rows, weight.is_contiguous()))
    _set(func, args, kwargs, 'indices', idx.reshape(-1))
    _set(func, args, kwargs, 'offsets', starts.reshape(-1))
    if psw is not None:
        _set(func, args, kwargs, 'per_sample_weights',
             _expand_batch(psw, level, size).reshape(-1))
    out, offset2bag, bag_size, max_indices = func(*args, **kwargs)
    if offset2bag.numel():  # each sample's bags count from 0
        offset2bag = offset2bag.reshape(size, n) - samples.to(offset2bag.dtype) * bags
    else:
        offset2bag = offset2bag.new_empty((size, 0))
    if mode == 0:  # zeros, one per offset (forward only) or per bag
        zeros = bag_size.new_zeros((size, m if forward_only else bags))
        bag_size, max_indices = zeros, zeros.clone()
    else:
        bag_size = bag_size.reshape(size, bags)
        if mode == 2:  # rows of the stacked weight; an empty bag's 0 stays 0
            shift = shift.to(max_indices.dtype).unsqueeze(2)
            max_indices = (max_indices.reshape(size, bags, dim) - shift).clamp(min=0)
        else:  # mean: the bag sizes again
            max_indices = max_indices.reshape(size, bags)
    return _wrap_all((out.reshape(size, bags, dim), offset2bag, bag_size, max_indices), level)


# ----------------------------------------------------------------------- tables
def _register():
    table = {
        # convolution and its weight gradient (the input gradient is a convolution)
        'convolution.default': _convolution_rule,
        '_convolution_unfold.default': _convolution_rule,
        '_convolution_weight_backward.default': _convolution_weight_backward_rule,
        '_convolution_unfold_weight_backward.default': _convolution_weight_backward_rule,
        # pooling
        **{f'{op}{k}d{suffix}.default': fold_rule(('self',), k + 2)
           for k in (1, 2, 3) for op, suffix in (('max_pool', '_with_indices'), ('avg_pool', ''),
                                                 ('adaptive_avg_pool', ''),
                                                 ('adaptive_max_pool', ''))},
        'max_unpool2d.default': fold_rule(('self', 'indices'), 4),
        'max_unpool3d.default': fold_rule(('self', 'indices'), 5),
        '_max_pool_backward.default': fold_rule(('grad_output', 'indices'), _spatial,
                                                ('self_size',)),
        '_avg_pool_backward.default': fold_rule(('grad_output', 'self'), _spatial),
        '_adaptive_avg_pool_backward.default': fold_rule(('grad_output', 'self'), _spatial),
        # padding
        'constant_pad_nd.default': _constant_pad_rule,
        **{f'{op}_pad{k}d.default': fold_rule(('self',), k + 2)
           for k in (1, 2, 3) for op in ('reflection', 'replication')},
        '_pad_backward.default': fold_rule(('grad_output',), _padded_rank, ('self_size',)),
        # patches and sampling grids
        'im2col.default': fold_rule(('self',), 4),
        'col2im.default': fold_rule(('self',), 3),
        'grid_sampler_2d.default': fold_rule(('input', 'grid'), 4),
        'grid_sampler_3d.default': fold_rule(('input', 'grid'), 5),
        'grid_sampler_2d_backward.default': fold_rule(('grad_output', 'input', 'grid'), 4),
        'grid_sampler_3d_backward.default': fold_rule(('grad_output', 'input', 'grid'), 5),
        # normalization
        'native_layer_norm.default': _layer_norm_rule,
        '_fused_rms_norm.default': _layer_norm_rule,
        'native_layer_norm_backward.default': _layer_norm_backward_rule,
        '_fused_rms_norm_backward.default': _layer_norm_backward_rule,
        'native_group_norm.default': _group_norm_rule,
        'native_batch_norm.default': _batch_norm_rule,
        'native_batch_norm_backward.default': _batch_norm_backward_rule,
        # bags
        '_embedding_bag.default': _embedding_bag_rule,
        '_embedding_bag_forward_only.default': _embedding_bag_rule,
    }
    for qualname, rule in table.items():
        h = _handle(qualname)
        if h is not None:
            _RULES[h] = rule


_register()
