"""The LU / LDL families and the legacy linalg names beyond the op database (which checks values,
layouts, errors, gradients, meta, vmap and the fuzzer for every entry of opdb_linalg_lu.py):
singular inputs and info, the messages of check_errors, PyTorch's return types, gradients of
every variant against torch's and by gradcheck in float64, and the randomized / iterative
solvers (svd_lowrank, pca_lowrank, lobpcg) by their properties and against torch with the
same generator draws."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

warnings.filterwarnings('ignore', message='.*deprecated.*')


def to_tp(t):
    return tp.from_numpy(np.array(t.detach().numpy()))


def to_torch(x):
    return torch.from_numpy(np.array(x.detach().numpy()))


def rand(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=torch.float64).mul(2).sub(1).to(dtype)


def well_conditioned(*shape, seed=0):
    A = rand(*shape, seed=seed)
    return A + shape[-1] * torch.eye(shape[-1], dtype=A.dtype) if shape[-1] == shape[-2] else A


def close(ours, ref, tol=1e-10):
    torch.testing.assert_close(to_torch(ours), ref, rtol=tol, atol=tol, equal_nan=True)


# --------------------------------------------------------------------- LU factorization
@pytest.mark.parametrize('shape', [(4, 4), (3, 5), (5, 3), (2, 3, 3), (2, 1, 4, 2), (0, 3), (2, 0, 3)])
def test_lu_factor_matches_torch_and_reconstructs(shape):
    A = rand(*shape, seed=1)
    LU, piv, info = tp.linalg.lu_factor_ex(to_tp(A))
    tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(A)
    close(LU, tLU)
    assert piv.dtype == tp.int32 and info.dtype == tp.int32
    assert torch.equal(to_torch(piv), tpiv) and torch.equal(to_torch(info), tinfo)
    assert tuple(LU.stride()) == tLU.stride()
    P, L, U = tp.linalg.lu(to_tp(A))
    close(P @ L @ U, A)
    for o, r in zip((P, L, U), torch.linalg.lu(A)):
        close(o, r)
        assert tuple(o.stride()) == r.stride()


def test_singular_matrices_info_and_errors():
    A = torch.stack([torch.eye(3), torch.tensor([[1., 2, 3], [2, 4, 6], [1, 0, 1]])])
    LU, piv, info = tp.linalg.lu_factor_ex(to_tp(A))
    assert info.tolist() == torch.linalg.lu_factor_ex(A).info.tolist() == [0, 3]
    with pytest.raises(RuntimeError, match=r'\(Batch element 1\): U\[3,3\] is zero'):
        tp.linalg.lu_factor(to_tp(A))
    with pytest.raises(RuntimeError, match=r'U\[3,3\] is zero and using it on lu_solve'):
        tp.linalg.lu_factor_ex(to_tp(A[1]), check_errors=True)
    # linalg.lu and the legacy tp.lu factor singular matrices without complaint
    P, L, U = tp.linalg.lu(to_tp(A))
    close(P @ L @ U, A, 1e-6)
    assert tp.lu(to_tp(A), get_infos=True).info.tolist() == [0, 3]
    # solve_ex: non-finite solution and info, LinAlgError only when asked
    X, info = tp.linalg.solve_ex(to_tp(A), tp.ones(2, 3, 1))
    assert info.tolist() == torch.linalg.solve_ex(A, torch.ones(2, 3, 1)).info.tolist() == [0, 3]
    assert not bool(X[1].isfinite().all()) and bool(X[0].isfinite().all())
    with pytest.raises(tp.linalg.LinAlgError, match='Batch element 1.*singular'):
        tp.linalg.solve_ex(to_tp(A), tp.ones(2, 3, 1), check_errors=True)


def test_pivot_false_and_dtypes_as_pytorch():
    with pytest.raises(RuntimeError, match='LU without pivoting is not implemented on the CPU'):
        tp.linalg.lu_factor(tp.eye(3), pivot=False)
    with pytest.raises(NotImplementedError, match='"lu_cpu" not implemented for \'Long\''):
        tp.linalg.lu_factor(tp.ones(3, 3, dtype=tp.int64))
    # empty inputs of any dtype return before the dtype check, as PyTorch's kernel
    LU, piv, info = tp.linalg.lu_factor_ex(tp.ones(0, 3, dtype=tp.float16))
    assert LU.dtype == tp.float16 and tuple(piv.shape) == (0,) and info.item() == 0


def test_return_types():
    A = to_tp(well_conditioned(3, 3))
    assert type(tp.linalg.lu_factor(A)).__name__ == 'linalg_lu_factor'
    assert tp.linalg.lu_factor_ex(A)._fields == ('LU', 'pivots', 'info')
    assert tp.linalg.lu(A)._fields == ('P', 'L', 'U')
    assert tp.lu_unpack(*tp.linalg.lu_factor(A))._fields == ('P', 'L', 'U')
    assert tp.linalg.solve_ex(A, A)._fields == ('result', 'info')
    assert tp.triangular_solve(A, A)._fields == ('solution', 'cloned_coefficient')
    assert tp.linalg.ldl_factor_ex(A + A.mT)._fields == ('LD', 'pivots', 'info')
    assert tp.linalg.ldl_factor(A + A.mT)._fields == ('LD', 'pivots')
    # the legacy tp.lu: a plain pair, PyTorch's _lu_with_info with get_infos; methods plain tuples
    assert type(tp.lu(A)) is tuple and len(tp.lu(A)) == 2
    assert tp.lu(A, get_infos=True)._fields == ('LU', 'pivots', 'info')
    assert type(A.lu(get_infos=True)) is tuple and len(A.lu(get_infos=True)) == 3


def test_tuple_out():
    A = to_tp(well_conditioned(2, 3, 3))
    out = (tp.empty(0, dtype=tp.float64), tp.empty(0, dtype=tp.int32), tp.empty(0, dtype=tp.int32))
    r = tp.linalg.lu_factor_ex(A, out=out)
    assert r.LU is out[0] and tuple(out[1].shape) == (2, 3)
    close(out[0], torch.linalg.lu_factor_ex(to_torch(A)).LU)
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        tp.linalg.lu(A, out=tp.empty(0))
    with pytest.raises(RuntimeError, match='dtype'):
        tp.linalg.lu_factor(A, out=(tp.empty(0, dtype=tp.float64), tp.empty(0)))
    P, L, U = (tp.empty(0, dtype=tp.float64) for _ in range(3))
    tp.lu_unpack(*tp.linalg.lu_factor(A), out=(P, L, U))
    close(P @ L @ U, to_torch(A))


# --------------------------------------------------------------------------- solves
@pytest.mark.parametrize('left', [True, False])
@pytest.mark.parametrize('adjoint', [True, False])
def test_lu_solve_variants(left, adjoint):
    A = well_conditioned(2, 4, 4, seed=2)
    B = rand(3, 1, 4, 2, seed=3) if left else rand(3, 1, 2, 4, seed=3)
    LU, piv = torch.linalg.lu_factor(A)
    X = tp.linalg.lu_solve(to_tp(LU), to_tp(piv), to_tp(B), left=left, adjoint=adjoint)
    ref = torch.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint)
    close(X, ref)
    assert tuple(X.stride()) == ref.stride()
    opA, Xt = (A.mT if adjoint else A), to_torch(X)
    torch.testing.assert_close(opA @ Xt if left else Xt @ opA, B.expand(3, 2, *B.shape[-2:]))


def test_legacy_lu_solve_and_triangular_solve():
    A = well_conditioned(3, 3)
    B = rand(3, 2, seed=4)
    LU, piv = torch.linalg.lu_factor(A)
    close(tp.lu_solve(to_tp(B), to_tp(LU), to_tp(piv)), torch.lu_solve(B, LU, piv))
    close(to_tp(B).lu_solve(to_tp(LU), to_tp(piv)), torch.lu_solve(B, LU, piv))
    for upper in (True, False):
        for transpose in (True, False):
            for unit in (True, False):
                ours = tp.triangular_solve(to_tp(B), to_tp(A), upper, transpose, unit)
                ref = torch.triangular_solve(B, A, upper, transpose, unit)
                close(ours.solution, ref.solution)
                close(ours.cloned_coefficient, ref.cloned_coefficient)
    with pytest.raises(RuntimeError, match='Pivots given to lu_solve must all be greater or equal to 1'):
        tp.linalg.lu_solve(to_tp(LU), tp.zeros(3, dtype=tp.int32), to_tp(B))


def test_solve_ex_matches_solve_and_reports_the_info_of_A():
    A, B = well_conditioned(2, 3, 3, seed=5), rand(2, 3, 2, seed=6)
    X, info = tp.linalg.solve_ex(to_tp(A), to_tp(B))
    close(X, torch.linalg.solve(A, B))
    assert info.tolist() == [0, 0]
    # info is that of A's own LU (A^T's differs here), whatever A's layout
    S = torch.tensor([[1., 2, 3], [2, 4, 6], [1, 0, 1]])
    for M in (S, S.mT.contiguous().mT, S.mT, S.mT.contiguous()):
        assert tp.linalg.solve_ex(to_tp(M) if M.is_contiguous() else to_tp(M.contiguous()), tp.ones(3)).info.item() == \
            torch.linalg.solve_ex(M, torch.ones(3)).info.item() == torch.linalg.lu_factor_ex(M).info.item()


# ------------------------------------------------------------------------------ LDL
def test_ldl_factor_and_solve_with_2x2_pivots():
    A = torch.tensor([[0., 1, 2, 1], [1, 0, 3, 0], [2, 3, 0, 1], [1, 0, 1, 4]], dtype=torch.float64)
    LD, piv, info = tp.linalg.ldl_factor_ex(to_tp(A))
    tLD, tpiv, tinfo = torch.linalg.ldl_factor_ex(A)
    close(LD, tLD)
    assert torch.equal(to_torch(piv), tpiv) and (to_torch(piv) < 0).any()
    B = rand(4, 3, seed=7)
    X = tp.linalg.ldl_solve(LD, piv, to_tp(B))
    close(to_tp(A) @ X, B)
    close(X, torch.linalg.ldl_solve(tLD, tpiv, B))
    with pytest.raises(RuntimeError, match='Unknown error code: 1'):
        tp.linalg.ldl_factor(tp.zeros(3, 3))
    assert tp.linalg.ldl_factor_ex(tp.zeros(3, 3)).info.item() == 1
    with pytest.raises(RuntimeError, match='must all satisfy'):
        tp.linalg.ldl_solve(LD, tp.zeros(4, dtype=tp.int32), to_tp(B))


def test_ldl_is_not_differentiable_as_in_pytorch():
    A = to_tp(well_conditioned(3, 3)).requires_grad_()
    LD, _ = tp.linalg.ldl_factor(A + A.mT)
    with pytest.raises(NotImplementedError, match='derivative'):
        LD.sum().backward()


# ------------------------------------------------------------------ Householder products
@pytest.mark.parametrize('shape', [(5, 3), (2, 4, 4), (3, 5)])
def test_ormqr_orgqr_against_explicit_Q(shape):
    a, tau = torch.geqrf(rand(*shape, seed=8))
    m = shape[-2]
    Q = torch.ormqr(a, tau, torch.eye(m, dtype=a.dtype).expand(*shape[:-2], m, m))
    for left in (True, False):
        for transpose in (True, False):
            C = rand(*shape[:-2], m, 2, seed=9) if left else rand(*shape[:-2], 2, m, seed=9)
            ours = tp.ormqr(to_tp(a), to_tp(tau), to_tp(C), left, transpose)
            close(ours, torch.ormqr(a, tau, C, left, transpose))
            Qt = Q.mT if transpose else Q
            close(ours, Qt @ C if left else C @ Qt)
    if shape[-2] >= shape[-1]:
        close(tp.orgqr(to_tp(a), to_tp(tau)), torch.orgqr(a, tau))
        close(to_tp(a).orgqr(to_tp(tau)), Q[..., :shape[-1]])
        # fewer reflectors than columns
        close(tp.orgqr(to_tp(a), to_tp(tau[..., :1])), torch.orgqr(a, tau[..., :1]))


def test_nuclear_and_frobenius_norms():
    A = rand(2, 3, 4, seed=10)
    close(tp.nuclear_norm(to_tp(A)), torch.nuclear_norm(A))
    close(tp.nuclear_norm(to_tp(A), True), torch.nuclear_norm(A, True))
    close(tp.nuclear_norm(to_tp(A), (0, 2), keepdim=True), torch.nuclear_norm(A, (0, 2), keepdim=True))
    close(tp.frobenius_norm(to_tp(A), (1, 2)), torch.frobenius_norm(A, (1, 2)))
    close(tp.frobenius_norm(to_tp(A), 1), torch.frobenius_norm(A, 1))
    with pytest.raises(RuntimeError, match='at most 2 dimensions'):
        tp.frobenius_norm(to_tp(A), (0, 1, 2))


# ---------------------------------------------------------------------- gradients
def _grad_pair(fn_torch, fn_tp, inputs, diff, seed=0):
    """Gradients of sum(cotangent * output) for every floating output, in both libraries."""
    rng = np.random.default_rng(seed)
    ti = [x.clone().requires_grad_(i in diff) for i, x in enumerate(inputs)]
    pi = [to_tp(x).requires_grad_(i in diff) if x.is_floating_point() else to_tp(x)
          for i, x in enumerate(inputs)]
    to, po = fn_torch(*ti), fn_tp(*pi)
    to = to if isinstance(to, tuple) else (to,)
    po = po if isinstance(po, tuple) else (po,)
    pairs = [(a, b) for a, b in zip(to, po) if a.requires_grad]
    cots = [rng.standard_normal(tuple(a.shape)) for a, _ in pairs]
    tg = torch.autograd.grad([a for a, _ in pairs], [ti[i] for i in diff], [torch.from_numpy(c) for c in cots])
    pg = tp.autograd.grad([b for _, b in pairs], [pi[i] for i in diff], [tp.from_numpy(c.copy()) for c in cots])
    for a, b in zip(tg, pg):
        close(b, a, 1e-9)
    return pi


GRAD_CASES = {
    'lu_factor_square': (torch.linalg.lu_factor_ex, tp.linalg.lu_factor_ex, lambda: [well_conditioned(3, 3)], [0]),
    'lu_factor_wide': (torch.linalg.lu_factor_ex, tp.linalg.lu_factor_ex, lambda: [rand(3, 5)], [0]),
    'lu_factor_tall': (torch.linalg.lu_factor_ex, tp.linalg.lu_factor_ex, lambda: [rand(5, 3)], [0]),
    'lu_wide': (torch.linalg.lu, tp.linalg.lu, lambda: [rand(2, 2, 4)], [0]),
    'lu_tall': (torch.linalg.lu, tp.linalg.lu, lambda: [rand(4, 2)], [0]),
    'lu_unpack': (torch.lu_unpack, tp.lu_unpack,
                  lambda: list(torch.linalg.lu_factor(well_conditioned(3, 3))), [0]),
    'solve_ex': (torch.linalg.solve_ex, tp.linalg.solve_ex,
                 lambda: [well_conditioned(2, 3, 3), rand(3, 2)], [0, 1]),
    'solve_ex_right_colmajor': (lambda A, B: torch.linalg.solve_ex(A.mT, B, left=False),
                                lambda A, B: tp.linalg.solve_ex(A.mT, B, left=False),
                                lambda: [well_conditioned(3, 3), rand(2, 3)], [0, 1]),
    'triangular_solve': (lambda b, A: torch.triangular_solve(b, A, False, True, False),
                         lambda b, A: tp.triangular_solve(b, A, False, True, False),
                         lambda: [rand(3, 2), well_conditioned(3, 3)], [0, 1]),
    'ormqr': (lambda a, t, c: torch.ormqr(a, t, c, False, True), lambda a, t, c: tp.ormqr(a, t, c, False, True),
              lambda: list(torch.geqrf(rand(4, 3))) + [rand(2, 4)], [0, 1, 2]),
}
for _left in (True, False):
    for _adj in (True, False):
        GRAD_CASES[f'lu_solve_{_left}_{_adj}'] = (
            lambda L, p, B, left=_left, adj=_adj: torch.linalg.lu_solve(L, p, B, left=left, adjoint=adj),
            lambda L, p, B, left=_left, adj=_adj: tp.linalg.lu_solve(L, p, B, left=left, adjoint=adj),
            lambda: list(torch.linalg.lu_factor(well_conditioned(3, 3))) + [rand(2, 3, 3)], [0, 2])


@pytest.mark.parametrize('name', list(GRAD_CASES))
def test_gradients_match_torch_and_gradcheck(name):
    fn_torch, fn_tp, make, diff = GRAD_CASES[name]
    inputs = make()
    pi = _grad_pair(fn_torch, fn_tp, inputs, diff)
    leaves = tuple(pi[i] for i in diff)

    def f(*xs):
        args = list(pi)
        for i, x in zip(diff, xs):
            args[i] = x
        out = fn_tp(*args)
        return tuple(o for o in (out if isinstance(out, tuple) else (out,)) if o.is_floating_point())
    assert tp.autograd.gradcheck(f, leaves)
    assert tp.autograd.gradgradcheck(f, leaves, atol=1e-4, rtol=1e-3)


# ------------------------------------------------------- randomized and iterative solvers
def _same_up_to_sign(a, b, tol=1e-8):
    """Columns of a and b equal up to one sign per column."""
    a, b = to_torch(a), b
    signs = torch.sign((a * b).sum(-2, keepdim=True))
    torch.testing.assert_close(a * signs, b, rtol=tol, atol=tol)


@pytest.mark.parametrize('shape', [(20, 12), (12, 20), (3, 15, 10)])
def test_svd_lowrank_same_draws_as_torch(shape):
    A = rand(*shape, seed=11)
    torch.manual_seed(3)
    tp.manual_seed(3)
    U, S, V = tp.svd_lowrank(to_tp(A), q=6)
    tU, tS, tV = torch.svd_lowrank(A, q=6)
    close(S, tS, 1e-9)
    _same_up_to_sign(U, tU)
    _same_up_to_sign(V, tV)


def test_svd_lowrank_recovers_a_low_rank_matrix():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(2, 30, 4, generator=g, dtype=torch.float64) @ torch.randn(4, 25, generator=g, dtype=torch.float64)
    M = rand(25, seed=2)  # a mean row, broadcast
    tp.manual_seed(0)
    U, S, V = tp.svd_lowrank(to_tp(A + M), q=6, niter=3, M=to_tp(M))
    close(U @ S.diag_embed() @ V.mT, A, 1e-8)
    close(S[..., :4], torch.linalg.svdvals(A)[..., :4], 1e-8)
    close(U.mT @ U, torch.eye(6, dtype=torch.float64).expand(2, 6, 6), 1e-10)


def test_pca_lowrank():
    X = rand(50, 6, seed=12)
    torch.manual_seed(4)
    tp.manual_seed(4)
    U, S, V = tp.pca_lowrank(to_tp(X), q=6)
    close(S, torch.linalg.svdvals(X - X.mean(0)), 1e-9)
    tU, tS, tV = torch.pca_lowrank(X, q=6)
    _same_up_to_sign(V, tV)
    with pytest.raises(ValueError, match='q\\(=7\\)'):
        tp.pca_lowrank(to_tp(X), q=7)


def _spd(m, seed, lo=1.0, hi=10.0):
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(m, m, generator=g, dtype=torch.float64))
    return Q @ torch.diag(torch.linspace(lo, hi, m, dtype=torch.float64)) @ Q.mT


@pytest.mark.parametrize('kw', [dict(k=2), dict(k=3, largest=False), dict(k=2, method='basic'),
                                dict(k=2, n=4), dict(k=1, niter=200, tol=1e-12)])
def test_lobpcg_same_draws_as_torch(kw):
    A = _spd(30, 0)
    torch.manual_seed(5)
    tp.manual_seed(5)
    E, X = tp.lobpcg(to_tp(A), **kw)
    tE, tX = torch.lobpcg(A, **kw)
    close(E, tE, 1e-8)
    _same_up_to_sign(X, tX, 1e-6)
    # the eigenpairs themselves
    ev = torch.linalg.eigvalsh(A)
    want = ev.flip(0)[:kw['k']] if kw.get('largest', True) else ev[:kw['k']]
    close(E, want, 1e-7)
    close(to_tp(A) @ X, to_torch(X) * to_torch(E), 1e-6)


def test_lobpcg_generalized_batched_and_tracker():
    A = torch.stack([_spd(24, 1), _spd(24, 2, 2.0, 5.0)])
    B = torch.stack([_spd(24, 3, 1.0, 2.0), torch.eye(24, dtype=torch.float64)])
    steps = []
    tp.manual_seed(6)
    E, X = tp.lobpcg(to_tp(A), k=2, B=to_tp(B), tracker=lambda w: steps.append(
        (w.iparams['batch_index'], w.ivars['istep'])))
    for b in (0, 1):  # called after every step of each matrix of the batch
        mine = [s for i, s in steps if i == b]
        assert mine == list(range(1, len(mine) + 1))
    for i in range(2):
        L = torch.linalg.cholesky(B[i])
        Li = torch.linalg.inv(L)
        ev = torch.linalg.eigvalsh(Li @ A[i] @ Li.mT).flip(0)[:2]
        close(E[i], ev, 1e-7)
    close(to_tp(A) @ X, to_torch(to_tp(B) @ X) * to_torch(E).unsqueeze(-2), 1e-6)
    with pytest.raises(ValueError, match='smaller than 3 x the number of requested eigenpairs'):
        tp.lobpcg(to_tp(A[0][:5, :5]), k=2)


@pytest.mark.parametrize('k,largest', [(2, True), (3, False), (4, True), (1, False)])
def test_lobpcg_gradient_matches_torch(k, largest):
    m = 12
    A = _spd(m, 7)
    At = A.clone().requires_grad_()
    Ap = to_tp(A).requires_grad_()
    W = torch.ones(m, m, dtype=torch.float64) + torch.eye(m, dtype=torch.float64)
    torch.manual_seed(8)
    tp.manual_seed(8)
    tE, tX = torch.lobpcg(At, k=k, largest=largest)
    E, X = tp.lobpcg(Ap, k=k, largest=largest)
    (tg,) = torch.autograd.grad((tE ** 2).sum() + ((tX @ tX.mT) * W).sum(), At)
    (g,) = tp.autograd.grad((E * E).sum() + ((X @ X.mT) * to_tp(W)).sum(), Ap)
    close(g, tg, 1e-7)
    close(g, tg.mT, 1e-7)  # symmetric
