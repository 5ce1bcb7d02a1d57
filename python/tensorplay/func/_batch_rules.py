"""vmap batching rules, one table per op family (Note [vmap as a wrapper subclass]).

A rule is ``rule(func, level, args, kwargs)``: the arguments as the Python key hands them
(BatchedTensors of ``level`` hold the batch in dim 0 of ``_value``) and the op's result,
batched tensors wrapped again. A rule that meets a case it does not cover calls
``loop_fallback``, so a missing case costs speed, never a wrong answer.
"""
from tensorplay import _C
from tensorplay._ops import Tag, ops

from ._vmap import (_ACTIVE, _CATEGORY_RULES, _RULES, _unwrap, _wrap, check_inplace, loop_fallback,
                    same_type)

Tensor = _C.Tensor
aten = ops.aten


def _ldim(x):
    """A tensor's logical (per-sample) rank."""
    return x.dim()


def _pad(value, ldim, rank):
    """A batch ``value`` of logical rank ``ldim`` with size-1 dims after the batch dim up to
    logical rank ``rank``, so it broadcasts per sample against rank-``rank`` operands."""
    if ldim >= rank:
        return value
    return value.reshape((value.shape[0],) + (1,) * (rank - ldim) + tuple(value.shape[1:]))


def _wrap_all(out, level):
    if isinstance(out, Tensor):
        return _wrap(out, level)
    if isinstance(out, (tuple, list)):
        return same_type(out, [_wrap(o, level) if isinstance(o, Tensor) else o for o in out])
    return out


# ------------------------------------------------------------------ schema positions
def _arg_info(func):
    """{argument name: (position, default)} of the op's schema, cached on the handle."""
    info = getattr(func, '_vmap_args', None)
    if info is None:
        info = {a.name: (i, a.default_value if a.has_default_value else None)
                for i, a in enumerate(func._schema.arguments)}
        func._vmap_args = info
    return info


def _get(func, args, kwargs, name):
    pos, default = _arg_info(func)[name]
    if pos < len(args):
        return args[pos]
    return kwargs.get(name, default)


def _set(func, args, kwargs, name, value):
    """Puts an argument back where the caller passed it (args is a list here)."""
    pos = _arg_info(func)[name][0]
    if pos < len(args):
        args[pos] = value
    else:
        kwargs[name] = value


# ------------------------------------------------------------------------- pointwise
def pointwise_rule(func, level, args, kwargs):
    """Elementwise ops: batch dims lead, and batched operands of lower logical rank get
    size-1 dims after the batch dim so per-sample broadcasting is unchanged."""
    values, ldims, batched = [], [], False
    for a in args:
        if isinstance(a, Tensor):
            v = _unwrap(a, level)
            ldims.append(a.dim())
            values.append(v)
            batched = batched or v is not None
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return loop_fallback(func, level, args, kwargs)  # out= and tensor keywords: rare
    rank = max(ldims)
    if Tag.inplace in func.tags:
        if _unwrap(args[0], level) is None:
            check_inplace(func, level, args, kwargs, 'inplace arithmetic')
        rank = args[0].dim()
    elif _mixes_zero_dim(args, level):
        return loop_fallback(func, level, args, kwargs)
    new_args, k = [], 0
    for a in args:
        if isinstance(a, Tensor):
            v = values[k]
            new_args.append(a if v is None else _pad(v, ldims[k], rank))
            k += 1
        else:
            new_args.append(a)
    out = func(*new_args, **kwargs)
    if Tag.inplace in func.tags:
        return args[0]
    return _wrap_all(out, level)


def _mixes_zero_dim(args, level):
    """Whether a batched per-sample 0-dim tensor meets tensors of other dtypes: type
    promotion treats a 0-dim tensor as a scalar, its batch (1-dim) as a tensor."""
    dtypes, zero_dim_batched = set(), False
    for a in args:
        if isinstance(a, Tensor):
            dtypes.add(a.dtype)
            if a.dim() == 0 and _unwrap(a, level) is not None:
                zero_dim_batched = True
    return zero_dim_batched and len(dtypes) > 1


# elementwise ops the op table does not tag pointwise (activations and their backwards)
_ELEMENTWISE = [
    'clone', 'contiguous', '_to_dtype', 'detach', 'lift_fresh', 'copy_', 'fill_', 'zero_',
    '_gelu', '_gelu_tanh', '_silu', '_mish', '_softplus', '_elu', '_leaky_relu', '_hardswish',
    '_hardsigmoid', '_gelu_backward', '_gelu_tanh_backward', '_silu_backward',
    '_mish_backward', '_softplus_backward', '_elu_backward', '_leaky_relu_backward',
    '_hardswish_backward', '_hardsigmoid_backward', 'native_dropout_backward', 'isclose',
]


# -------------------------------------------------------------------------- dim args
def _shift(d):
    """A logical dim as a dim of the batch (negative dims already count from the end)."""
    return d + 1 if d >= 0 else d


def dim_rule(dim_args, none='all', tensor_args=('self',)):
    """Ops on one batched tensor (``tensor_args[0]``) whose ``dim_args`` name dims: the
    dims shift past the batch dim. ``none`` says what a None dim means: 'all' (reduce
    every dim: the logical dims are listed), 'flatten' (the op flattens first) or
    'loop'. Other tensor arguments must be unbatched (index_select's index, ...)."""
    def rule(func, level, orig_args, orig_kwargs):
        x = _get(func, orig_args, orig_kwargs, tensor_args[0])
        v = _unwrap(x, level)
        if v is None or x.dim() == 0 or any(
                _unwrap(_get(func, orig_args, orig_kwargs, t), level) is not None
                for t in tensor_args[1:]):
            return loop_fallback(func, level, orig_args, orig_kwargs)
        args = list(orig_args)
        kwargs = dict(orig_kwargs)
        _set(func, args, kwargs, tensor_args[0], v)
        for name in dim_args:
            d = _get(func, args, kwargs, name)
            if d is None:
                if none == 'all':
                    d = list(range(1, x.dim() + 1))
                elif none == 'flatten' and not _get(func, args, kwargs, 'keepdim'):
                    _set(func, args, kwargs, tensor_args[0], v.reshape(v.shape[0], -1))
                    d = 1
                else:
                    return loop_fallback(func, level, orig_args, orig_kwargs)
            elif isinstance(d, int):
                d = _shift(d)
            else:
                d = [_shift(i) for i in d]
                if not d and none != 'empty_ok':  # an empty dim list means "all" to most ops
                    d = list(range(1, x.dim() + 1))
            _set(func, args, kwargs, name, d)
        return _wrap_all(func(*args, **kwargs), level)
    return rule


_DIM_OPS = {
    # reductions: a None dim reduces every dim
    'all': [('sum.default', 'mean.default', 'amax.default', 'amin.default', 'all.dims',
             'any.dims', 'nansum.default', 'nanmean.default', 'count_nonzero.default',
             'var.correction', 'std.correction', 'var_mean.correction', 'std_mean.correction',
             'var.dim', 'std.dim', 'var_mean.dim', 'std_mean.dim', 'linalg_vector_norm.default',
             'logsumexp.default'), ('dim',)],
    # a None dim flattens the input first
    'flatten': [('argmax.default', 'argmin.default', 'prod.default'), ('dim',)],
    # dims given explicitly
    'dim': [('max.dim', 'min.dim', 'cumsum.default', 'cumprod.default', 'sort.default',
             'argsort.default', 'topk.default', 'softmax.int', 'log_softmax.int',
             'cummax.default', 'cummin.default', 'logcumsumexp.default', 'kthvalue.default',
             'median.dim', 'nanmedian.dim', 'mode.default',
             'narrow.default', 'select.int', 'unflatten.int', 'index_select.default',
             'linalg_matrix_norm.default', 'linalg_matrix_norm.str_ord'), ('dim',)],
    'dims': [('flip.default', 'rot90.default', '_squeeze_dims.default'), ('dims',)],
    'dim01': [('transpose.int', 'swapdims.default'), ('dim0', 'dim1')],
    'axis01': [('swapaxes.default',), ('axis0', 'axis1')],
    'dim12': [('diagonal.default', 'diag_embed.default'), ('dim1', 'dim2')],
    'flatten_dims': [('flatten.using_ints',), ('start_dim', 'end_dim')],
    'move': [('movedim.intlist', 'moveaxis.intlist'), ('source', 'destination')],
    'unfold': [('unfold.default',), ('dimension',)],
}


def _handle(qualname):
    name, overload = qualname.split('.')
    packet = getattr(aten, name, None)
    return getattr(packet, overload, None) if packet is not None else None


def _register_dim_ops():
    for kind, (names, dim_args) in _DIM_OPS.items():
        none = {'all': 'all', 'flatten': 'flatten', 'dims': 'empty_ok'}.get(kind, 'loop')
        for qualname in names:
            h = _handle(qualname)
            if h is not None:
                tensors = ('self', 'index') if qualname == 'index_select.default' else ('self',)
                _RULES[h] = dim_rule(dim_args, none=none, tensor_args=tensors)


# ------------------------------------------------------------------ views and shapes
def _sizes_rule(name):
    """view / reshape / expand / broadcast_to: the batch size leads the new sizes; a batch
    of lower logical rank than the sizes gets size-1 dims first (expand's new dims)."""
    def rule(func, level, args, kwargs):
        x = args[0]
        v = _unwrap(x, level)
        if v is None or len(args) < 2 or kwargs:
            return loop_fallback(func, level, args, kwargs)
        size = list(args[1])
        if name == 'expand':
            v = _pad(v, x.dim(), len(size))
        out = func(v, [v.shape[0]] + size, *args[2:])
        return _wrap(out, level)
    return rule


def _repeat_rule(func, level, args, kwargs):
    x, repeats = args[0], list(args[1])
    v = _unwrap(x, level)
    if v is None or len(repeats) < x.dim():
        return loop_fallback(func, level, args, kwargs)
    return _wrap(func(_pad(v, x.dim(), len(repeats)), [1] + repeats), level)


def _t_rule(func, level, args, kwargs):
    x = args[0]
    v = _unwrap(x, level)
    if x.dim() < 2:  # t of a vector or scalar is a view of itself
        return _wrap(v.view(list(v.shape)), level)
    return _wrap(v.transpose(1, 2), level)


def _unsqueeze_rule(func, level, args, kwargs):
    v = _unwrap(args[0], level)
    d = args[1] if len(args) > 1 else kwargs['dim']
    return _wrap(func(v, _shift(d)), level)  # (any logical rank: -1 stays the new last dim)


def _permute_rule(func, level, args, kwargs):
    v = _unwrap(args[0], level)
    dims = args[1] if len(args) > 1 else kwargs['dims']
    return _wrap(func(v, [0] + [_shift(d) for d in dims]), level)


def _as_strided_rule(func, level, args, kwargs):
    """A view of the per-sample geometry: each sample's view starts where its own slice of
    the batch starts (the wrapper carries the value's strides and storage offset)."""
    x = args[0]
    v = _unwrap(x, level)
    if v is None or kwargs:
        return loop_fallback(func, level, args, kwargs)
    size, stride = list(args[1]), list(args[2])
    offset = args[3] if len(args) > 3 and args[3] is not None else x.storage_offset()
    out = func(v, [v.shape[0]] + size, [v.stride(0)] + stride,
               v.storage_offset() + offset - x.storage_offset())
    return _wrap(out, level)


def _flip_side_rule(dim):
    def rule(func, level, args, kwargs):
        x = args[0]
        v = _unwrap(x, level)
        if x.dim() < (2 if dim == 1 else 1):
            return loop_fallback(func, level, args, kwargs)
        return _wrap(v.flip([dim + 1]), level)
    return rule


def _matrix_rule(func, level, args, kwargs):
    """Ops on the last two dims that accept batches themselves (tril, linalg): the batch
    is one more batch dim; every tensor argument must then be batched or of that rank."""
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor) and (a.dim() < 2 or _unwrap(a, level) is None):
            return loop_fallback(func, level, args, kwargs)
    new_args = [_unwrap(a, level) if isinstance(a, Tensor) else a for a in args]
    new_kwargs = {k: _unwrap(a, level) if isinstance(a, Tensor) else a for k, a in kwargs.items()}
    return _wrap_all(func(*new_args, **new_kwargs), level)


# ------------------------------------------------------------------------ matmul family
def matmul_rule(func, level, args, kwargs):
    """matmul with matmul's broadcasting: a batched vector becomes a 1-row (or 1-column)
    matrix, batched operands get size-1 dims so their logical batch dims line up."""
    x, y = args[0], args[1]
    xv, yv = _unwrap(x, level), _unwrap(y, level)
    xl, yl = x.dim(), y.dim()
    if xl == 0 or yl == 0:
        return loop_fallback(func, level, args, kwargs)
    sq_x = xv is not None and xl == 1
    sq_y = yv is not None and yl == 1
    if sq_x:
        xv, xl = xv.unsqueeze(1), 2
    if sq_y:
        yv, yl = yv.unsqueeze(-1), 2
    rank = max(xl, yl)
    xa = x if xv is None else _pad(xv, xl, rank)
    ya = y if yv is None else _pad(yv, yl, rank)
    out = aten.matmul.default(xa, ya)
    if sq_y:  # y's column
        out = out.squeeze(-1)
    if sq_x:  # x's row: the last dim when y was a vector
        out = out.squeeze(-1 if y.dim() == 1 else -2)
    return _wrap(out, level)


def _ranks_rule(ranks):
    """mm (2, 2), bmm (3, 3), mv (2, 1), dot (1, 1): matmul's rule where the logical ranks
    are the op's; elsewhere the loop (which raises the op's own error)."""
    def rule(func, level, args, kwargs):
        if kwargs or (args[0].dim(), args[1].dim()) != ranks:
            return loop_fallback(func, level, args, kwargs)
        if ranks == (1, 1) and args[0].dtype != args[1].dtype:
            return loop_fallback(func, level, args, kwargs)
        return matmul_rule(func, level, args, kwargs)
    return rule


def _addmm_rule(func, level, args, kwargs):
    """beta * self + alpha * (mat1 @ mat2) from matmul's rule and pointwise ops."""
    self_, m1, m2 = args[0], args[1], args[2]
    if m1.dim() != 2 or m2.dim() != 2 or self_.dim() > 2 or len(args) > 3:
        return loop_fallback(func, level, args, kwargs)
    beta, alpha = kwargs.get('beta', 1), kwargs.get('alpha', 1)
    batched = _unwrap(m1, level) is not None or _unwrap(m2, level) is not None
    pv = matmul_rule(aten.matmul.default, level, (m1, m2), {})._value if batched \
        else aten.mm.default(m1, m2)
    if alpha != 1:
        pv = pv.mul_(alpha)
    if beta != 0:
        sv = _unwrap(self_, level)
        s = self_ if sv is None else _pad(sv, self_.dim(), 2)
        if beta != 1:
            s = s * beta
        # in place when the product already has the batch (the sum's shape)
        pv = pv.add_(s) if batched and s.dtype == pv.dtype else pv + s
    return _wrap(pv, level)


def _einsum_rule(func, level, args, kwargs):
    """A letter no operand uses stands for the batch dim of each batched operand and of the
    output (explicit ``->`` equations; others take the loop)."""
    eq, operands = args[0], args[1]
    if '->' not in eq or kwargs:
        return loop_fallback(func, level, args, kwargs)
    lhs, rhs = eq.replace(' ', '').split('->')
    terms = lhs.split(',')
    letter = next(c for c in 'zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA' if c not in eq)
    new_terms, values = [], []
    for t, op in zip(terms, operands):
        v = _unwrap(op, level)
        new_terms.append(t if v is None else letter + t)
        values.append(op if v is None else v)
    return _wrap(func(','.join(new_terms) + '->' + letter + rhs, values), level)


# --------------------------------------------------------------------- indexing family
def _expand_batch(x, level, size):
    """The batch of ``x`` at ``level``; an unbatched ``x`` is expanded to ``size`` samples."""
    v = _unwrap(x, level)
    if v is None:
        v = x.unsqueeze(0).expand(size, *x.shape)
    return v


def _gather_scatter_rule(tensor_names):
    """gather / scatter* (self, dim, index, src): every tensor operand gets the batch
    (unbatched ones expanded, the op reads them only) and dim shifts."""
    def rule(func, level, args, kwargs):
        tensors = [_get(func, args, kwargs, n) for n in tensor_names]
        if any(not isinstance(t, Tensor) or t.dim() == 0 for t in tensors):
            return loop_fallback(func, level, args, kwargs)
        size = next(_unwrap(t, level) for t in tensors if _unwrap(t, level) is not None).shape[0]
        args, kwargs = list(args), dict(kwargs)
        for n, t in zip(tensor_names, tensors):
            _set(func, args, kwargs, n, _expand_batch(t, level, size))
        _set(func, args, kwargs, 'dim', _shift(_get(func, args, kwargs, 'dim')))
        return _wrap(func(*args, **kwargs), level)
    return rule


def _cross_entropy_rows_rule(func, level, args, kwargs):
    """Row-wise cross entropy (self [N, C], target [N]): batch and rows flatten into rows."""
    x, target = args[0], args[1]
    if x.dim() != 2 or target.dim() != 1 or kwargs:
        return loop_fallback(func, level, args, kwargs)
    size = (_unwrap(x, level) if _unwrap(x, level) is not None else _unwrap(target, level)).shape[0]
    xv, tv = _expand_batch(x, level, size), _expand_batch(target, level, size)
    n = x.shape[0]
    loss, lse = func(xv.reshape(size * n, -1), tv.reshape(size * n), *args[2:])
    return _wrap(loss.reshape(size, n), level), _wrap(lse.reshape(size, n), level)


def _cross_entropy_rows_backward_rule(func, level, args, kwargs):
    grad_rows, x, target, ignore_index, lse = args
    if x.dim() != 2 or kwargs:
        return loop_fallback(func, level, args, kwargs)
    size = next(_unwrap(t, level) for t in (grad_rows, x, target, lse)
                if _unwrap(t, level) is not None).shape[0]
    n = x.shape[0]
    g, xv, tv, lv = (_expand_batch(t, level, size).reshape(size * n, *t.shape[1:])
                     for t in (grad_rows, x, target, lse))
    return _wrap(func(g, xv, tv, ignore_index, lv).reshape(size, *x.shape), level)


# --------------------------------------------------------------------------- factories
def _like_rule(func, level, args, kwargs):
    """zeros_like / ones_like / full_like / empty_like of a batch: of the batch's shape."""
    return _wrap(func(_unwrap(args[0], level), *args[1:], **kwargs), level)


def _stack_cat_rule(func, level, args, kwargs):
    """cat / stack: every operand gets the batch (unbatched ones expanded); dim shifts."""
    tensors = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get('dim', 0)
    if kwargs and set(kwargs) != {'dim'} or any(t.dim() == 0 for t in tensors):
        return loop_fallback(func, level, args, kwargs)
    if func is not aten.stack.default and any(t.dim() == 1 and t.shape[0] == 0 for t in tensors):
        return loop_fallback(func, level, args, kwargs)  # cat skips legacy empty 1-d operands
    size = next(_unwrap(t, level) for t in tensors if _unwrap(t, level) is not None).shape[0]
    values = [_expand_batch(t, level, size) for t in tensors]
    return _wrap(func(values, _shift(dim)), level)


def _convolution_rule(func, level, args, kwargs):
    """The loop, and a mark on the level: the convolution's backward must then run in
    grad mode (Note [Backward inside vmap])."""
    lv = _ACTIVE.get(level)
    if lv is not None:
        lv.data_reading_backward = True
    return loop_fallback(func, level, args, kwargs)


def _data_rule(func, level, args, kwargs):
    raise RuntimeError('vmap: It looks like you\'re calling .item() on a Tensor. We don\'t '
                       'support vmap over calling .item() on a Tensor, please try to rewrite '
                       'what you\'re doing with other operations. If error is occurring '
                       'somewhere inside PyTorch internals, please file a bug report.')


def _register():
    for name in _ELEMENTWISE:
        packet = getattr(aten, name, None)
        for o in (packet.overloads() if packet is not None else ()):
            h = getattr(packet, o)
            if Tag.out not in h.tags:
                _RULES[h] = pointwise_rule
    _register_dim_ops()
    table = {
        # views and shapes
        'view.default': _sizes_rule('view'), 'reshape.default': _sizes_rule('reshape'),
        'expand.default': _sizes_rule('expand'), 'broadcast_to.default': _sizes_rule('expand'),
        'repeat.default': _repeat_rule, 'unsqueeze.default': _unsqueeze_rule,
        't.default': _t_rule, 'permute.default': _permute_rule,
        'as_strided.default': _as_strided_rule,
        'fliplr.default': _flip_side_rule(1), 'flipud.default': _flip_side_rule(0),
        # last-two-dims ops that batch themselves
        **{n: _matrix_rule for n in (
            'tril.default', 'triu.default', 'linalg_det.default', 'det.default',
            'linalg_slogdet.default', 'slogdet.default', 'logdet.default',
            'linalg_inv_ex.default', 'linalg_inv.default', 'inverse.default',
            'linalg_cholesky_ex.default', 'linalg_cholesky.default', 'cholesky.default',
            'linalg_qr.default', 'linalg_svd.default', 'linalg_svdvals.default',
            'linalg_eigh.default', 'linalg_eigvalsh.default', 'linalg_matrix_exp.default',
            'matrix_exp.default', 'linalg_matrix_power.default', 'matrix_power.default',
            'linalg_solve.default')},
        # matmul family
        'matmul.default': matmul_rule, 'mm.default': _ranks_rule((2, 2)),
        'bmm.default': _ranks_rule((3, 3)), 'mv.default': _ranks_rule((2, 1)),
        'dot.default': _ranks_rule((1, 1)), 'addmm.default': _addmm_rule,
        'einsum.default': _einsum_rule,
        # indexing
        'gather.default': _gather_scatter_rule(('self', 'index')),
        'scatter.src': _gather_scatter_rule(('self', 'index', 'src')),
        'scatter.value': _gather_scatter_rule(('self', 'index')),
        'scatter_add.default': _gather_scatter_rule(('self', 'index', 'src')),
        'scatter_reduce.two': _gather_scatter_rule(('self', 'index', 'src')),
        # losses
        '_cross_entropy_rows.default': _cross_entropy_rows_rule,
        '_cross_entropy_rows_backward.default': _cross_entropy_rows_backward_rule,
        # factories shaped like their input
        **{n: _like_rule for n in ('zeros_like.default', 'ones_like.default',
                                   'full_like.default', 'empty_like.default')},
        'cat.default': _stack_cat_rule, 'concat.default': _stack_cat_rule,
        'concatenate.default': _stack_cat_rule, 'stack.default': _stack_cat_rule,
        '_local_scalar_dense.default': _data_rule,
        'convolution.default': _convolution_rule,
    }
    for qualname, rule in table.items():
        h = _handle(qualname)
        if h is not None:
            _RULES[h] = rule
    _CATEGORY_RULES.append((lambda f: Tag.pointwise in f.tags and Tag.out not in f.tags,
                            pointwise_rule))


_register()
