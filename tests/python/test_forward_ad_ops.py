"""Forward-mode AD of every op in the op database.

For each op and float64 sample the floating tensor inputs become dual tensors with random
tangents. The outputs' tangents must equal PyTorch's (where PyTorch has a forward formula)
and agree with tensorplay's own reverse mode: for random cotangents c,
<c, J t> = <J^T c, t>. The primal values must equal the op's plain results. In-place
forms run too (the dual is then written in place).

Samples with an empty input or a non-finite input or output only check the primal: there
the formulas' NaN conventions differ (PyTorch's forward and reverse modes disagree there
as well). Ops reading one triangle of a symmetric input get symmetric tangents, as their
gradcheck gets symmetric inputs. Half-precision outputs compare at half precision.
Entries with complex128 run their complex128 samples too (complex tangents and cotangents;
the pairing is the real inner product Re(sum(conj(a) * b)) of PyTorch's convention).
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay_opdb as opdb

from test_autograd_ops import (GAUGE_INVARIANT, OPS, SYMMETRIC_INPUT, _call, _cotangent,
                               _differentiable_samples, _leaves, _op_dtypes)


def _rebuild(value, table):
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuild(v, table) for v in value)
    if opdb.is_tensor(value) and id(value) in table:
        return table[id(value)]
    return value


def _float_outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if opdb.is_tensor(o) and (o.is_floating_point() or o.is_complex())]


def _forward(op, lib, sample, tangents, form):
    """(outputs, their tangents, the leaves) of op on duals with the given tangents."""
    fw = lib.autograd.forward_ad
    args, kwargs = opdb.materialize(sample, lib)
    leaves = _leaves(list(args) + list(kwargs.values()), [])
    if form == 'inplace':
        leaves = [t.clone() if t is args[op.self_arg] else t for t in leaves]
        args = tuple(leaves[0] if i == op.self_arg else a for i, a in enumerate(args)) \
            if leaves and opdb.is_tensor(args[op.self_arg]) and (args[op.self_arg].is_floating_point()
                                                                   or args[op.self_arg].is_complex()) else args
    with fw.dual_level():
        duals = {id(t): fw.make_dual(t, lib.from_numpy(tg.copy()))
                 for t, tg in zip(leaves, tangents)}
        d_args, d_kwargs = _rebuild(args, duals), _rebuild(kwargs, duals)
        out = op.call(form, lib, d_args, d_kwargs)
        if form == 'inplace':
            out = out[1]
        elif op.name in GAUGE_INVARIANT:  # as the reverse-mode check sees it (|V| for eig)
            out = GAUGE_INVARIANT[op.name](out)
        outs = _float_outputs(out)
        unpacked = [fw.unpack_dual(o) for o in outs]
    return [u.primal for u in unpacked], [u.tangent for u in unpacked], leaves


def _np(t):
    if t is None:
        return None
    if isinstance(t, torch.Tensor) and t._is_zerotensor():  # torch's tangent of a constant
        return np.zeros(tuple(t.shape))
    t = opdb.to_torch(t).detach()
    return np.asarray(t.to(torch.complex128) if t.is_complex() else t.double())


def _pairing(a, b):
    """The real inner product of two arrays (complex ones as pairs of reals)."""
    return float(np.real(np.sum(np.conj(a) * b)))


def _close(a, e, ctx, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=ctx)


# Ops whose PyTorch forward-mode formula disagrees with PyTorch's own reverse mode and with
# finite differences: their tangents are checked against tensorplay's reverse mode only.
# triangular_solve_jvp applies A's whole tangent (and, with transpose=True, untransposed),
# where the op reads only A's triangle (op(A)).
TORCH_TANGENT_DISAGREES = {'triangular_solve'}


def _torch_tangent_disagrees(op, sample):
    """TORCH_TANGENT_DISAGREES, and samples of such formulas: PyTorch's pow tangent keeps only
    the real part of a real tensor operand's term (t * z**e * log(z) for a real exponent,
    t * e * z**(e - 1) for a real base) of a complex power (its handle_r_to_c, meant for the
    reverse mode), where finite differences give the whole."""
    if op.name in TORCH_TANGENT_DISAGREES:
        return True
    if op.name in ('pow', 'float_power') and len(sample.args) >= 2:
        def is_complex(x):
            return isinstance(x, complex) or (opdb.is_tensor(x) and torch.as_tensor(x).is_complex())

        def real_tensor(x):
            return opdb.is_tensor(x) and not torch.as_tensor(x).is_complex()
        base, exponent = sample.args[:2]
        return (is_complex(base) and real_tensor(exponent)) or (is_complex(exponent) and real_tensor(base))
    return False


def _no_formula_yet(op, sample):
    """Forward formulas PyTorch has and tensorplay has not yet (they raise
    NotImplementedError, never a wrong tangent)."""
    return op.name == 'scatter_reduce' and sample.args[4] in ('amax', 'amin', 'prod')


def _degenerate(tensors):
    return any(t.numel() == 0 or not bool(torch.isfinite(opdb.to_torch(t).detach()).all())
               for t in tensors)


def _tolerances(tensors):
    low = any(t.dtype in (torch.float16, torch.bfloat16, tp.float16, tp.bfloat16) for t in tensors)
    return (1e-2, 1e-3) if low else (1e-6, 1e-7)


def _check_sample(op, sample, form, rng):
    t_args, t_kwargs = opdb.materialize(sample, torch)
    t_leaves = _leaves(list(t_args) + list(t_kwargs.values()), [])
    tangents = [_cotangent(rng, t) for t in t_leaves]
    if op.name in SYMMETRIC_INPUT:
        tangents = [(t + np.swapaxes(t, -1, -2).conj()) / 2 if t.ndim >= 2 else t for t in tangents]  # Hermitian
    ctx = f'{op.name} ({form}) {sample!r}'
    try:
        t_outs = _float_outputs(op.call(op.primary_form, torch, t_args, t_kwargs))
    except Exception:  # noqa: BLE001
        t_outs = []
    degenerate = _degenerate(t_leaves + t_outs)
    rtol, atol = _tolerances(t_leaves + t_outs)
    try:
        _, expected, _ = _forward(op, torch, sample, tangents, form)
        if _torch_tangent_disagrees(op, sample):
            expected = None
    except NotImplementedError:
        expected = None  # torch has no forward formula
    except Exception as e:  # noqa: BLE001 - torch refuses the sample: so must tensorplay
        if degenerate:  # torch refuses some empty duals its plain op takes (logcumsumexp)
            return False
        if op.name not in TORCH_TANGENT_DISAGREES:
            with pytest.raises(type(e)):
                _forward(op, tp, sample, tangents, form)
            return False
        # (torch's triangular_solve also gives cloned_coefficient A's tangent unbroadcast)
        expected = None
    try:
        primals, actual, _ = _forward(op, tp, sample, tangents, form)
    except NotImplementedError:
        assert expected is None or _no_formula_yet(op, sample), \
            f'{ctx}: tensorplay has no forward formula, torch has'
        return False
    if degenerate:
        return True
    if expected is not None:
        assert len(actual) == len(expected), ctx
        for i, (a, e) in enumerate(zip(actual, expected)):
            if e is None:
                assert a is None or not np.any(_np(a)), f'{ctx}: output {i} has a tangent'
                continue
            assert a is not None, f'{ctx}: output {i} has no tangent'
            _close(_np(a), _np(e), f'{ctx}: tangent of output {i}', rtol, atol)
    # Against tensorplay's reverse mode: <c, J t> == <J^T c, t>.
    args, kwargs = opdb.materialize(sample, tp)
    leaves = _leaves(list(args) + list(kwargs.values()), [])
    if form == 'inplace':
        return True  # the reverse-mode check of the function form covers the formula
    fresh = {id(t): t.detach().requires_grad_(True) for t in leaves}
    outs = _float_outputs(_call(op, tp, _rebuild(args, fresh), _rebuild(kwargs, fresh)))
    for i, (p, o) in enumerate(zip(primals, outs)):
        _close(_np(p), _np(o), f'{ctx}: primal of output {i}')
    pairs = [(o, t) for o, t in zip(outs, actual) if o.requires_grad]
    if not pairs:
        return True
    cots = [_cotangent(rng, o) for o, _ in pairs]
    try:
        grads = tp.autograd.grad([o for o, _ in pairs], list(fresh.values()),
                                 [tp.from_numpy(c.copy()) for c in cots], allow_unused=True)
    except (RuntimeError, IndexError):
        return True  # reverse mode refuses the sample, as torch's does (test_autograd_ops)
    lhs = sum(_pairing(c, _np(t) if t is not None else 0.0) for c, (_, t) in zip(cots, pairs))
    rhs = sum(_pairing(_np(g), tg) for g, tg in zip(grads, tangents) if g is not None)
    if rtol > 1e-6:  # half-precision tangents: their rounding is relative to each term
        atol = max(atol, rtol * sum(float(np.sum(np.abs(c) * np.abs(_np(t) if t is not None else 0.0)))
                                    for c, (_, t) in zip(cots, pairs)))
    assert np.isclose(lhs, rhs, rtol=rtol, atol=max(atol, 1e-6)) or (np.isnan(lhs) and np.isnan(rhs)), \
        f'{ctx}: <c, J t> = {lhs} but <J^T c, t> = {rhs}'
    return True


@pytest.mark.parametrize('op,dtype', _op_dtypes(OPS))
def test_forward_ad_matches_torch_and_reverse_mode(op, dtype):
    rng = np.random.default_rng(0)
    for sample in _differentiable_samples(op, dtype):
        _check_sample(op, sample, op.primary_form, rng)


INPLACE_OPS = [op for op in OPS if op.inplace]


@pytest.mark.parametrize('op,dtype', _op_dtypes(INPLACE_OPS))
def test_forward_ad_inplace_forms(op, dtype):
    rng = np.random.default_rng(1)
    for sample in _differentiable_samples(op, dtype):
        if not op.applies('inplace', sample):
            continue
        try:
            t_args, t_kwargs = opdb.materialize(sample, torch)
            op.call('inplace', torch, [a.clone() if opdb.is_tensor(a) else a for a in t_args],
                    t_kwargs)
        except Exception:  # noqa: BLE001 - torch refuses this in-place sample (dtype, shape)
            continue
        _check_sample(op, sample, 'inplace', rng)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("inplace", [False, True])
def test_scatter_reduce_amax_amin_tangents_match_torch(reduce, include_self, inplace):
    # ties (equal values share the tangent), untouched rows, and dim=1
    self_v = [[1.0, 5.0, 3.0, 2.0], [4.0, 4.0, 0.0, 7.0]]
    src_v = [[4.0, 2.0, 6.0], [4.0, 9.0, 4.0]]
    idx_v = [[0, 1, 0], [0, 3, 1]]
    tangents = []
    for lib in (torch, tp):
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            s = fa.make_dual(lib.tensor(self_v, dtype=lib.float64),
                             lib.arange(8, dtype=lib.float64).reshape(2, 4) / 10)
            src = fa.make_dual(lib.tensor(src_v, dtype=lib.float64),
                               lib.arange(6, dtype=lib.float64).reshape(2, 3) + 1)
            idx = lib.tensor(idx_v)
            if inplace:
                out = s.clone().scatter_reduce_(1, idx, src, reduce, include_self=include_self)
            else:
                out = s.scatter_reduce(1, idx, src, reduce, include_self=include_self)
            tangents.append(np.array(fa.unpack_dual(out).tangent.tolist()))
    np.testing.assert_allclose(tangents[1], tangents[0], rtol=1e-12)


def test_scatter_reduce_prod_tangent_is_refused():
    fa = tp.autograd.forward_ad
    with fa.dual_level():
        s = fa.make_dual(tp.ones(3), tp.ones(3))
        with pytest.raises(NotImplementedError, match="reduce='prod'"):
            s.scatter_reduce(0, tp.tensor([0, 1]), tp.ones(2), "prod")
