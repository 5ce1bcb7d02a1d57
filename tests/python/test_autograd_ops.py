"""Gradients of every op in the op database against PyTorch's.

For each op and each float64 sample, the floating tensor inputs become leaves that
require grad; both libraries run the op, backpropagate the same random cotangents and
must agree on every input's gradient (None and all-zeros are the same answer). The
first small samples also go through tensorplay's gradcheck (finite differences) and
gradgradcheck. Entries with complex128 run the same over their complex128 samples (complex
cotangents; gradients in PyTorch's convention, gradcheck on the real and imaginary parts).
Ops whose derivative formula has not landed yet are listed in
NO_FORMULA_YET: for them backward must raise NotImplementedError (never return a wrong
gradient), and the list fails the moment a formula lands, so it stays exact.
"""
import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay_opdb as opdb

NO_FORMULA_YET = set()

# Ops reading one triangle of a symmetric input: finite differences only see that
# triangle, while the gradient (torch's too) is the symmetric one. Their gradcheck runs on
# (A + A^H) / 2, as PyTorch's gradcheck_wrapper_hermitian_input does.
SYMMETRIC_INPUT = {'linalg.cholesky', 'linalg.cholesky_ex', 'cholesky', 'linalg.eigvalsh'}

# At a singular matrix log|det| is -inf and its gradient A^{-T} does not exist: torch's
# LU-based formula returns an arbitrary mix of inf and nan there, ours nan. For these ops
# the gradients must be non-finite at the same entries and agree elsewhere.
NON_FINITE_AT_SINGULAR = {'linalg.slogdet', 'slogdet', 'logdet'}

GRADCHECK_NUMEL = 24

# Ops whose complex samples torch cannot differentiate where we can, with the reason; for
# them tensorplay's gradient of each real input must be real (the real part of its complex
# gradient, PyTorch's own rule for real inputs of complex ops elsewhere).
TORCH_REFUSES_COMPLEX_GRAD = {
    'where': "torch's engine refuses a complex gradient for where's real operand",
    'logaddexp': "torch's formula gives a real operand of a complex logaddexp a complex gradient",
    'ldexp': "torch's formula gives a real exponent of a complex input a complex gradient",
}

# Eigenvectors of a general matrix are defined up to a phase each, so only losses blind to
# it have a gradient (others raise, as in PyTorch: test_linalg.py checks that). These ops
# are differentiated through |V|, which keeps the eigenvectors' moduli in the check.
GAUGE_INVARIANT = {'linalg.eig': lambda out: (out[0], out[1].abs())}

# Ops whose backward is not differentiable again (PyTorch's neither), with the reason.
NOT_TWICE = {
    'embedding_bag',  # _embedding_bag_backward has no derivative: NotImplementedError, as in PyTorch
}
# Positional arguments finite differences must not perturb: the quantiles' q lies in
# [0, 1] and the samples sit on its ends (its gradient is still compared with torch's).
GRADCHECK_CONSTANT_ARG = {'quantile': 1, 'nanquantile': 1}


def _leaves(value, out):
    """Collects the floating tensors of a sample value (recursing into lists)."""
    if isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out)
    elif opdb.is_tensor(value) and (value.is_floating_point() or value.is_complex()):
        out.append(value)
    return out


def _prepare(sample, lib):
    args, kwargs = opdb.materialize(sample, lib)
    leaves = _leaves(list(args) + list(kwargs.values()), [])
    for t in leaves:
        t.requires_grad_(True)
    return args, kwargs, leaves


def _outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if opdb.is_tensor(o) and (o.is_floating_point() or o.is_complex())
            and o.requires_grad]


def _cotangent(rng, out):
    """Standard normal values of out's shape (both parts for a complex out), as numpy."""
    c = rng.standard_normal(tuple(out.shape))
    return np.asarray(c + 1j * rng.standard_normal(tuple(out.shape)) if out.is_complex() else c)


def _lib_cotangent(c):
    return tp.tensor(c, dtype=tp.complex128 if np.iscomplexobj(c) else tp.float64)


def _call(op, lib, args, kwargs):
    result = op.call(op.primary_form, lib, args, kwargs)
    return GAUGE_INVARIANT[op.name](result) if op.name in GAUGE_INVARIANT else result


def _grads(lib, outs, leaves, cots):
    return lib.autograd.grad(outs, leaves, cots, allow_unused=True)


def _same_grad(a, e, ctx, op_name=None):
    a = None if a is None else opdb.to_torch(a)
    if a is None and e is None:
        return
    if a is None:
        a = torch.zeros_like(e)
    if e is None:
        e = torch.zeros_like(a)
    assert tuple(a.shape) == tuple(e.shape), f'{ctx}: grad shape {tuple(a.shape)} != {tuple(e.shape)}'
    if op_name in NON_FINITE_AT_SINGULAR and not bool(e.isfinite().all()):
        finite = e.isfinite()
        assert torch.equal(a.isfinite(), finite), f'{ctx}: non-finite entries differ\n{a}\n{e}'
        a, e = a[finite], e[finite]
    wide = torch.complex128 if a.is_complex() or e.is_complex() else torch.float64
    torch.testing.assert_close(a.to(wide), e.to(wide), rtol=1e-6, atol=1e-7, equal_nan=True,
                               msg=lambda m: f'{ctx}\n{m}')


def _differentiable_samples(op, dtype='float64', finite_float64=False):
    """The samples of `dtype` (float64 or complex128) torch differentiates (with
    `finite_float64`: only those whose inputs and outputs are finite and double precision,
    where finite differences mean something)."""
    for sample in op.sample_inputs(dtype):
        try:
            args, kwargs, leaves = _prepare(sample, torch)
            outs = _outputs(_call(op, torch, args, kwargs))
        except Exception:  # noqa: BLE001 - samples torch rejects test errors, not gradients
            continue
        if not (outs and leaves):
            continue
        if finite_float64:
            if not all(t.dtype in (torch.float64, torch.complex128) and bool(t.isfinite().all())
                       for t in leaves + outs):
                continue
            try:
                torch.autograd.grad(outs, leaves, [torch.ones_like(o) for o in outs], allow_unused=True)
            except RuntimeError:  # torch cannot differentiate it either
                continue
        yield sample


OPS = [op for op in opdb.op_db if 'float64' in op.dtypes and op.name not in ('copy_',)]


def _op_dtypes(ops):
    """(op, dtype) params: float64 (id: the op's name) and complex128 where the entry has it."""
    return [pytest.param(op, dt, id=op.name if dt == 'float64' else f'{op.name}-{dt}')
            for op in ops for dt in ('float64', 'complex128') if dt in op.dtypes]


@pytest.mark.parametrize('op,dtype', _op_dtypes(OPS))
def test_gradients_match_torch(op, dtype):
    rng = np.random.default_rng(0)
    checked = 0
    for sample in _differentiable_samples(op, dtype):
        ctx = f'{op.name} {sample!r}'
        t_args, t_kwargs, t_leaves = _prepare(sample, torch)
        t_outs = _outputs(_call(op, torch, t_args, t_kwargs))
        cots = [_cotangent(rng, o) for o in t_outs]
        try:
            expected = _grads(torch, t_outs, t_leaves, [torch.from_numpy(c) for c in cots])
        except RuntimeError as e:
            # torch has no formula (floor_divide) or refuses the sample (scatter with a
            # src larger than index): tensorplay must refuse it the same way.
            missing = 'not implemented' in str(e)
            p_args, p_kwargs, p_leaves = _prepare(sample, tp)
            p_outs = _outputs(_call(op, tp, p_args, p_kwargs))
            if op.name in TORCH_REFUSES_COMPLEX_GRAD and 'input_is_complex == grad_is_complex' in str(e):
                grads = _grads(tp, p_outs, p_leaves, [_lib_cotangent(c) for c in cots])
                for g, leaf in zip(grads, p_leaves):
                    assert g is None or g.dtype == leaf.dtype, f'{ctx}: gradient dtype {g.dtype}'
                continue
            with pytest.raises(NotImplementedError if missing else (RuntimeError, IndexError)):
                _grads(tp, p_outs, p_leaves, [_lib_cotangent(c) for c in cots])
            continue
        p_args, p_kwargs, p_leaves = _prepare(sample, tp)
        p_outs = _outputs(_call(op, tp, p_args, p_kwargs))
        p_cots = [_lib_cotangent(c) for c in cots]
        if op.name in NO_FORMULA_YET:  # no history yet (Python composites), or a raising node
            if p_outs:
                ones = [tp.ones(tuple(o.shape), dtype=o.dtype) for o in p_outs]
                with pytest.raises(NotImplementedError, match='derivative'):
                    _grads(tp, p_outs, p_leaves, ones)
            return
        assert len(p_outs) == len(t_outs), f'{ctx}: {len(p_outs)} outputs require grad, torch has {len(t_outs)}'

        actual = _grads(tp, p_outs, p_leaves, p_cots)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _same_grad(a, e, f'{ctx} input {i}', op.name)
        checked += 1
    assert op.name not in NO_FORMULA_YET or checked == 0


def _gradcheck_cases(op, limit, dtype='float64'):
    """(function, inputs) for up to `limit` small finite samples of op in dtype."""
    done = 0
    for sample in _differentiable_samples(op, dtype, finite_float64=True):
        args, kwargs = opdb.materialize(sample, tp)
        constant = args[GRADCHECK_CONSTANT_ARG[op.name]] if op.name in GRADCHECK_CONSTANT_ARG else None
        leaves = [t for t in _leaves(list(args) + list(kwargs.values()), []) if t is not constant]
        if sum(t.numel() for t in leaves) > GRADCHECK_NUMEL:
            continue
        fresh = {id(t): t.detach().contiguous().requires_grad_() for t in leaves}

        def rebuild(value, fresh=fresh):
            if isinstance(value, (list, tuple)):
                return type(value)(rebuild(v) for v in value)
            if opdb.is_tensor(value) and id(value) in fresh:
                return fresh[id(value)]
            return value

        args, kwargs = rebuild(args), rebuild(kwargs)
        inputs = tuple(_leaves(list(args) + list(kwargs.values()), []))
        symmetric = op.name in SYMMETRIC_INPUT or (op.name == 'linalg.pinv' and kwargs.get('hermitian'))

        def call(*xs, args=args, kwargs=kwargs, symmetric=symmetric):
            if not symmetric:
                return _call(op, tp, args, kwargs)
            A = (xs[0] + xs[0].mH) / 2  # Hermitian for complex inputs
            return _call(op, tp, (A,) + tuple(args[1:]), kwargs)

        yield call, inputs
        done += 1
        if done == limit:
            return


@pytest.mark.parametrize('op,dtype', _op_dtypes([op for op in OPS if op.name not in NO_FORMULA_YET]))
def test_gradcheck(op, dtype):
    """Finite differences agree with tensorplay's gradients (first two small samples)."""
    for call, inputs in _gradcheck_cases(op, 2, dtype):
        assert tp.autograd.gradcheck(call, inputs), op.name


@pytest.mark.parametrize('op,dtype', _op_dtypes([op for op in OPS if op.name not in NO_FORMULA_YET | NOT_TWICE]))
def test_gradgradcheck(op, dtype):
    """The backward itself differentiates right (create_graph=True), first small sample."""
    for call, inputs in _gradcheck_cases(op, 1, dtype):
        assert tp.autograd.gradgradcheck(call, inputs, atol=1e-4, rtol=1e-3), op.name
