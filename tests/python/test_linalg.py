"""tp.linalg beyond the op database: decompositions whose signs are not unique (qr, svd,
eigh) checked by their invariants against torch's shapes, dtypes and values; tuple out=;
LinAlgError; return types; layouts of results."""
import numpy as np
import pytest
import torch

import tensorplay as tp

DTYPES = [torch.float32, torch.float64]
DECOMP_DTYPES = DTYPES + [torch.complex64, torch.complex128]  # qr, svd, eigh: complex too
TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.complex64: 1e-4, torch.complex128: 1e-10}
RECT_SHAPES = [(5, 3), (3, 5), (4, 4), (1, 1), (2, 5, 3), (2, 1, 3, 4), (0, 3), (3, 0),
               (2, 0, 4), (0, 2, 2)]


def to_tp(t):
    return tp.from_numpy(np.ascontiguousarray(t.numpy()))


def to_torch(x):
    return torch.from_numpy(np.array(x.numpy()))


def rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=torch.float64).mul(2).sub(1).to(dtype)


def assert_same_meta(ours, ref):
    """Each result has torch's shape and dtype."""
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert tuple(o.shape) == tuple(r.shape)
        assert str(o.dtype).split('.')[-1] == str(r.dtype).split('.')[-1]


def assert_close(a, b, dtype):
    torch.testing.assert_close(a, b, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize('dtype', DECOMP_DTYPES)
@pytest.mark.parametrize('shape', RECT_SHAPES)
@pytest.mark.parametrize('mode', ['reduced', 'complete', 'r'])
def test_qr_invariants(shape, mode, dtype):
    a = _crand(shape, dtype, seed=0)
    ref = torch.linalg.qr(a, mode=mode)
    ours = tp.linalg.qr(to_tp(a), mode=mode)
    assert type(ours).__name__ == 'linalg_qr'
    assert_same_meta(ours, ref)
    Q, R = to_torch(ours.Q), to_torch(ours.R)
    assert torch.equal(R, R.triu())
    assert_close(R.abs(), ref.R.abs(), dtype)  # rows are unique up to sign (a phase)
    if mode == 'r':
        return
    k = Q.shape[-1]
    assert_close(Q.mH @ Q, torch.eye(k, dtype=dtype).expand(Q.shape[:-2] + (k, k)), dtype)
    assert_close(Q @ R, a, dtype)


@pytest.mark.parametrize('dtype', DECOMP_DTYPES)
@pytest.mark.parametrize('shape', RECT_SHAPES)
@pytest.mark.parametrize('full_matrices', [True, False])
def test_svd_invariants(shape, full_matrices, dtype):
    a = _crand(shape, dtype, seed=1)
    ref = torch.linalg.svd(a, full_matrices=full_matrices)
    ours = tp.linalg.svd(to_tp(a), full_matrices=full_matrices)
    assert type(ours).__name__ == 'linalg_svd' and ours._fields == ('U', 'S', 'Vh')
    assert_same_meta(ours, ref)
    U, S, Vh = (to_torch(x) for x in ours)
    assert_close(S, ref.S, dtype)
    m, n = U.shape[-1], Vh.shape[-2]
    assert_close(U.mH @ U, torch.eye(m, dtype=dtype).expand(U.shape[:-2] + (m, m)), dtype)
    assert_close(Vh @ Vh.mH, torch.eye(n, dtype=dtype).expand(Vh.shape[:-2] + (n, n)), dtype)
    k = S.shape[-1]
    assert_close((U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :], a, dtype)


@pytest.mark.parametrize('dtype', DECOMP_DTYPES)
@pytest.mark.parametrize('shape', [(4, 4), (1, 1), (2, 3, 3), (0, 0), (0, 3, 3), (2, 1, 5, 5)])
@pytest.mark.parametrize('uplo', ['L', 'U'])
def test_eigh_invariants(shape, uplo, dtype):
    a = _crand(shape, dtype, seed=2)  # not Hermitian: only triangle `uplo` is read
    ref = torch.linalg.eigh(a, UPLO=uplo)
    ours = tp.linalg.eigh(to_tp(a), UPLO=uplo)
    assert type(ours).__name__ == 'linalg_eigh'
    assert ours._fields == ('eigenvalues', 'eigenvectors')
    assert_same_meta(ours, ref)
    w, V = to_torch(ours.eigenvalues), to_torch(ours.eigenvectors)
    assert_close(w, ref.eigenvalues, dtype)
    sym = a.tril(-1) + a.tril(-1).mH if uplo == 'L' else a.triu(1) + a.triu(1).mH
    sym = sym + torch.diag_embed(a.diagonal(0, -2, -1).real.to(dtype))  # the diagonal's real part
    n = shape[-1]
    assert_close(V.mH @ V, torch.eye(n, dtype=dtype).expand(V.shape[:-2] + (n, n)), dtype)
    assert_close(sym @ V, V * w.unsqueeze(-2), dtype)


def test_decompositions_of_noncontiguous_input():
    base = rand((4, 6, 5), torch.float64, seed=3)
    a = base.transpose(0, 2)[:, ::2]  # (5, 3, 4), neither C nor F ordered
    x = to_tp(base).transpose(0, 2)[:, ::2]
    assert_close(to_torch(tp.linalg.svdvals(x)), torch.linalg.svdvals(a), torch.float64)
    Q, R = (to_torch(t) for t in tp.linalg.qr(x))
    assert_close(Q @ R, a, torch.float64)
    sq = a[..., :3, :3]
    assert_close(to_torch(tp.linalg.eigvalsh(x[..., :3, :3])), torch.linalg.eigvalsh(sq),
                 torch.float64)
    assert torch.equal(to_torch(x), a)  # the input is untouched


def test_legacy_svd_and_qr():
    a = rand((5, 3), torch.float64, seed=4)
    ours, ref = tp.svd(to_tp(a)), torch.svd(a)
    assert type(ours).__name__ == 'svd' and ours._fields == ('U', 'S', 'V')
    assert_same_meta(ours, ref)
    U, S, V = (to_torch(t) for t in ours)
    assert_close(U @ torch.diag(S) @ V.mT, a, torch.float64)
    ours, ref = to_tp(a).svd(some=False), torch.svd(a, some=False)
    assert_same_meta(ours, ref)
    ours, ref = tp.svd(to_tp(a), compute_uv=False), torch.svd(a, compute_uv=False)
    assert_same_meta(ours, ref)
    assert to_torch(ours.U).abs().sum() == 0 and to_torch(ours.V).abs().sum() == 0
    assert_close(to_torch(ours.S), ref.S, torch.float64)
    ours = tp.qr(to_tp(a), some=False)  # torch.qr(some=False) is linalg.qr 'complete'
    assert type(ours).__name__ == 'qr' and ours._fields == ('Q', 'R')
    assert_same_meta(ours, torch.linalg.qr(a, mode='complete'))


def test_tuple_out():
    a = rand((2, 3, 3), torch.float64, seed=5) + 3 * torch.eye(3, dtype=torch.float64)
    sign, logabs = tp.empty(0, dtype=tp.float64), tp.empty(7, dtype=tp.float64)
    res = tp.linalg.slogdet(to_tp(a), out=(sign, logabs))
    assert type(res).__name__ == 'linalg_slogdet'
    assert res.sign is sign and res.logabsdet is logabs
    ref = torch.linalg.slogdet(a)
    assert_close(to_torch(sign), ref.sign, torch.float64)
    assert_close(to_torch(logabs), ref.logabsdet, torch.float64)
    U, S, Vh = (tp.empty(0, dtype=tp.float64) for _ in range(3))
    tp.linalg.svd(to_tp(a), out=(U, S, Vh))
    assert tuple(U.shape) == (2, 3, 3) and tuple(S.shape) == (2, 3)
    assert_close(to_torch(S), torch.linalg.svdvals(a), torch.float64)
    w, V = tp.empty(0, dtype=tp.float64), tp.empty(0, dtype=tp.float64)
    tp.linalg.eigh(to_tp(a), out=(w, V))
    assert_close(to_torch(w), torch.linalg.eigvalsh(a), torch.float64)
    with pytest.raises(RuntimeError, match='dtype'):
        tp.linalg.slogdet(to_tp(a), out=(tp.empty(0), tp.empty(0)))
    with pytest.raises(TypeError):
        tp.linalg.slogdet(to_tp(a), out=tp.empty(0, dtype=tp.float64))
    with pytest.raises(RuntimeError):  # as torch: out= must have the result's dtype
        tp.linalg.det(to_tp(a), out=tp.empty(0))
    with pytest.raises(RuntimeError):
        torch.linalg.det(a, out=torch.empty(0))


def test_linalg_error_matches_torch():
    assert issubclass(tp.linalg.LinAlgError, RuntimeError)
    cases = [
        (lambda m: m.linalg.inv, torch.zeros(3, 3)),
        (lambda m: m.linalg.inv, torch.stack([torch.eye(3), torch.zeros(3, 3)])),
        (lambda m: m.linalg.cholesky, -torch.eye(3)),
        (lambda m: m.linalg.cholesky, torch.stack([torch.eye(2), -torch.eye(2)])),
        (lambda m: m.linalg.svd, torch.full((3, 3), float('nan'))),
    ]
    for fn, a in cases:
        with pytest.raises(torch.linalg.LinAlgError) as expected:
            fn(torch)(a)
        with pytest.raises(tp.linalg.LinAlgError) as actual:
            fn(tp)(to_tp(a))
        assert str(actual.value) == str(expected.value)
    with pytest.raises(tp.linalg.LinAlgError, match='singular'):
        tp.linalg.solve(tp.zeros(2, 3, 3), tp.ones(2, 3))
    inv, info = tp.linalg.inv_ex(to_tp(torch.stack([torch.eye(2), torch.zeros(2, 2)])))
    assert info.tolist() == [0, 1] and str(info.dtype) == 'tensorplay.int32'
    L, info = tp.linalg.cholesky_ex(to_tp(torch.stack([torch.eye(2), -torch.eye(2)])))
    assert info.tolist() == [0, 1]


def test_results_are_column_major_like_torch():
    a = rand((4, 4), torch.float64, seed=6) + 4 * torch.eye(4, dtype=torch.float64)
    spd = a @ a.mT
    x, xs = to_tp(a), to_tp(spd)
    pairs = [(tp.linalg.inv(x), torch.linalg.inv(a)),
             (tp.linalg.solve(x, x), torch.linalg.solve(a, a)),
             (tp.linalg.cholesky(xs), torch.linalg.cholesky(spd)),
             (tp.linalg.svd(x).U, torch.linalg.svd(a).U),
             (tp.linalg.qr(x).Q, torch.linalg.qr(a).Q),
             (tp.linalg.eigh(xs).eigenvectors, torch.linalg.eigh(spd).eigenvectors),
             (tp.linalg.lstsq(x, x).solution, torch.linalg.lstsq(a, a).solution)]
    for ours, ref in pairs:
        assert tuple(ours.stride()) == tuple(ref.stride())


@pytest.mark.parametrize('driver', ['gels', 'gelsy', 'gelsd', 'gelss'])
@pytest.mark.parametrize('shapes', [((5, 3), (5, 2)), ((5, 3), (5,)), ((1, 5, 3), (2, 5, 2)),
                                    ((2, 3, 5), (2, 3, 1)), ((3, 3), (3, 3)), ((3, 0), (3, 2)),
                                    ((2, 4, 0), (2, 4, 1))])
def test_lstsq_fields(driver, shapes):
    a, b = rand(shapes[0], torch.float64, 7), rand(shapes[1], torch.float64, 8)
    ref = torch.linalg.lstsq(a, b, driver=driver)
    ours = tp.linalg.lstsq(to_tp(a), to_tp(b), driver=driver)
    assert ours._fields == ('solution', 'residuals', 'rank', 'singular_values')
    assert_same_meta(ours, ref)
    for o, r in zip(ours, ref):
        assert_close(to_torch(o), r, torch.float64)


def test_matrix_exp_half_is_float32_rounded():
    # torch's own float16/bfloat16 matrix_exp overflows for n > 1; ours computes in float64
    a = rand((2, 4, 4), torch.float64, seed=9)
    for dt, tol in ((tp.float16, 2e-3), (tp.bfloat16, 1.6e-2)):
        ours = to_torch(tp.linalg.matrix_exp(to_tp(a).to(dt)).to(tp.float64))
        half = a.to(getattr(torch, str(dt).split('.')[-1])).double()
        torch.testing.assert_close(ours, torch.linalg.matrix_exp(half), rtol=tol, atol=tol)


def test_tolerance_forms():
    a = torch.diag(torch.tensor([3.0, 2.0, 1.0, 1e-3], dtype=torch.float64))
    x = to_tp(a)
    assert tp.linalg.matrix_rank(x, atol=tp.tensor(1.5)).item() == 2
    assert tp.linalg.matrix_rank(x, 1.5).item() == torch.linalg.matrix_rank(a, 1.5).item()
    assert_close(to_torch(tp.linalg.pinv(x, 0.5)), torch.linalg.pinv(a, 0.5), torch.float64)
    assert_close(to_torch(tp.pinverse(x, 0.5)), torch.pinverse(a, 0.5), torch.float64)
    atol = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64)
    assert to_torch(tp.linalg.matrix_rank(x, atol=to_tp(atol))).tolist() == [3, 2, 1]
    zero = torch.zeros((), dtype=torch.float64)
    ours = tp.linalg.pinv(x, atol=to_tp(atol), rtol=to_tp(zero))
    assert_close(to_torch(ours), torch.linalg.pinv(a, atol=atol, rtol=zero), torch.float64)
    for lib, t in ((torch, atol), (tp, to_tp(atol))):  # tensor and number do not mix
        with pytest.raises(TypeError):
            lib.linalg.pinv(t.diag(), atol=t, rtol=0.0)
    assert_close(to_torch(tp.linalg.pinv(x, to_tp(atol))), torch.linalg.pinv(a, atol),
                 torch.float64)
    with pytest.raises(RuntimeError):  # does not broadcast with the batch
        tp.linalg.pinv(to_tp(a.expand(2, 4, 4)), atol=to_tp(atol))


def test_namespace_matches_torch():
    for name in ['det', 'slogdet', 'inv', 'inv_ex', 'solve', 'cholesky', 'cholesky_ex', 'qr',
                 'svd', 'svdvals', 'eigh', 'eigvalsh', 'lstsq', 'pinv', 'matrix_rank',
                 'matrix_power', 'matrix_exp', 'LinAlgError']:
        assert hasattr(tp.linalg, name), name
    for name in ['det', 'logdet', 'slogdet', 'inverse', 'cholesky', 'qr', 'svd', 'pinverse',
                 'matrix_power', 'matrix_exp']:
        assert hasattr(tp, name) and hasattr(tp.Tensor, name), name
    assert not hasattr(tp, 'linalg_det') and not hasattr(torch, 'linalg_det')


def test_non_finite_inputs_like_torch():
    nan = torch.full((3, 3), float('nan'))
    inf = torch.eye(3)
    inf[0, 0] = float('inf')
    ours, ref = tp.linalg.slogdet(to_tp(nan)), torch.linalg.slogdet(nan)
    assert ours.sign.item() == ref.sign.item() == 0 and np.isnan(ours.logabsdet.item())
    for a in (nan, torch.diag(torch.tensor([1.0, float('nan'), 1.0]))):
        ours, ref = tp.linalg.cholesky_ex(to_tp(a)), torch.linalg.cholesky_ex(a)
        assert ours.info.item() == ref.info.item() > 0
    for a in (nan, inf):  # NaN everywhere, as torch gives (and no endless squaring)
        assert torch.equal(to_torch(tp.linalg.matrix_exp(to_tp(a))).isnan(),
                           torch.linalg.matrix_exp(a).isnan())
    with pytest.raises(tp.linalg.LinAlgError):
        tp.linalg.eigvalsh(to_tp(nan))


# ---- gradients of the decompositions with non-unique signs: losses that do not depend on
# the signs of singular vectors / eigenvectors / Q's columns, compared with torch's.
GRAD_SHAPES = [(5, 3), (3, 5), (4, 4), (2, 4, 3), (2, 3, 4)]


def _weights(shapes, seed):
    return [rand(s, torch.float64, seed=seed + i) for i, s in enumerate(shapes)]


def _grad_both(fn_torch, fn_tp, a):
    ta = a.clone().requires_grad_()
    (expected,) = torch.autograd.grad(fn_torch(torch, ta), ta)
    pa = to_tp(a).requires_grad_()
    (actual,) = tp.autograd.grad(fn_tp(tp, pa), pa)
    torch.testing.assert_close(to_torch(actual), expected, rtol=1e-7, atol=1e-9)


def _svd_loss(lib, a, full_matrices, weights, w_tp):
    U, S, Vh = lib.linalg.svd(a, full_matrices=full_matrices)
    k = S.shape[-1]
    U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)  # full_matrices: the extra ones are arbitrary
    w = weights if lib is torch else w_tp
    return (((U * S.unsqueeze(-2)) @ Vh) * w[0]).sum() + (U * U * w[1]).sum() \
        + (Vh * Vh * w[2]).sum() + (S * w[3]).sum()


@pytest.mark.parametrize('full_matrices', [False, True])
@pytest.mark.parametrize('shape', GRAD_SHAPES)
def test_svd_gradient_gauge_invariant_loss(shape, full_matrices):
    a = rand(shape, torch.float64)
    m, n = shape[-2:]
    k = min(m, n)
    w = _weights([shape, shape[:-1] + (k,), shape[:-2] + (k, n), shape[:-2] + (k,)], seed=1)
    w_tp = [to_tp(x) for x in w]
    _grad_both(lambda lib, x: _svd_loss(lib, x, full_matrices, w, w_tp),
               lambda lib, x: _svd_loss(lib, x, full_matrices, w, w_tp), a)


@pytest.mark.parametrize('uplo', ['L', 'U'])
@pytest.mark.parametrize('shape', [(4, 4), (2, 3, 3)])
def test_eigh_gradient_gauge_invariant_loss(shape, uplo):
    x = rand(shape, torch.float64)
    a = x + x.mT
    w = _weights([shape, shape, shape[:-1]], seed=2)
    w_tp = [to_tp(t) for t in w]

    def loss(lib, A):
        ws = w if lib is torch else w_tp
        L, V = lib.linalg.eigh(A, UPLO=uplo)
        recon = (V * L.unsqueeze(-2)) @ V.mT
        return (recon * ws[0]).sum() + (V * V * ws[1]).sum() + (L * ws[2]).sum()

    _grad_both(loss, loss, a)
    _grad_both(lambda lib, A: (lib.linalg.eigvalsh(A, UPLO=uplo) * (w[2] if lib is torch else w_tp[2])).sum(),
               lambda lib, A: (lib.linalg.eigvalsh(A, UPLO=uplo) * w_tp[2]).sum(), a)


@pytest.mark.parametrize('mode,shape', [('reduced', (5, 3)), ('reduced', (3, 5)), ('reduced', (4, 4)),
                                        ('reduced', (2, 4, 3)), ('complete', (3, 5)),
                                        ('complete', (2, 4, 4))])
def test_qr_gradient_gauge_invariant_loss(mode, shape):
    a = rand(shape, torch.float64)
    Q0, R0 = torch.linalg.qr(a, mode=mode)
    w = _weights([shape, tuple(Q0.shape), tuple(R0.shape)], seed=3)
    w_tp = [to_tp(t) for t in w]

    def loss(lib, A):
        ws = w if lib is torch else w_tp
        Q, R = lib.linalg.qr(A, mode=mode)
        return ((Q @ R) * ws[0]).sum() + (Q * Q * ws[1]).sum() + (R * R * ws[2]).sum()

    _grad_both(loss, loss, a)


@pytest.mark.parametrize('mode,shape', [('r', (4, 3)), ('complete', (5, 3))])
def test_qr_gradient_unsupported_like_torch(mode, shape):
    a = rand(shape, torch.float64)
    ta = a.clone().requires_grad_()
    with pytest.raises(RuntimeError):
        torch.linalg.qr(ta, mode=mode)[1].sum().backward()
    pa = to_tp(a).requires_grad_()
    with pytest.raises(RuntimeError, match='linalg.qr'):
        tp.linalg.qr(pa, mode=mode)[1].sum().backward()


def _well_conditioned(shape, seed=0):
    n = shape[-1]
    return rand(shape, torch.float64, seed) + n * torch.eye(n, dtype=torch.float64)


def _spd(shape, seed=0):
    x = rand(shape, torch.float64, seed)
    return x @ x.mT + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)


@pytest.mark.parametrize('name,fn,make', [
    ('det', lambda lib, A: lib.linalg.det(A), lambda: [_well_conditioned((3, 3))]),
    ('det batch', lambda lib, A: lib.det(A), lambda: [rand((2, 3, 3), torch.float64)]),
    ('slogdet', lambda lib, A: lib.linalg.slogdet(A).logabsdet, lambda: [_well_conditioned((3, 3))]),
    ('inv', lambda lib, A: lib.linalg.inv(A), lambda: [_well_conditioned((2, 3, 3))]),
    ('inv_ex', lambda lib, A: lib.linalg.inv_ex(A).inverse, lambda: [_well_conditioned((3, 3))]),
    ('solve', lambda lib, A, B: lib.linalg.solve(A, B),
     lambda: [_well_conditioned((3, 3)), rand((3, 2), torch.float64, 1)]),
    ('solve right', lambda lib, A, B: lib.linalg.solve(A, B, left=False),
     lambda: [_well_conditioned((2, 3, 3)), rand((2, 2, 3), torch.float64, 1)]),
    ('solve vector', lambda lib, A, B: lib.linalg.solve(A, B),
     lambda: [_well_conditioned((3, 3)), rand((3,), torch.float64, 1)]),
    ('cholesky', lambda lib, A: lib.linalg.cholesky((A + A.mT) / 2), lambda: [_spd((3, 3))]),
    ('cholesky upper', lambda lib, A: lib.linalg.cholesky((A + A.mT) / 2, upper=True),
     lambda: [_spd((2, 3, 3))]),
    ('matrix_exp', lambda lib, A: lib.linalg.matrix_exp(A), lambda: [rand((3, 3), torch.float64)]),
])
def test_double_backward(name, fn, make):
    """gradcheck of the first derivative, then the second derivative (the gradient of
    <d f(x)/dx [v], w>, with create_graph=True) against torch's."""
    values = make()
    inputs = tuple(to_tp(t).requires_grad_() for t in values)
    assert tp.autograd.gradcheck(lambda *xs: fn(tp, *xs), inputs), name

    def second(lib, xs, v, w):
        out = fn(lib, *xs)
        firsts = lib.autograd.grad(out, xs, v, create_graph=True)
        inner = sum((g * wi).sum() for g, wi in zip(firsts, w))
        return lib.autograd.grad(inner, xs)

    t_inputs = tuple(t.clone().requires_grad_() for t in values)
    t_out = fn(torch, *t_inputs)
    v = rand((t_out.numel(),), torch.float64, seed=7).reshape(t_out.shape)
    w = [rand(tuple(t.shape), torch.float64, seed=8 + i) for i, t in enumerate(values)]
    expected = second(torch, t_inputs, v, w)
    actual = second(tp, inputs, to_tp(v).reshape(tuple(v.shape)), [to_tp(x) for x in w])
    for a, e in zip(actual, expected):
        torch.testing.assert_close(to_torch(a), e, rtol=1e-7, atol=1e-9)


# ---- linalg.eig: eigenvectors are unique up to a phase each (and LAPACK's scaling)
EIG_DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
EIG_TOL = {torch.float32: 1e-4, torch.float64: 1e-10, torch.complex64: 1e-4, torch.complex128: 1e-10}


def _crand(shape, dtype, seed):
    if not dtype.is_complex:
        return rand(shape, dtype, seed)
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    return torch.complex(rand(shape, real, seed), rand(shape, real, seed + 100))


@pytest.mark.parametrize('dtype', EIG_DTYPES)
@pytest.mark.parametrize('shape', [(4, 4), (1, 1), (2, 3, 3), (0, 0), (0, 3, 3), (2, 1, 5, 5)])
def test_eig_invariants(shape, dtype):
    a = _crand(shape, dtype, seed=6)
    ref = torch.linalg.eig(a)
    ours = tp.linalg.eig(to_tp(a))
    assert type(ours).__name__ == 'linalg_eig' and ours._fields == ('eigenvalues', 'eigenvectors')
    assert_same_meta(ours, ref)
    assert ours.eigenvectors.stride() == ref.eigenvectors.stride()  # column-major, as LAPACK's
    L, V = to_torch(ours.eigenvalues), to_torch(ours.eigenvectors)
    tol = EIG_TOL[dtype]
    torch.testing.assert_close(L, ref.eigenvalues, rtol=tol, atol=tol)  # LAPACK's order in both
    ac = a.to(L.dtype)
    torch.testing.assert_close(ac @ V, V * L.unsqueeze(-2), rtol=tol, atol=tol)
    n = shape[-1]
    torch.testing.assert_close(V.abs().pow(2).sum(-2), torch.ones(shape[:-1], dtype=a.real.dtype),
                               rtol=tol, atol=tol)
    # the same vectors as torch's up to a unit factor each: |<v, v_ref>| = 1
    overlap = (V.conj() * ref.eigenvectors).sum(-2).abs()
    torch.testing.assert_close(overlap, torch.ones(shape[:-1], dtype=a.real.dtype), rtol=tol, atol=tol)
    torch.testing.assert_close(to_torch(tp.linalg.eigvals(to_tp(a))), ref.eigenvalues, rtol=tol,
                               atol=tol)
    assert n == 0 or V.dtype == ref.eigenvectors.dtype


def test_eig_real_matrix_with_conjugate_pairs():
    a = torch.tensor([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]], dtype=torch.float64)
    L, V = (to_torch(t) for t in tp.linalg.eig(to_tp(a)))
    torch.testing.assert_close(L, torch.linalg.eigvals(a))
    assert torch.equal(V[:, 0], V[:, 1].conj())  # a pair's vectors are conjugates too
    torch.testing.assert_close(a.to(V.dtype) @ V, V * L)


def test_eig_gradient_depends_on_phase_raises():
    """A loss that sees the eigenvectors' phases has no gradient: both raise."""
    a = rand((4, 4), torch.float64, seed=7)
    assert torch.linalg.eigvals(a).imag.abs().max() > 0.1  # complex eigenvectors
    for lib, x in ((torch, a.clone()), (tp, to_tp(a))):
        x.requires_grad_(True)
        V = lib.linalg.eig(x).eigenvectors
        with pytest.raises(RuntimeError, match='phi'):
            lib.autograd.grad(lib.real(V).sum(), [x])
    # |V| is blind to the phases: the gradients agree
    grads = []
    for lib, x in ((torch, a.clone()), (tp, to_tp(a))):
        x.requires_grad_(True)
        L, V = lib.linalg.eig(x)
        loss = V.abs().sum() + lib.real(L).sum() + 2 * lib.imag(L).pow(2).sum()
        grads.append(lib.autograd.grad(loss, [x])[0])
    torch.testing.assert_close(to_torch(grads[1]), grads[0])


def test_eig_out_and_errors():
    a = rand((3, 3), torch.float32, seed=8)
    L, V = tp.empty(0, dtype=tp.complex128), tp.empty(0, dtype=tp.complex128)
    res = tp.linalg.eig(to_tp(a), out=(L, V))  # complex64 results cast into complex128, as torch
    assert res.eigenvalues is L and res.eigenvectors is V
    torch.testing.assert_close(to_torch(L), torch.linalg.eigvals(a).to(torch.complex128))
    with pytest.raises(RuntimeError, match='castable'):
        tp.linalg.eig(to_tp(a), out=(tp.empty(0, dtype=tp.complex64), tp.empty(0)))
    with pytest.raises(RuntimeError, match='castable'):
        torch.linalg.eig(a, out=(torch.empty(0, dtype=torch.complex64), torch.empty(0)))
    with pytest.raises(RuntimeError):
        tp.linalg.eigvals(to_tp(a), out=tp.empty(0))
    nan = torch.tensor([[1.0, float('nan')], [0.0, 1.0]])
    with pytest.raises(RuntimeError, match='infs or NaNs'):  # torch 2.13 crashes here (MKL)
        tp.linalg.eigvals(to_tp(nan))
    with pytest.raises(NotImplementedError):
        tp.linalg.eig(tp.ones(2, 2, dtype=tp.float16))


def test_solve_complex():
    a = _crand((2, 3, 3), torch.complex128, seed=9) + 3 * torch.eye(3)
    b = _crand((2, 3, 2), torch.complex128, seed=10)
    torch.testing.assert_close(to_torch(tp.linalg.solve(to_tp(a), to_tp(b))), torch.linalg.solve(a, b))
    torch.testing.assert_close(to_torch(tp.linalg.inv(to_tp(a))), torch.linalg.inv(a))


def test_conjugate_transposes():
    a = _crand((2, 3, 4), torch.complex128, seed=11)
    x = to_tp(a)
    for ours, ref in ((x.mH, a.mH), (x.adjoint(), a.adjoint()), (tp.adjoint(x), a.adjoint()),
                      (x[0].H, a[0].H), (x.mT, a.mT)):
        assert ours.is_conj() == ref.is_conj()  # a view with the conjugate bit, as PyTorch's
        torch.testing.assert_close(to_torch(ours.resolve_conj()), ref.resolve_conj())


# ---- complex decompositions with a phase gauge: gradients of phase-invariant losses
def _complex_weights(shapes, seed):
    return [rand(s, torch.float64, seed=seed + i) for i, s in enumerate(shapes)]


@pytest.mark.parametrize('full_matrices', [False, True])
@pytest.mark.parametrize('shape', GRAD_SHAPES)
def test_svd_gradient_complex(shape, full_matrices):
    a = _crand(shape, torch.complex128, seed=12)
    m, n = shape[-2:]
    k = min(m, n)
    w = _complex_weights([shape, shape[:-1] + (k,), shape[:-2] + (k, n), shape[:-2] + (k,)], seed=4)
    w_tp = [to_tp(x) for x in w]

    def loss(lib, x):
        ws = w if lib is torch else w_tp
        U, S, Vh = lib.linalg.svd(x, full_matrices=full_matrices)
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        return (((U * S.unsqueeze(-2)) @ Vh).real * ws[0]).sum() + (U.abs() * ws[1]).sum() \
            + (Vh.abs() * ws[2]).sum() + (S * ws[3]).sum()

    _grad_both(loss, loss, a)


@pytest.mark.parametrize('uplo', ['L', 'U'])
@pytest.mark.parametrize('shape', [(4, 4), (2, 3, 3)])
def test_eigh_gradient_complex(shape, uplo):
    x = _crand(shape, torch.complex128, seed=13)
    a = x + x.mH
    w = _complex_weights([shape, shape, shape[:-1]], seed=5)
    w_tp = [to_tp(t) for t in w]

    def loss(lib, A):
        ws = w if lib is torch else w_tp
        L, V = lib.linalg.eigh(A, UPLO=uplo)
        recon = (V * L.unsqueeze(-2)) @ V.mH
        return (recon.imag * ws[0]).sum() + (V.abs() * ws[1]).sum() + (L * ws[2]).sum()

    _grad_both(loss, loss, a)


@pytest.mark.parametrize('mode,shape', [('reduced', (5, 3)), ('reduced', (3, 5)), ('reduced', (4, 4)),
                                        ('complete', (2, 4, 4))])
def test_qr_gradient_complex(mode, shape):
    a = _crand(shape, torch.complex128, seed=14)
    Q0, R0 = torch.linalg.qr(a, mode=mode)
    w = _complex_weights([shape, tuple(Q0.shape), tuple(R0.shape)], seed=6)
    w_tp = [to_tp(t) for t in w]

    def loss(lib, A):
        ws = w if lib is torch else w_tp
        Q, R = lib.linalg.qr(A, mode=mode)
        return ((Q @ R).real * ws[0]).sum() + (Q.real * ws[1]).sum() + (R.imag * ws[2]).sum()

    _grad_both(loss, loss, a)


@pytest.mark.parametrize('fn', [lambda lib, x: lib.linalg.svd(x)[0].real.sum(),
                                lambda lib, x: lib.linalg.eigh(x + x.mH)[1].real.sum()])
def test_phase_dependent_losses_raise_like_torch(fn):
    a = _crand((4, 4), torch.complex128, seed=15)
    with pytest.raises(RuntimeError, match='e\\^\\{i phi\\}'):
        fn(torch, a.clone().requires_grad_()).backward()
    with pytest.raises(RuntimeError, match='e\\^\\{i phi\\}'):
        fn(tp, to_tp(a).requires_grad_()).backward()


def test_complex_triangular_and_cholesky_composites():
    """solve_triangular, cholesky_solve/inverse, householder_product, geqrf and ormqr (tensor
    op composites, not op-database entries) on complex input, values and gradients."""
    a = _crand((4, 4), torch.complex128, seed=16)
    b = _crand((4, 2), torch.complex128, seed=17)
    spd = a @ a.mH + torch.eye(4)
    L = torch.linalg.cholesky(spd)
    tri = a.triu() + 3 * torch.eye(4)
    torch.testing.assert_close(to_torch(tp.linalg.solve_triangular(to_tp(tri), to_tp(b), upper=True)),
                               torch.linalg.solve_triangular(tri, b, upper=True))
    torch.testing.assert_close(to_torch(tp.cholesky_solve(to_tp(b), to_tp(L))), torch.cholesky_solve(b, L))
    torch.testing.assert_close(to_torch(tp.cholesky_inverse(to_tp(L))), torch.cholesky_inverse(L))
    r = _crand((5, 3), torch.complex128, seed=18)
    h, tau = torch.geqrf(r)
    ours = tp.geqrf(to_tp(r))
    torch.testing.assert_close(to_torch(ours[0]), h)
    torch.testing.assert_close(to_torch(ours[1]), tau)
    torch.testing.assert_close(to_torch(tp.linalg.householder_product(to_tp(h), to_tp(tau))),
                               torch.linalg.householder_product(h, tau))
    c = _crand((5, 2), torch.complex128, seed=19)
    for left, transpose in ((True, False), (True, True), (False, False), (False, True)):
        other = c if left else c.mT.contiguous()
        torch.testing.assert_close(
            to_torch(tp.ormqr(to_tp(h), to_tp(tau), to_tp(other), left=left, transpose=transpose)),
            torch.ormqr(h, tau, other, left=left, transpose=transpose))
    _grad_both(lambda lib, x: lib.linalg.solve_triangular(x, to_tp(b) if lib is tp else b, upper=True).abs().sum(),
               lambda lib, x: lib.linalg.solve_triangular(x, to_tp(b), upper=True).abs().sum(), tri)
    _grad_both(lambda lib, x: lib.cholesky_solve(b, x).abs().sum(),
               lambda lib, x: lib.cholesky_solve(to_tp(b), x).abs().sum(), L)
