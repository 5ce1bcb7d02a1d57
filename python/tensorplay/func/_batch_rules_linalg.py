"""vmap batching rules of the products and solvers beyond matmul: inner, tensordot, cross,
linalg.solve(_ex), linalg.lstsq, linalg.pinv, linalg.matrix_rank, lu_unpack, linalg.lu_solve,
linalg.ldl_solve and triangular_solve (Note [vmap as a wrapper
subclass]; the rule signature and helpers are _batch_rules.py's).

Batch-transparent linalg ops broadcast their leading (batch) dims, so the vmap batch can
be one more of them: batched operands get size-1 dims after the batch dim up to the
per-sample batch rank (their logical batch dims line up, as in matmul's rule) and shared
ones broadcast as they are. What decides an op's meaning from a rank (solve's vector
right-hand side) is decided on the per-sample shapes, never on the values'.
"""
import math

from tensorplay import _C
from tensorplay._ops import ops

from ._batch_rules import (_get, _handle, _operand, _pad, _set, _wrap_all, batched_matmul,
                           pointwise_rule)
from ._vmap import _RULES, _batch_size, _unwrap, _wrap, loop_fallback, same_type

Tensor = _C.Tensor
aten = ops.aten


def _broadcastable(*shapes):
    """Whether the shapes broadcast together (aligned at their ends)."""
    for sizes in zip(*[reversed(tuple(s)) for s in shapes]):
        if len({n for n in sizes if n != 1}) > 1:
            return False
    return True


# ---------------------------------------------------------------------------- products
def _inner_rule(func, level, args, kwargs):
    """inner contracts the last dims and keeps every other: a batched operand's batch dim is
    one more kept dim (first of self's, or moved to the front from among other's); both
    batched, each sample's rows times the other's rows is one batched matrix product. A
    0-dim operand makes inner a product (the pointwise rule's promotion rules)."""
    x, y = args
    if kwargs or x.dtype != y.dtype or (x.dim() and y.dim() and x.shape[-1] != y.shape[-1]):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    if x.dim() == 0 or y.dim() == 0:
        return pointwise_rule(aten.mul.Tensor, level, (x, y), {})
    (xv, xb), (yv, yb) = _operand(x, level), _operand(y, level)
    if not yb:
        return _wrap(func(xv, y), level)
    if not xb:
        return _wrap(func(x, yv).movedim(x.dim() - 1, 0), level)
    size, k = xv.shape[0], x.shape[-1]
    rows_x, rows_y = math.prod(x.shape[:-1]), math.prod(y.shape[:-1])
    out = batched_matmul(xv.reshape(size, rows_x, k), True,
                         yv.reshape(size, rows_y, k).transpose(1, 2), True)
    return _wrap(out.reshape(size, *x.shape[:-1], *y.shape[:-1]), level)


def _tensordot_rule(func, level, args, kwargs):
    """tensordot: only self batched, its batch dim is its first free dim, which leads the
    result; only other batched, the result's batch dim (after self's free dims) moves to the
    front; both batched, each sample's (free x contracted) times (contracted x free) matrices
    are one batched matrix product, as tensordot computes one sample."""
    x, y = _get(func, args, kwargs, 'self'), _get(func, args, kwargs, 'other')
    dx = list(_get(func, args, kwargs, 'dims_self'))
    dy = list(_get(func, args, kwargs, 'dims_other'))
    rx, ry = x.dim(), y.dim()
    if x.dtype != y.dtype or len(dx) != len(dy) or not all(-rx <= d < rx for d in dx) or \
            not all(-ry <= d < ry for d in dy):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    dx, dy = [d % rx for d in dx], [d % ry for d in dy]
    if len(set(dx)) != len(dx) or len(set(dy)) != len(dy) or \
            any(x.shape[a] != y.shape[b] for a, b in zip(dx, dy)):
        return loop_fallback(func, level, args, kwargs)
    (xv, xb), (yv, yb) = _operand(x, level), _operand(y, level)
    free_x = [d for d in range(rx) if d not in dx]
    free_y = [d for d in range(ry) if d not in dy]
    if not yb:
        return _wrap(func(xv, y, [d + 1 for d in dx], dy), level)
    if not xb:
        return _wrap(func(x, yv, dx, [d + 1 for d in dy]).movedim(len(free_x), 0), level)
    size = xv.shape[0]
    sizes_x, sizes_y = [x.shape[d] for d in free_x], [y.shape[d] for d in free_y]
    k = math.prod(x.shape[d] for d in dx)
    a = xv.permute([0] + [d + 1 for d in free_x + dx]).reshape(size, math.prod(sizes_x), k)
    b = yv.permute([0] + [d + 1 for d in dy + free_y]).reshape(size, k, math.prod(sizes_y))
    return _wrap(batched_matmul(a, True, b, True).reshape(size, *sizes_x, *sizes_y), level)


def _cross_rule(func, level, args, kwargs):
    """cross / linalg_cross need operands of one rank: a shared one gets a size-1 batch dim,
    and dim shifts past the batch. cross's missing dim is PyTorch's: self's first dim of
    size 3."""
    x, y = args[0], args[1]
    dim = _get(func, args, kwargs, 'dim')
    r = x.dim()
    if dim is None:
        dim = next((d for d in range(r) if x.shape[d] == 3), None)
    if y.dim() != r or dim is None or not -r <= dim < r or x.dtype != y.dtype or \
            x.shape[dim] != 3 or y.shape[dim] != 3 or not _broadcastable(x.shape, y.shape):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    (xv, xb), (yv, yb) = _operand(x, level), _operand(y, level)
    xv, yv = xv if xb else x.unsqueeze(0), yv if yb else y.unsqueeze(0)
    args, kwargs = [xv, yv, *args[2:]], dict(kwargs)
    _set(func, args, kwargs, 'dim', dim % r + 1)
    return _wrap(func(*args, **kwargs), level)


# ----------------------------------------------------------------------------- solvers
def _lead(v, batched, ldim, rank):
    """An operand of logical rank ``ldim`` ready to broadcast as a batch of rank ``rank``:
    a batch padded after its batch dim, a shared tensor given leading size-1 dims (so the
    values' ranks are the per-sample ranks plus one, whatever is batched)."""
    if batched:
        return _pad(v, ldim, rank)
    return v.reshape((1,) * (rank - ldim + 1) + tuple(v.shape))


def _solve_rule(func, level, args, kwargs):
    """linalg_solve: PyTorch treats B as a vector when it is 1-D or has A's shape without
    its last dim; decided per sample (a batched B's extra dim would change the answer), the
    vector becomes a column. Then A and B get one rank, so the values never look like the
    vector case."""
    A, B = _get(func, args, kwargs, 'A'), _get(func, args, kwargs, 'B')
    left = _get(func, args, kwargs, 'left')
    left = True if left is None else left
    if A.dim() < 2 or B.dim() < 1 or A.shape[-1] != A.shape[-2] or A.dtype != B.dtype:
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    shape_b = tuple(B.shape) + (1,) if vector else tuple(B.shape)
    n = shape_b[-2] if left else shape_b[-1]
    if (vector and not left) or n != A.shape[-1] or \
            not _broadcastable(A.shape[:-2], shape_b[:-2]):
        return loop_fallback(func, level, args, kwargs)
    (av, ab), (bv, bb) = _operand(A, level), _operand(B, level)
    if vector:
        bv = bv.unsqueeze(-1)
    rank = max(A.dim(), len(shape_b))
    out = func(_lead(av, ab, A.dim(), rank), _lead(bv, bb, len(shape_b), rank), left=left)
    return _wrap(out.squeeze(-1) if vector else out, level)


def _each_sample(t, size):
    """A result of lstsq for every sample: PyTorch's empty placeholder ``(0,)`` (an output
    the driver does not compute) as each sample's own; a result of a shared A (batch dim 1)
    copied to every sample."""
    if t.dim() == 1 and t.shape[0] == 0 and size != 0:
        return t.new_empty((size, 0))
    if t.shape[0] != size:
        return t.expand(size, *t.shape[1:]).clone()
    return t


def _lstsq_rule(func, level, args, kwargs):
    """linalg_lstsq: B is a vector by solve's rule (made a column here); as a matrix it has
    A's rank, so a shared operand's size-1 batch dim is all either needs (A's batch dims
    shape the rank and singular values). Results the driver leaves empty stay empty per
    sample; those of a shared A, computed once, are every sample's."""
    A, B = _get(func, args, kwargs, 'A'), _get(func, args, kwargs, 'B')
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    shape_b = tuple(B.shape) + (1,) if vector else tuple(B.shape)
    if A.dim() < 2 or A.dim() - B.dim() not in (0, 1) or len(shape_b) != A.dim() or \
            A.dtype != B.dtype or shape_b[-2] != A.shape[-2] or \
            not _broadcastable(A.shape[:-2], shape_b[:-2]):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    size = _batch_size(args, kwargs, level)
    (av, ab), (bv, bb) = _operand(A, level), _operand(B, level)
    if vector:
        bv = bv.unsqueeze(-1)
    args, kwargs = list(args), dict(kwargs)
    _set(func, args, kwargs, 'A', av if ab else av.unsqueeze(0))
    _set(func, args, kwargs, 'B', bv if bb else bv.unsqueeze(0))
    result = func(*args, **kwargs)
    out = [_each_sample(t, size) for t in result]
    if vector:
        out[0] = out[0].squeeze(-1)
    return _wrap_all(same_type(result, out), level)


def _tolerance_rule(func, level, args, kwargs):
    """linalg_pinv / linalg_matrix_rank: A's batch dims and the atol / rtol tensors broadcast
    together, so each gets the batch dims of the widest (batched ones padded after their
    batch dim; shared ones broadcast from the left as they are)."""
    A = _get(func, args, kwargs, 'A')
    tols = [n for n in ('atol', 'rtol') if isinstance(_get(func, args, kwargs, n), Tensor)]
    if A.dim() < 2 or not _broadcastable(A.shape[:-2], *[_get(func, args, kwargs, n).shape
                                                         for n in tols]):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    rank = max([A.dim() - 2] + [_get(func, args, kwargs, n).dim() for n in tols])
    args, kwargs = list(args), dict(kwargs)
    av = _unwrap(A, level)
    if av is not None:
        _set(func, args, kwargs, 'A', _pad(av, A.dim(), rank + 2))
    for n in tols:
        t = _get(func, args, kwargs, n)
        v = _unwrap(t, level)
        if v is not None:
            _set(func, args, kwargs, n, _pad(v, t.dim(), rank))
    return _wrap(func(*args, **kwargs), level)


# --------------------------------------------------------------------- LU and LDL families
def _factors_rule(func, level, args, kwargs):
    """lu_unpack(LU, pivots): pivots hold LU's shape minus its last dim, so a shared LU is
    expanded over the batch of batched pivots; shared pivots broadcast as they are. The empty
    placeholders of what is not unpacked are each sample's own."""
    LU, piv = _get(func, args, kwargs, 'LU_data'), _get(func, args, kwargs, 'LU_pivots')
    if LU.dim() < 2 or piv.dim() < 1:
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    (lv, lb), (pv, pb) = _operand(LU, level), _operand(piv, level)
    if not lb:
        lv = LU.expand(pv.shape[0], *LU.shape)
    if pb:  # the sample's pivots line up with the sample's batch dims, after the vmap dim
        pv = _pad(pv, piv.dim(), LU.dim() - 1)
    if not _broadcastable(pv.shape[:-1], lv.shape[:-2]) or pv.dim() - 1 > lv.dim() - 2:
        return loop_fallback(func, level, args, kwargs)
    args, kwargs = list(args), dict(kwargs)
    _set(func, args, kwargs, 'LU_data', lv)
    _set(func, args, kwargs, 'LU_pivots', pv)
    result = func(*args, **kwargs)  # unpacked nothing: each sample's (0,) placeholder
    return _wrap_all(same_type(result, [_each_sample(t, lv.shape[0]) for t in result]), level)


def _factored_solve_rule(names):
    """linalg_lu_solve / linalg_ldl_solve (factors, pivots, B): the factors and their pivots
    share one batch (a shared one is broadcast to the other's), which broadcasts with B's as
    in solve's rule."""
    fac_name, piv_name, b_name = names

    def rule(func, level, args, kwargs):
        F, piv, B = (_get(func, args, kwargs, n) for n in names)
        if F.dim() < 2 or B.dim() < 2 or piv.dim() != F.dim() - 1 or \
                tuple(piv.shape) != tuple(F.shape[:-1]) or F.shape[-1] != F.shape[-2] or \
                F.dtype != B.dtype or not _broadcastable(F.shape[:-2], B.shape[:-2]):
            return loop_fallback(func, level, args, kwargs)  # the op's own error
        (fv, fb), (pv, pb), (bv, bb) = (_operand(t, level) for t in (F, piv, B))
        rank = max(F.dim(), B.dim())
        fv, pv = _lead(fv, fb, F.dim(), rank), _lead(pv, pb, piv.dim(), rank - 1)
        bv = _lead(bv, bb, B.dim(), rank)
        batch = list(fv.shape[:-2])
        for i, s in enumerate(pv.shape[:-1]):
            batch[i] = max(batch[i], s)
        n = F.shape[-1]
        args, kwargs = list(args), dict(kwargs)
        _set(func, args, kwargs, fac_name, fv.expand(*batch, n, n))
        _set(func, args, kwargs, piv_name, pv.expand(*batch, n))
        _set(func, args, kwargs, b_name, bv)
        return _wrap(func(*args, **kwargs), level)
    return rule


def _solve_ex_rule(func, level, args, kwargs):
    """linalg_solve_ex: the solution as in solve's rule; info has A's batch only, so that of
    a shared A (computed once) is every sample's."""
    A, B = _get(func, args, kwargs, 'A'), _get(func, args, kwargs, 'B')
    left = _get(func, args, kwargs, 'left')
    left = True if left is None else left
    if A.dim() < 2 or B.dim() < 1 or A.shape[-1] != A.shape[-2] or A.dtype != B.dtype:
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    shape_b = tuple(B.shape) + (1,) if vector else tuple(B.shape)
    n = shape_b[-2] if left else shape_b[-1]
    if (vector and not left) or n != A.shape[-1] or \
            not _broadcastable(A.shape[:-2], shape_b[:-2]):
        return loop_fallback(func, level, args, kwargs)
    size = _batch_size(args, kwargs, level)
    (av, ab), (bv, bb) = _operand(A, level), _operand(B, level)
    if vector:
        bv = bv.unsqueeze(-1)
    rank = max(A.dim(), len(shape_b))
    args, kwargs = list(args), dict(kwargs)
    _set(func, args, kwargs, 'A', _lead(av, ab, A.dim(), rank))
    _set(func, args, kwargs, 'B', _lead(bv, bb, len(shape_b), rank))
    result = func(*args, **kwargs)
    x, info = result
    if vector:
        x = x.squeeze(-1)
    pad = rank - A.dim()  # the size-1 dims _lead put before A's batch
    if ab:
        info = info.reshape((size,) + tuple(info.shape[1 + pad:]))
    else:
        info = info.reshape(tuple(info.shape[1 + pad:])).expand(size, *info.shape[1 + pad:])
    return _wrap_all(same_type(result, [x, info]), level)


def _triangular_solve_rule(func, level, args, kwargs):
    """triangular_solve(b, A): b's and A's batches broadcast (both results have the
    broadcast batch), so each operand is padded to the common rank as in solve's rule."""
    b, A = _get(func, args, kwargs, 'self'), _get(func, args, kwargs, 'A')
    if b.dim() < 2 or A.dim() < 2 or A.shape[-1] != A.shape[-2] or b.shape[-2] != A.shape[-1] or \
            b.dtype != A.dtype or not _broadcastable(b.shape[:-2], A.shape[:-2]):
        return loop_fallback(func, level, args, kwargs)  # the op's own error
    (bv, bb), (av, ab) = _operand(b, level), _operand(A, level)
    rank = max(b.dim(), A.dim())
    args, kwargs = list(args), dict(kwargs)
    _set(func, args, kwargs, 'self', _lead(bv, bb, b.dim(), rank))
    _set(func, args, kwargs, 'A', _lead(av, ab, A.dim(), rank))
    return _wrap_all(func(*args, **kwargs), level)


def _register():
    table = {
        'inner.default': _inner_rule, 'tensordot.default': _tensordot_rule,
        'cross.default': _cross_rule, 'linalg_cross.default': _cross_rule,
        'linalg_solve.default': _solve_rule, 'linalg_lstsq.default': _lstsq_rule,
        'linalg_pinv.default': _tolerance_rule, 'linalg_matrix_rank.default': _tolerance_rule,
        'lu_unpack.default': _factors_rule,
        'linalg_lu_solve.default': _factored_solve_rule(('LU', 'pivots', 'B')),
        'linalg_ldl_solve.default': _factored_solve_rule(('LD', 'pivots', 'B')),
        'linalg_solve_ex.default': _solve_ex_rule,
        'triangular_solve.default': _triangular_solve_rule,
    }
    for qualname, rule in table.items():
        h = _handle(qualname)
        if h is not None:
            _RULES[h] = rule


_register()
