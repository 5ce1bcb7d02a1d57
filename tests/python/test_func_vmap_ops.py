"""vmap over every op in the op database: the op mapped over a batch of three samples must
equal the op applied to each sample, for in_dims 0 (every tensor argument batched) and for
a non-zero batch dim on the first tensor argument alone (the others shared).

Each op contributes its first few float samples (float32 where the op takes it); the three
samples of a batch are one sample's tensors with their floating values scaled by factors
near 1 (domains such as [-1, 1] stay valid) and the other values kept (indices stay
valid). Random ops are left to test_func.py (their samples differ by design). An op that
takes the loop fallback instead of a batching rule fails unless LOOP_ALLOWED names it.
"""
import math

import numpy as np
import pytest

import tensorplay as tp
import tensorplay_opdb as opdb
from tensorplay.func import _vmap
from tensorplay.func._vmap import same_type

SAMPLES_PER_OP = 3
RANDOM_OPS = {'rand', 'randn', 'randint', 'randperm', 'rand_like', 'randn_like', 'randint_like',
              'normal', 'bernoulli', 'multinomial', 'poisson', 'dropout', 'uniform_', 'normal_',
              'exponential_', 'geometric_', 'log_normal_', 'cauchy_', 'random_', 'bernoulli_',
              'nn.functional.dropout', 'nn.functional.dropout1d', 'nn.functional.dropout2d',
              'nn.functional.dropout3d', 'nn.functional.alpha_dropout',
              'nn.functional.feature_alpha_dropout', 'nn.functional.rrelu', 'native_dropout'}
# reads storage directly: stacking the samples changes their storage layout, so a batch's
# as_strided cannot mean each sample's (slicing, which also lowers to as_strided, works:
# it computes the geometry from the batch's own strides)
LAYOUT_DEPENDENT = {'as_strided'}
# Ops that may still take the loop fallback, and why; any other op looping fails its test
# (so this list only shrinks: each rule written removes its entry)
LOOP_ALLOWED = {
    # each bin's edges come from the sample's own min and max: exact counts need the kernel's
    # binning arithmetic per sample
    'histc.default': "bins from each sample's data range",
    # the output length is the sum of the (batched) repeats: data-dependent shape per sample
    'repeat_interleave.self_Tensor': 'output length depends on the repeats values',
}
DYNAMIC = 'We do not support batching operators that can output dynamic shape'
# PyTorch's error for batch norm in training with batched input and shared running stats
# (an in-place update of unbatched tensors with per-sample values)
RUNNING_STATS = 'Batch norm got a batched tensor as input while the running_mean'

def _dtype(op):
    for d in ('float32', 'float64', 'int64', 'bool'):
        if d in op.dtypes:
            return d
    return op.dtypes[0]


def _has_tensor_sample(op):
    """Whether some sample takes a tensor (creation ops such as zeros take none)."""
    return any(opdb.is_tensor(v) or isinstance(v, np.ndarray)
               for s in op.sample_inputs(_dtype(op))
               for v in (*s.args, *s.kwargs.values(), *[x for a in s.args
                                                        if isinstance(a, (list, tuple)) for x in a]))


OPS = [op for op in opdb.op_db
       if op.name not in RANDOM_OPS | LAYOUT_DEPENDENT and 'rand' not in op.name
       and _has_tensor_sample(op)]


def _tensors(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
    elif isinstance(value, tp.Tensor):
        out.append(value)
    return out


def _replace(value, table):
    if isinstance(value, (list, tuple)):
        return type(value)(_replace(v, table) for v in value)
    if isinstance(value, tp.Tensor) and id(value) in table:
        return table[id(value)]
    return value


def _variants(args, kwargs, rng, n=3):
    """n copies of (args, kwargs) whose floating tensors are scaled by factors near 1."""
    leaves = _tensors([args, list(kwargs.values())], [])
    out = []
    for i in range(n):
        table = {}
        for t in leaves:
            if t.is_floating_point() and i > 0:
                f = rng.uniform(0.9, 1.0, size=tuple(t.shape)).astype('float64')
                table[id(t)] = (t.double() * tp.tensor(f)).to(t.dtype) if t.numel() else t.clone()
            else:
                table[id(t)] = t.clone()
        out.append((_replace(args, table), {k: _replace(v, table) for k, v in kwargs.items()}))
    return out


def _stack(items, dim):
    if isinstance(items[0], tp.Tensor):
        return tp.stack(items, dim)
    if isinstance(items[0], (list, tuple)):
        dims = dim if isinstance(dim, (list, tuple)) else [dim] * len(items[0])
        return same_type(items[0], [items[0][i] if d is None else _stack([it[i] for it in items], d)
                                    for i, d in enumerate(dims)])
    return items[0]


def _in_dims(value, first_only, state):
    """The in_dims tree of a value: tensors mapped (at dim 0, or the first tensor alone at
    its last dim), everything else None."""
    if isinstance(value, (list, tuple)):
        return type(value)(_in_dims(v, first_only, state) for v in value)
    if isinstance(value, tp.Tensor):
        if not first_only:
            return 0
        if state['seen']:
            return None
        state['seen'] = True
        return value.dim()  # after stacking: the new last dim, a non-zero batch dim
    return None


def _close(got, want, ctx, values=True):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), ctx
        for g, w in zip(got, want):
            _close(g, w, ctx, values)
        return
    if not isinstance(want, tp.Tensor):
        assert got == want, ctx
        return
    assert tuple(got.shape) == tuple(want.shape), f'{ctx}: shape {tuple(got.shape)} != {tuple(want.shape)}'
    assert got.dtype == want.dtype, f'{ctx}: dtype {got.dtype} != {want.dtype}'
    if got.numel() and values:
        g = np.asarray(got.double().numpy() if got.dtype != tp.bool else got.numpy())
        w = np.asarray(want.double().numpy() if want.dtype != tp.bool else want.numpy())
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True, err_msg=ctx)


def _check(op, args, kwargs, first_only, rng):
    variants = _variants(args, kwargs, rng)
    try:
        wants = [op.call(op.primary_form, tp, a, k) for a, k in variants]
    except Exception:  # noqa: BLE001 - samples the op rejects test errors, not vmap
        return 'rejected'
    if first_only:
        state = {'seen': False}
        dims = _in_dims(list(args), True, state)
        batched = [variants[0][0][i] if d is None else _stack([v[0][i] for v in variants], d)
                   for i, d in enumerate(dims)]
        if not state['seen']:
            return 'no tensor'
        shared_k = variants[0][1]
        try:  # per sample, the shared arguments are sample 0's
            wants = [op.call(op.primary_form, tp,
                             tuple(_pick(a, d, j) for a, d in zip(batched, dims)), shared_k)
                     for j in range(3)]
        except Exception:  # noqa: BLE001 - e.g. an op taking contiguous inputs only
            return 'rejected'
        in_dims = tuple(dims)
        fn = lambda *a: op.call(op.primary_form, tp, a, shared_k)  # noqa: E731
        return _run(fn, in_dims, batched, wants, op, first_only)
    else:
        if not _tensors([args, list(kwargs.values())], []):
            return 'no tensor'
        names = list(kwargs)
        flat = list(args) + [kwargs[n] for n in names]
        rows = [list(a) + [k[n] for n in names] for a, k in variants]
        batched = [_stack([row[j] for row in rows], 0) for j in range(len(flat))]
        in_dims = tuple(_in_dims(v, False, None) for v in flat)
        nargs = len(args)

        def fn(*a):
            return op.call(op.primary_form, tp, a[:nargs], dict(zip(names, a[nargs:])))
        return _run(fn, in_dims, batched, wants, op, first_only)


def _run(fn, in_dims, batched, wants, op, first_only):
    if isinstance(wants[0], bool):  # a Python bool per sample: data-dependent, as in PyTorch
        with pytest.raises(RuntimeError, match='data-dependent control flow'):
            tp.func.vmap(fn, in_dims=in_dims)(*batched)
        return 'data-dependent'
    got = tp.func.vmap(fn, in_dims=in_dims)(*batched)
    _close(got, _stack(list(wants), 0), f'{op.name} first_only={first_only}', op.compare_values)
    return 'ok'


def _pick(value, dim, j):
    if isinstance(dim, (list, tuple)):
        return type(value)(_pick(v, d, j) for v, d in zip(value, dim))
    if dim is None:
        return value
    return value.select(dim, j)


@pytest.mark.parametrize('op', OPS, ids=lambda op: op.name)
def test_vmap_matches_per_sample(op):
    log = _vmap._loop_log[0] = []
    try:
        _check_op(op)
    finally:
        _vmap._loop_log[0] = None
    looped = {str(f).removeprefix('aten.') for f in log}
    assert looped <= set(LOOP_ALLOWED), f'took the loop fallback: {sorted(looped - set(LOOP_ALLOWED))}'


def _check_op(op):
    rng = np.random.default_rng(0)
    outcomes = []
    taken = 0
    for sample in op.sample_inputs(_dtype(op)):
        if taken >= SAMPLES_PER_OP:
            break
        args, kwargs = opdb.materialize(sample, tp)
        if not _tensors([args, list(kwargs.values())], []):
            continue
        taken += 1
        for first_only in (False, True):
            try:
                outcomes.append(_check(op, args, kwargs, first_only, rng))
            except RuntimeError as e:
                if DYNAMIC in str(e):
                    outcomes.append('dynamic')
                elif RUNNING_STATS in str(e) and op.name == 'batch_norm' and first_only:
                    outcomes.append('running stats')
                else:
                    raise
    assert taken, 'no sample with a tensor argument'
    assert {'ok', 'dynamic', 'data-dependent'} & set(outcomes), outcomes


# Ops whose rules treat batched and shared arguments differently (products, solvers,
# searches, quantiles, bags): every mix of batched and shared tensor arguments, each batched
# one mapped over its own dim, must equal the per-sample results, without the loop.
MIXED = {'addmm', 'addmv', 'baddbmm', 'addbmm', 'matmul', 'dot', 'vdot', 'inner', 'tensordot',
         'einsum', 'cross', 'bucketize', 'searchsorted', 'quantile', 'nanquantile',
         'embedding_bag', 'linalg.solve', 'linalg.lstsq', 'linalg.pinv', 'linalg.matrix_rank',
         'linalg.solve_ex', 'linalg.lu_solve', 'lu_solve', 'linalg.ldl_solve', 'triangular_solve',
         'lu_unpack', 'ormqr', 'orgqr'}
MIXED_SAMPLES = 32


def _check_mix(op, args, kwargs, mask, rng):
    variants = _variants(args, kwargs, rng)
    base_args, base_kwargs = variants[0]
    shared = _tensors([base_args, list(base_kwargs.values())], [])
    own = [_tensors([a, list(k.values())], []) for a, k in variants]
    batched = [bool(mask >> j & 1) for j in range(len(shared))]

    def call(leaves):
        table = {id(t): v for t, v in zip(shared, leaves)}
        return op.call(op.primary_form, tp, _replace(base_args, table),
                       {k: _replace(v, table) for k, v in base_kwargs.items()})
    dims = [(j + mask) % (t.dim() + 1) if b else None
            for j, (t, b) in enumerate(zip(shared, batched))]
    inputs = [t if d is None else tp.stack([o[j] for o in own], d)
              for j, (t, d) in enumerate(zip(shared, dims))]
    try:  # each sample as vmap sees it: a view of the input (its strides are the input's)
        wants = [call([t if d is None else t.select(d, i) for t, d in zip(inputs, dims)])
                 for i in range(len(own))]
    except Exception:  # noqa: BLE001 - samples the op rejects test errors, not vmap
        return 'rejected'
    got = tp.func.vmap(lambda *leaves: call(leaves), in_dims=tuple(dims))(*inputs)
    _close(got, _stack(list(wants), 0), f'{op.name} batched={batched} dims={dims}',
           op.compare_values)
    return 'ok'


@pytest.mark.parametrize('op', [op for op in OPS if op.name in MIXED], ids=lambda op: op.name)
def test_vmap_mixes_batched_and_shared_arguments(op):
    rng = np.random.default_rng(1)
    log = _vmap._loop_log[0] = []
    outcomes = []
    try:
        samples = [s for s in op.sample_inputs(_dtype(op))]
        for sample in samples[:MIXED_SAMPLES]:
            args, kwargs = opdb.materialize(sample, tp)
            n = len(_tensors([args, list(kwargs.values())], []))
            for mask in range(1, 2 ** n):
                outcomes.append(_check_mix(op, args, kwargs, mask, rng))
    finally:
        _vmap._loop_log[0] = None
    looped = {str(f).removeprefix('aten.') for f in log}
    assert looped <= set(LOOP_ALLOWED), f'took the loop fallback: {sorted(looped - set(LOOP_ALLOWED))}'
    assert 'ok' in outcomes, outcomes


# Rules that read an argument's values (to raise the op's error for a bad sample) take the
# loop where those values are an outer vmap's batch, which cannot be read
NESTED_MAY_LOOP = {'quantile.default', 'nanquantile.default',
                   '_embedding_bag_forward_only.default'}


def _check_nested(op, args, kwargs, outer, inner, rng):
    """vmap(vmap(f)), the outer level mapping the arguments in ``outer`` (2 samples), the
    inner those in ``inner`` (3): each of the 2 x 3 results must be the op's on its pieces."""
    variants = _variants(args, kwargs, rng, n=6)  # sample (i, j) is variant 3 * i + j
    base_args, base_kwargs = variants[0]
    shared = _tensors([base_args, list(base_kwargs.values())], [])
    own = [_tensors([a, list(k.values())], []) for a, k in variants]

    def piece(n, i, j):
        return own[3 * (i if outer[n] else 0) + (j if inner[n] else 0)][n]

    def call(leaves):
        table = {id(t): v for t, v in zip(shared, leaves)}
        return op.call(op.primary_form, tp, _replace(base_args, table),
                       {k: _replace(v, table) for k, v in base_kwargs.items()})
    try:
        wants = [[call([piece(n, i, j) for n in range(len(shared))]) for j in range(3)]
                 for i in range(2)]
    except Exception:  # noqa: BLE001 - samples the op rejects test errors, not vmap
        return 'rejected'
    inputs = []
    for n in range(len(shared)):
        rows = [tp.stack([piece(n, i, j) for j in range(3)]) if inner[n] else piece(n, i, 0)
                for i in range(2)]
        inputs.append(tp.stack(rows) if outer[n] else rows[0])
    f = tp.func.vmap(tp.func.vmap(lambda *leaves: call(leaves),
                                  in_dims=tuple(0 if b else None for b in inner)),
                     in_dims=tuple(0 if b else None for b in outer))
    _close(f(*inputs), _stack([_stack(list(w), 0) for w in wants], 0),
           f'{op.name} outer={outer} inner={inner}', op.compare_values)
    return 'ok'


@pytest.mark.parametrize('op', [op for op in OPS if op.name in MIXED], ids=lambda op: op.name)
def test_nested_vmap_mixes(op):
    rng = np.random.default_rng(2)
    log = _vmap._loop_log[0] = []
    outcomes = []
    try:
        for sample in list(op.sample_inputs(_dtype(op)))[:MIXED_SAMPLES]:
            args, kwargs = opdb.materialize(sample, tp)
            n = len(_tensors([args, list(kwargs.values())], []))
            for _ in range(3):
                outer, inner = ([bool(b) for b in rng.integers(0, 2, n)] for _ in range(2))
                if any(outer) and any(inner):
                    outcomes.append(_check_nested(op, args, kwargs, outer, inner, rng))
    finally:
        _vmap._loop_log[0] = None
    looped = {str(f).removeprefix('aten.') for f in log}
    assert looped <= set(LOOP_ALLOWED) | NESTED_MAY_LOOP, f'took the loop fallback: {sorted(looped)}'
    assert 'ok' in outcomes, outcomes
