"""vmap batching rules, one table per op family (Note [vmap as a wrapper subclass]).

A rule is ``rule(func, level, args, kwargs)``: the arguments as the Python key hands them
(BatchedTensors of ``level`` hold the batch in dim 0 of ``_value``) and the op's result,
batched tensors wrapped again. A rule that meets a case it does not cover calls
``loop_fallback``, so a missing case costs speed, never a wrong answer.
"""
from tensorplay import _C
from tensorplay._ops import Tag, ops

from ._vmap import (_CATEGORY_RULES, _RULES, BatchedTensor, _batch_size, _unwrap, _wrap, check_inplace,
                    loop_fallback, same_type)

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
    elif _mixes_zero_dim(args[1:] if func is _WHERE else args, level):  # (where's condition
        # takes no part in promotion)
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


_WHERE = aten.where.self


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


def dim_rule(dim_args, none='all'):
    """Ops on one batched tensor (``self``) whose ``dim_args`` name dims: the
    dims shift past the batch dim. ``none`` says what a None dim means: 'all' (reduce
    every dim: the logical dims are listed), 'flatten' (the op flattens first) or
    'loop'."""
    def rule(func, level, orig_args, orig_kwargs):
        x = _get(func, orig_args, orig_kwargs, 'self')
        v = _unwrap(x, level)
        if v is None or (x.dim() == 0 and none not in ('all', 'flatten')):
            return loop_fallback(func, level, orig_args, orig_kwargs)
        if x.dim() == 0:
            return _zero_dim_reduction(func, level, orig_args, orig_kwargs, v)
        args = list(orig_args)
        kwargs = dict(orig_kwargs)
        _set(func, args, kwargs, 'self', v)
        for name in dim_args:
            d = _get(func, args, kwargs, name)
            if d is None:
                if none == 'all':
                    d = list(range(1, x.dim() + 1))
                elif none == 'flatten' and not _get(func, args, kwargs, 'keepdim'):
                    _set(func, args, kwargs, 'self', v.reshape(v.shape[0], -1))
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


def _zero_dim_reduction(func, level, args, kwargs, v):
    """A reduction of 0-dim samples (over no dim, or dim 0 / -1) reduces a size-1 dim added
    after the batch dim, which keepdim then drops again."""
    dim = _get(func, args, kwargs, 'dim')
    if dim not in (None, 0, -1) and list(dim) not in ([], [0], [-1]):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    args, kwargs = list(args), dict(kwargs)
    _set(func, args, kwargs, 'self', v.unsqueeze(1))
    _set(func, args, kwargs, 'dim', 1 if dim is None or isinstance(dim, int) else [1])
    out = func(*args, **kwargs)
    if isinstance(out, Tensor):
        return _wrap(out.reshape(v.shape), level)
    return same_type(out, [_wrap(o.reshape(v.shape), level) for o in out])


_DIM_OPS = {
    # reductions: a None dim reduces every dim
    'all': [('sum.default', 'mean.default', 'amax.default', 'amin.default', 'all.dims',
             'any.dims', 'nansum.default', 'nanmean.default', 'count_nonzero.default',
             'var.correction', 'std.correction', 'var_mean.correction', 'std_mean.correction',
             'var.dim', 'std.dim', 'var_mean.dim', 'std_mean.dim', 'linalg_vector_norm.default',
             'logsumexp.default'), ('dim',)],
    # a None dim flattens the input first
    'flatten': [('argmax.default', 'argmin.default', 'prod.default', 'aminmax.default'), ('dim',)],
    # dims given explicitly
    'dim': [('max.dim', 'min.dim', 'cumsum.default', 'cumprod.default', 'sort.default',
             'argsort.default', 'topk.default', 'softmax.int', 'log_softmax.int',
             'cummax.default', 'cummin.default', 'logcumsumexp.default', 'kthvalue.default',
             'median.dim', 'nanmedian.dim', 'mode.default',
             'narrow.default', 'select.int', 'unflatten.int',
             'linalg_matrix_norm.default', 'linalg_matrix_norm.str_ord',
             '_fft_c2c.default', '_fft_r2c.default', '_fft_c2r.default'), ('dim',)],
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
                _RULES[h] = dim_rule(dim_args, none=none)


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


def _inplace_view_rule(batch_op):
    """t_, transpose_, squeeze_, unsqueeze_, as_strided_ on a BatchedTensor: the same in-place
    view of the batch (``batch_op(x, v, args)``, dims shifted past the batch dim), then the
    wrapper takes one sample's new sizes, strides and offset; the result is the wrapper itself."""
    def rule(func, level, args, kwargs):
        x = args[0]
        v = _unwrap(x, level)
        if v is None or kwargs:
            return loop_fallback(func, level, args, kwargs)
        batch_op(x, v, list(args[1:]))
        _C._set_geometry(x, list(v.shape[1:]), list(v.stride()[1:]), v.storage_offset())
        return x
    return rule


def _t_batch(x, v, args):
    if x.dim() == 2:  # (t_ of a vector or scalar changes nothing)
        v.transpose_(1, 2)


def _squeeze_batch(x, v, args):
    if not args:
        dims = [d for d in range(x.dim()) if x.shape[d] == 1]
    else:
        dims = list(args[0]) if isinstance(args[0], (list, tuple)) else [args[0]]
        dims = [d % x.dim() if x.dim() else 0 for d in dims]
    if x.dim():
        v.squeeze_([d + 1 for d in dims])


def _as_strided_batch(x, v, args):
    size, stride = list(args[0]), list(args[1])
    offset = args[2] if len(args) > 2 and args[2] is not None else x.storage_offset()
    v.as_strided_([v.shape[0]] + size, [v.stride(0)] + stride,
                  v.storage_offset() + offset - x.storage_offset())


_INPLACE_VIEW_RULES = {
    't_.default': _t_batch,
    'transpose_.default': lambda x, v, a: v.transpose_(_shift(a[0]), _shift(a[1])),
    'unsqueeze_.default': lambda x, v, a: v.unsqueeze_(_shift(a[0])),
    'squeeze_.default': _squeeze_batch, 'squeeze_.dim': _squeeze_batch,
    'squeeze_.dims': _squeeze_batch, 'as_strided_.default': _as_strided_batch,
}


def _flat_rule(reduce):
    """Ops of a whole sample (max(), median(), ...): ``reduce(flat, 1)`` over each sample
    flattened to one row; a 0-dim sample is a row of one."""
    def rule(func, level, args, kwargs):
        v = _unwrap(args[0], level)
        return _wrap(reduce(v.reshape(v.shape[0], -1), 1), level)
    return rule


def _msort_rule(func, level, args, kwargs):
    if args[0].dim() == 0:
        return loop_fallback(func, level, args, kwargs)
    return _wrap(_unwrap(args[0], level).sort(1)[0], level)


def _diag_rule(func, level, args, kwargs):
    """diag: a vector's diagonal matrix (diag_embed), a matrix's diagonal (diagonal);
    diagflat: diag_embed of the flattened sample; trace: the diagonal's sum."""
    x, v = args[0], _unwrap(args[0], level)
    offset = args[1] if len(args) > 1 else next(iter(kwargs.values()), 0)
    name = func._schema.name
    if name == 'aten::diagflat':
        return _wrap(v.reshape(v.shape[0], -1).diag_embed(offset), level)
    if name == 'aten::trace' and x.dim() == 2:
        return _wrap(v.diagonal(0, 1, 2).sum(-1), level)
    if name == 'aten::diag' and x.dim() in (1, 2):
        return _wrap(v.diag_embed(offset) if x.dim() == 1 else v.diagonal(offset, 1, 2), level)
    return loop_fallback(func, level, args, kwargs)  # the op's own error


def _roll_rule(func, level, args, kwargs):
    """roll: dims shift; without dims the sample rolls flattened."""
    x, v = args[0], _unwrap(args[0], level)
    shifts = args[1]
    dims = args[2] if len(args) > 2 else kwargs.get('dims', [])
    if x.dim() == 0:
        return loop_fallback(func, level, args, kwargs)
    if not dims:
        return _wrap(func(v.reshape(v.shape[0], -1), shifts, [1]).reshape(v.shape), level)
    return _wrap(func(v, shifts, [_shift(d) for d in dims]), level)


def _complex_view_rule(func, level, args, kwargs):
    """view_as_real / view_as_complex: they act on the last dim only, which the batch dim
    (in front) never is; _conj / _neg_view act on no dim (the batch keeps the bit)."""
    return _wrap(func(_unwrap(args[0], level)), level)


def _tile_rule(func, level, args, kwargs):
    """tile: sample and reps padded with leading ones to one rank; the batch repeats once."""
    x, v, reps = args[0], _unwrap(args[0], level), list(args[1])
    rank = max(x.dim(), len(reps))
    return _wrap(_pad(v, x.dim(), rank).repeat([1] + [1] * (rank - len(reps)) + reps), level)


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
def batched_matmul(x, xb, y, yb):
    """The batch of per-sample ``x @ y`` with matmul's broadcasting: ``x`` (``y``) is a batch,
    batch dim first, where ``xb`` (``yb``), else a tensor every sample shares. A batched
    vector becomes a 1-row (or 1-column) matrix; batched operands get size-1 dims so their
    logical batch dims line up."""
    xl, yl = x.dim() - xb, y.dim() - yb
    y_vector = yl == 1
    sq_x = xb and xl == 1
    sq_y = yb and yl == 1
    if sq_x:
        x, xl = x.unsqueeze(1), 2
    if sq_y:
        y, yl = y.unsqueeze(-1), 2
    if xb and xl < yl:
        x = _pad(x, xl, yl)
    elif yb and yl < xl:
        y = _pad(y, yl, xl)
    out = _MATMUL(x, y)
    if sq_y:  # y's column
        out = out.squeeze(-1)
    if sq_x:  # x's row: the last dim when y was a vector
        out = out.squeeze(-1 if y_vector else -2)
    return out


_MATMUL = aten.matmul.default


def _operand(t, level):
    """(the batch of ``t`` at ``level``, True), or (``t``, False) when it is not batched."""
    v = _unwrap(t, level)
    return (t, False) if v is None else (v, True)


def matmul_rule(func, level, args, kwargs):
    x, y = args[0], args[1]
    if x.dim() == 0 or y.dim() == 0:
        return loop_fallback(func, level, args, kwargs)
    xv, yv = _unwrap(x, level), _unwrap(y, level)
    return _wrap(batched_matmul(x if xv is None else xv, xv is not None,
                                y if yv is None else yv, yv is not None), level)


def _ranks_rule(ranks):
    """mm (2, 2), bmm (3, 3), mv (2, 1), dot and vdot (1, 1): matmul's rule where the
    logical ranks are the op's; elsewhere the loop (which raises the op's own error)."""
    def rule(func, level, args, kwargs):
        if kwargs or (args[0].dim(), args[1].dim()) != ranks:
            return loop_fallback(func, level, args, kwargs)
        if ranks == (1, 1) and (args[0].dtype != args[1].dtype or args[0].is_complex()):
            return loop_fallback(func, level, args, kwargs)  # (vdot would conjugate)
        return matmul_rule(func, level, args, kwargs)
    return rule


def expandable(shape, target):
    """Whether a tensor of ``shape`` expands to ``target`` (the smaller-rank side only)."""
    return len(shape) <= len(target) and all(
        s == t or s == 1 for s, t in zip(reversed(tuple(shape)), reversed(tuple(target))))


def _addmm_shape(name, a, b):
    """The per-sample product shape of addmm / addmv / baddbmm / addbmm from the operands'
    shapes, or None when they do not fit (the op then raises its own error)."""
    if name == 'addmm' and len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return (a[0], b[1])
    if name == 'addmv' and len(a) == 2 and len(b) == 1 and a[1] == b[0]:
        return (a[0],)
    if name in ('baddbmm', 'addbmm') and len(a) == 3 and len(b) == 3 and a[0] == b[0] and \
            a[2] == b[1]:
        return (a[0], a[1], b[2]) if name == 'baddbmm' else (a[1], b[2])
    return None


_ADDMM_KWARGS = frozenset(('beta', 'alpha'))


def _addmm_rule(name):
    """beta * self + alpha * product from matmul's rule and pointwise ops: mat1 @ mat2
    (addmm), mat @ vec (addmv), batch1[i] @ batch2[i] (baddbmm) or their sum (addbmm: one
    matrix product of the batches laid side by side). As the kernels do, alpha == 0 skips
    the product and beta == 0 ignores self."""
    def rule(func, level, args, kwargs):
        self_, m1, m2 = args[0], args[1], args[2]
        beta, alpha = kwargs.get('beta', 1), kwargs.get('alpha', 1)
        sa, sb, ss = tuple(m1.shape), tuple(m2.shape), tuple(self_.shape)
        shape = _addmm_shape(name, sa, sb)
        dt = self_.dtype
        if len(args) > 3 or not kwargs.keys() <= _ADDMM_KWARGS or shape is None or \
                not dt == m1.dtype == m2.dtype or dt == _C.bool or not expandable(ss, shape) or \
                not (isinstance(alpha, int) and isinstance(beta, int) or self_.is_floating_point()):
            # (integer tensors truncate float alpha / beta)
            return loop_fallback(func, level, args, kwargs)
        (a, ab), (b, bb) = _operand(m1, level), _operand(m2, level)
        sv = _unwrap(self_, level)
        size = (a if ab else b if bb else sv).shape[0]
        if name == 'addbmm':  # sum_i a[i] @ b[i] = [a[0] ... a[k-1]] @ [b[0]; ...; b[k-1]]
            k = sa[0] * sa[2]
            a = a.transpose(int(ab), int(ab) + 1).reshape(*a.shape[:int(ab)], shape[0], k)
            b = b.reshape(*b.shape[:int(bb)], k, shape[1])
        s = None
        if beta != 0:
            s = self_ if sv is None else _pad(sv, len(ss), len(shape))
            if beta != 1:
                s = s * beta
        if alpha == 0:  # each sample's own copy of beta * self (or of zeros)
            base = s if s is not None else self_.new_zeros(())
            return _wrap(base.expand(size, *shape).clone(), level)
        out = batched_matmul(a, ab, b, bb)
        if alpha != 1:
            out = out.mul_(alpha)
        if not (ab or bb):  # a shared product: self has the batch
            return _wrap(out.expand(size, *shape).clone() if s is None else out + s, level)
        if s is not None:
            # in place: the product already has the batch (the sum's shape; an outer level's
            # self may hold batches the product lacks)
            out = out + s if isinstance(s, BatchedTensor) else out.add_(s)
        return _wrap(out, level)
    return rule


_LETTERS = 'zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA'


def _einsum_rule(func, level, args, kwargs):
    """A letter no operand uses stands for the batch dim of each batched operand and of the
    output. An equation without '->' gets PyTorch's implicit output first: the letters used
    once, in alphabetical order (capitals first), after the ellipsis dims if any."""
    eq, operands = args[0], args[1]
    letter = next((c for c in _LETTERS if c not in eq), None)
    if kwargs or letter is None:
        return loop_fallback(func, level, args, kwargs)
    eq = eq.replace(' ', '')
    if '->' in eq:
        lhs, rhs = eq.split('->')
    else:
        lhs = eq
        letters = lhs.replace('...', '').replace(',', '')
        rhs = ('...' if '...' in lhs else '') + ''.join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    new_terms, values = [], []
    for t, op in zip(lhs.split(','), operands):
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


def _index_view(iv, dim, shape):
    """A batch of 1-d per-sample indices (B x k) placed at logical dim ``dim`` and expanded
    to the batch ``shape``: gather's and scatter's index for index_* ops."""
    r = len(shape) - 1
    return iv.reshape(iv.shape[0], *([1] * dim), -1, *([1] * (r - dim - 1))).expand(*shape)


def _wrapped(iv, n):
    """Negative indices counted from the end (ops that allow them; out of range stays so)."""
    return aten.where.self(iv < 0, iv + n, iv)


def _index_dim_rule(func, level, args, kwargs):
    """index_select / index_add / index_copy / index_fill / index_reduce (self, dim, index,
    ...): an unbatched index keeps the op (dim shifted, operands given the batch); a batched
    one (or a batched fill value) becomes gather / scatter_add / scatter / scatter_reduce."""
    x, dim, index = args[0], args[1], args[2]
    if x.dim() == 0 or index.dim() > 1 or kwargs and set(kwargs) - {'alpha', 'include_self'}:
        return loop_fallback(func, level, args, kwargs)
    size = _batch_size(args, kwargs, level)
    xv, d, iv = _expand_batch(x, level, size), dim % x.dim(), _unwrap(index, level)
    name = func._schema.name
    fill = name == 'aten::index_fill'
    if iv is None and not (fill and _unwrap(args[3], level) is not None):
        rest = [_expand_batch(a, level, size) if isinstance(a, Tensor) and not fill else a
                for a in args[3:]]
        return _wrap(func(xv, d + 1, index, *rest, **kwargs), level)
    rest = [_expand_batch(a, level, size) if isinstance(a, Tensor) else a for a in args[3:]]
    iv = _expand_batch(index, level, size)
    if name == 'aten::index_select':
        shape = list(xv.shape)
        shape[d + 1] = iv.shape[-1] if index.dim() else 1
        return _wrap(xv.gather(d + 1, _index_view(iv, d, shape)), level)
    if fill:
        shape = list(xv.shape)
        shape[d + 1] = iv.shape[-1] if index.dim() else 1
        value = rest[0] if isinstance(rest[0], Tensor) else xv.new_full((size,), rest[0])
        src = value.to(x.dtype).reshape(size, *([1] * x.dim())).expand(*shape)
        iv = _wrapped(iv, x.shape[d])
    else:
        src = rest[0]
        shape = src.shape
    idx = _index_view(iv, d, shape)
    if name == 'aten::index_add':
        alpha = kwargs.get('alpha', 1)
        return _wrap(xv.scatter_add(d + 1, idx, src if alpha == 1 else src * alpha), level)
    if name == 'aten::index_reduce':
        return _wrap(xv.scatter_reduce(d + 1, idx, src, rest[1], **kwargs), level)
    return _wrap(xv.scatter(d + 1, idx, src), level)  # index_copy, index_fill


def _take_rule(func, level, args, kwargs):
    """take: gather over each sample's flattened self (negative indices from the end)."""
    x, index = args
    size = _batch_size(args, kwargs, level)
    xv = _unwrap(x, level)
    flat = x.reshape(1, -1).expand(size, -1) if xv is None else xv.reshape(size, -1)
    iv = _wrapped(_expand_batch(index, level, size).reshape(size, -1), x.numel())
    return _wrap(flat.gather(1, iv).reshape(size, *index.shape), level)


def _put_rule(func, level, args, kwargs):
    """put: scatter (scatter_add when accumulating) into each sample's flattened self."""
    x, index, source = args[:3]
    accumulate = args[3] if len(args) > 3 else kwargs.get('accumulate', False)
    size = _batch_size(args, kwargs, level)
    flat = _expand_batch(x, level, size).reshape(size, -1)
    iv = _wrapped(_expand_batch(index, level, size).reshape(size, -1), x.numel())
    src = _expand_batch(source, level, size).reshape(size, -1)
    out = flat.scatter_add(1, iv, src) if accumulate else flat.scatter(1, iv, src)
    return _wrap(out.reshape(size, *x.shape), level)


def _take_along_dim_rule(func, level, args, kwargs):
    """take_along_dim: unbatched operands broadcast against the batch by themselves."""
    x, index = args[0], args[1]
    dim = args[2] if len(args) > 2 else kwargs.get('dim')
    size = _batch_size(args, kwargs, level)
    if dim is None:
        xv = _expand_batch(x, level, size).reshape(size, -1)
        iv = _expand_batch(index, level, size).reshape(size, -1)
        return _wrap(func(xv, iv, 1), level)
    if x.dim() != index.dim() or x.dim() == 0:
        return loop_fallback(func, level, args, kwargs)
    vals = [t.unsqueeze(0) if _unwrap(t, level) is None else _unwrap(t, level) for t in (x, index)]
    return _wrap(func(*vals, _shift(dim)), level)


def _index_put_rule(func, level, args, kwargs):
    """index_put: one more index, the sample's number, in front of the others (each given
    size-1 dims to the broadcast per-sample index rank); batched values padded likewise."""
    x, indices, values = args[:3]
    rest = list(args[3:])
    if any(i.dtype == _C.bool or i.dtype == _C.uint8 for i in indices) or kwargs:
        return loop_fallback(func, level, args, kwargs)  # masks: counts per sample vary
    size = _batch_size([x, values, *indices], {}, level)
    rank = max(i.dim() for i in indices)
    idx = [i if _unwrap(i, level) is None else _pad(_unwrap(i, level), i.dim(), rank)
           for i in indices]
    rows = aten.arange.default(0, size, device=x.device).reshape(size, *([1] * rank))
    vv = _unwrap(values, level)
    if vv is not None:
        vv = _pad(vv, values.dim(), rank + x.dim() - len(indices))
    out = func(_expand_batch(x, level, size), [rows] + idx, values if vv is None else vv, *rest)
    return _wrap(out, level)


def _masked_fill_rule(func, level, args, kwargs):
    """masked_fill: the mask padded to self's rank; a batched value through where(mask,
    value, self) (a mask that would broadcast self takes the loop: the op's error)."""
    x, mask, value = args
    vv = _unwrap(value, level)
    if mask.dim() > x.dim() or vv is not None and value.dim() > 0 or kwargs or any(
            m != 1 and m != s for m, s in zip(reversed(mask.shape), reversed(x.shape))):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    size = _batch_size(args, kwargs, level)
    mv = _unwrap(mask, level)
    m = mask if mv is None else _pad(mv, mask.dim(), x.dim())
    if vv is None:  # a number or a shared value
        return _wrap(func(_expand_batch(x, level, size), m, value), level)
    v = _pad(vv.to(x.dtype), 0, x.dim())
    return _wrap(aten.where.self(m, v, _expand_batch(x, level, size)), level)


def _masked_scatter_rule(func, level, args, kwargs):
    """masked_scatter: the k-th True of each sample's mask takes its source's k-th value
    (a running count of the mask indexes each sample's flattened source)."""
    x, mask, source = args
    size = _batch_size(args, kwargs, level)
    xv = _expand_batch(x, level, size)
    mv = _expand_batch(mask, level, size)
    mv = _pad(mv, mask.dim(), x.dim()).expand(xv.shape).reshape(size, -1)
    src = _expand_batch(source, level, size).reshape(size, -1)
    pos = (mv.cumsum(1) - 1).clamp(min=0)
    taken = src.gather(1, pos) if src.shape[1] else src.new_zeros(pos.shape)
    return _wrap(aten.where.self(mv, taken, xv.reshape(size, -1)).reshape(xv.shape), level)


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


# ------------------------------------------------------------------------- sorted data
def _searchsorted_rule(func, level, args, kwargs):
    """searchsorted (sorted_sequence, self) and bucketize (self, boundaries): a shared 1-D
    sequence searches every sample's values in one call; a batched one (or an N-D one,
    whose rows pair with self's) becomes searchsorted's N-D form, one row per sample."""
    bucket = func is aten.bucketize.Tensor
    seq = _get(func, args, kwargs, 'boundaries' if bucket else 'sorted_sequence')
    x = _get(func, args, kwargs, 'self')
    sorter = None if bucket else _get(func, args, kwargs, 'sorter')
    flags = {n: _get(func, args, kwargs, n) for n in ('out_int32', 'right')}
    if not bucket:
        flags['side'] = _get(func, args, kwargs, 'side')
    if not isinstance(x, Tensor):  # a Python number searches as the op's wrapped number would
        x = aten.full.default([], x, dtype=_C.float64 if isinstance(x, float) else _C.int64,
                              device=seq.device)
    rows = seq.dim() > 1
    if seq.dim() == 0 or (bucket and rows) or rows and (
            x.dim() != seq.dim() or tuple(x.shape[:-1]) != tuple(seq.shape[:-1])):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    size = _batch_size(args, kwargs, level)
    xv = _unwrap(x, level)
    if not rows and _unwrap(seq, level) is None and (sorter is None or
                                                      _unwrap(sorter, level) is None):
        return _wrap(func(xv, seq, **flags) if bucket else func(seq, xv, **flags, sorter=sorter),
                     level)
    values = _expand_batch(x, level, size)
    if not rows:
        values = values.reshape(size, -1)
    out = aten.searchsorted.Tensor(
        _expand_batch(seq, level, size), values, **flags,
        sorter=None if sorter is None else _expand_batch(sorter, level, size))
    return _wrap(out.reshape(size, *x.shape), level)


_INTERPOLATIONS = ('linear', 'lower', 'higher', 'midpoint', 'nearest')


def _quantile_rule(func, level, args, kwargs):
    """quantile / nanquantile of each sample's dim (or of the whole sample, flattened). A
    shared q: the op itself, the batch dim riding along. A batched q (each sample its own
    quantiles, which the op cannot take): sorted rows, q's ranks, gather and lerp, the
    kernel's arithmetic (ranks q * (n - 1) in the input's dtype, n counting non-NaN values
    for nanquantile; a quantile row with a NaN is NaN)."""
    nan = func is aten.nanquantile.default
    x, q = _get(func, args, kwargs, 'self'), _get(func, args, kwargs, 'q')
    dim, keepdim = _get(func, args, kwargs, 'dim'), _get(func, args, kwargs, 'keepdim')
    how = _get(func, args, kwargs, 'interpolation') or 'linear'
    r = max(x.dim(), 1)
    q_shape = tuple(q.shape) if isinstance(q, Tensor) else ()  # (a number: a shared 0-dim q)
    if isinstance(q, Tensor) and (q.dim() > 1 or q.dtype != x.dtype) or x.numel() == 0 or \
            x.dtype not in (_C.float32, _C.float64) or how not in _INTERPOLATIONS or \
            dim is not None and not -r <= dim < r:
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    size = _batch_size(args, kwargs, level)
    # the per-sample result: q's dim, then the reduced dims (or size-1 dims with keepdim)
    if dim is None:
        kept = [1] * x.dim() if keepdim else []
    else:
        kept = [1 if i == dim % r else n for i, n in enumerate(x.shape)
                if keepdim or i != dim % r]
    rows = _expand_batch(x, level, size).reshape(size, -1) if dim is None else \
        _expand_batch(x, level, size).reshape(size, *x.shape or (1,))
    d = 1 if dim is None else dim % r + 1
    qv = _unwrap(q, level)
    if qv is None:
        out = func(rows, q, d, False, interpolation=how)
        if q_shape:  # the op puts q's dim first
            out = out.movedim(1, 0)
        return _wrap(out.reshape(size, *q_shape, *kept), level)
    if isinstance(qv, BatchedTensor):  # an outer vmap's q: its values cannot be checked here
        return loop_fallback(func, level, args, kwargs)
    if not bool(((qv >= 0) & (qv <= 1)).all()):
        raise RuntimeError(f'{"nanquantile" if nan else "quantile"}() q values must be in the '
                           f'range [0, 1]')
    srt = rows.sort(d)[0].movedim(d, -1)  # (size, *rest, n), NaNs last
    qq = qv.reshape(size, *[1] * (srt.dim() - 2), -1)
    if nan:
        ranks = (qq * ((~srt.isnan()).sum(-1, keepdim=True) - 1)).clamp(min=0)
    else:
        last = srt.shape[-1] - 1
        ranks = aten.where.self(srt.isnan().any(-1, keepdim=True), qq.new_full((), last),
                                qq * last)
    shape = (*srt.shape[:-1], qq.shape[-1])
    ranks = ranks.expand(shape)
    if how in ('lower', 'higher', 'nearest'):
        pick = ranks.floor() if how == 'lower' else ranks.ceil() if how == 'higher' else \
            ranks.round()
        out = srt.gather(-1, pick.long())
    else:
        below = ranks.floor()
        lo, hi = srt.gather(-1, below.long()), srt.gather(-1, ranks.ceil().long())
        w = ranks - below if how == 'linear' else ranks.new_full((), 0.5)
        # the kernel's lerp, exact at both ends (tp.lerp may fuse its multiply-add)
        out = aten.where.self(w < 0.5, lo + w * (hi - lo), hi - (hi - lo) * (1 - w))
    out = out.movedim(-1, 1) if q.dim() else out.squeeze(-1)
    return _wrap(out.reshape(size, *q.shape, *kept), level)


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
        **{n: _inplace_view_rule(f) for n, f in _INPLACE_VIEW_RULES.items()},
        'fliplr.default': _flip_side_rule(1), 'flipud.default': _flip_side_rule(0),
        'roll.default': _roll_rule, 'tile.default': _tile_rule, 'msort.default': _msort_rule,
        'view_as_real.default': _complex_view_rule, 'view_as_complex.default': _complex_view_rule,
        '_conj.default': _complex_view_rule, '_neg_view.default': _complex_view_rule,
        **{n: _diag_rule for n in ('diag.default', 'diagflat.default', 'trace.default')},
        # reductions of a whole sample
        'max.default': _flat_rule(lambda f, d: f.amax(d)),
        'min.default': _flat_rule(lambda f, d: f.amin(d)),
        'median.default': _flat_rule(lambda f, d: f.median(d)[0]),
        'nanmedian.default': _flat_rule(lambda f, d: f.nanmedian(d)[0]),
        # last-two-dims ops that batch themselves
        **{n: _matrix_rule for n in (
            'tril.default', 'triu.default', 'linalg_det.default', 'det.default',
            'linalg_slogdet.default', 'slogdet.default', 'logdet.default',
            'linalg_inv_ex.default', 'linalg_inv.default', 'inverse.default',
            'linalg_cholesky_ex.default', 'linalg_cholesky.default', 'cholesky.default',
            'linalg_qr.default', 'linalg_svd.default', 'linalg_svdvals.default',
            'linalg_eigh.default', 'linalg_eigvalsh.default', 'linalg_eig.default',
            'linalg_eigvals.default', 'linalg_matrix_exp.default',
            'matrix_exp.default', 'linalg_matrix_power.default', 'matrix_power.default',
            'linalg_lu_factor_ex.default', 'linalg_lu_factor.default', 'linalg_lu.default',
            'linalg_ldl_factor_ex.default', 'linalg_ldl_factor.default')},
        # matmul family
        'matmul.default': matmul_rule, 'mm.default': _ranks_rule((2, 2)),
        'bmm.default': _ranks_rule((3, 3)), 'mv.default': _ranks_rule((2, 1)),
        'dot.default': _ranks_rule((1, 1)), 'vdot.default': _ranks_rule((1, 1)),
        **{f'{n}.default': _addmm_rule(n) for n in ('addmm', 'addmv', 'baddbmm', 'addbmm')},
        'einsum.default': _einsum_rule,
        # indexing
        'gather.default': _gather_scatter_rule(('self', 'index')),
        'scatter.src': _gather_scatter_rule(('self', 'index', 'src')),
        'scatter.value': _gather_scatter_rule(('self', 'index')),
        'scatter_add.default': _gather_scatter_rule(('self', 'index', 'src')),
        'scatter_reduce.two': _gather_scatter_rule(('self', 'index', 'src')),
        '_softmax_backward_data.default': _gather_scatter_rule(('grad_output', 'output')),
        **{n: _index_dim_rule for n in ('index_select.default', 'index_add.default',
                                        'index_copy.default', 'index_fill.int_Tensor',
                                        'index_reduce.default')},
        'take.default': _take_rule, 'put.default': _put_rule,
        'take_along_dim.default': _take_along_dim_rule, 'index_put.hacked_twin': _index_put_rule,
        'masked_fill.Tensor': _masked_fill_rule, 'masked_scatter.default': _masked_scatter_rule,
        # losses
        '_cross_entropy_rows.default': _cross_entropy_rows_rule,
        '_cross_entropy_rows_backward.default': _cross_entropy_rows_backward_rule,
        # factories shaped like their input
        **{n: _like_rule for n in ('zeros_like.default', 'ones_like.default',
                                   'full_like.default', 'empty_like.default')},
        'cat.default': _stack_cat_rule, 'concat.default': _stack_cat_rule,
        'concatenate.default': _stack_cat_rule, 'stack.default': _stack_cat_rule,
        '_local_scalar_dense.default': _data_rule,
        # sorted data
        'searchsorted.Tensor': _searchsorted_rule, 'bucketize.Tensor': _searchsorted_rule,
        'quantile.default': _quantile_rule, 'nanquantile.default': _quantile_rule,
    }
    for qualname, rule in table.items():
        h = _handle(qualname)
        if h is not None:
            _RULES[h] = rule
    _CATEGORY_RULES.append((lambda f: Tag.pointwise in f.tags and Tag.out not in f.tags,
                            pointwise_rule))


_register()
