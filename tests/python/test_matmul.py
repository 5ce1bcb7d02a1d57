"""Matrix products beyond the op database: einsum equations against torch, the @ operator,
out= aliasing an input, cross's deprecation warning, linalg_cross, the batched GEMM path."""
import warnings

import pytest
import torch

import tensorplay as tp


def _tp(t):
    return tp.from_dlpack(t.clone())


def _close(ours, ref, tol=1e-4):
    got = torch.from_dlpack(ours)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    torch.testing.assert_close(got, ref, rtol=tol, atol=tol)


EQUATIONS = [
    ('ij,jk', [(2, 3), (3, 4)]), ('ij,jk->', [(2, 3), (3, 4)]), ('ii', [(3, 3)]),
    ('ii->i', [(3, 3)]), ('i,j', [(3,), (2,)]), ('iJ', [(2, 3)]), ('i...->...', [(2, 3)]),
    ('...ij,...jk', [(5, 2, 3), (3, 4)]), ('...ij,...jk->...ik', [(3, 1, 2, 3), (5, 3, 4)]),
    ('bij,bjk->bik', [(2, 3, 4), (1, 4, 5)]), ('ijk,ikl,lm->jm', [(2, 3, 4), (2, 4, 5), (5, 6)]),
    ('iij->j', [(3, 3, 4)]), ('ij,kl->ijkl', [(2, 3), (4, 5)]), ('i,i->i', [(3,), (1,)]),
    ('b...i,b...i->b...', [(2, 3, 4), (2, 1, 4)]), ('ij->ji', [(2, 3)]),
    ('i...j,j...k->...ik', [(2, 5, 3), (3, 5, 4)]), ('ab,bc,cd,de->ae', [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ('aab,bc->ca', [(3, 3, 4), (4, 2)]), ('...', [(2, 3)]), ('i,i', [(0,), (0,)]),
]


@pytest.mark.parametrize('eq,shapes', EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_equations(eq, shapes):
    ops = [torch.randn(s, dtype=torch.float64) for s in shapes]
    _close(tp.einsum(eq, *[_tp(o) for o in ops]), torch.einsum(eq, *ops), 1e-10)
    _close(tp.einsum(eq, [_tp(o) for o in ops]), torch.einsum(eq, ops), 1e-10)


def test_einsum_sublist_format():
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    _close(tp.einsum(_tp(a), [0, 1], _tp(b), [1, 2], [0, 2]), torch.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    _close(tp.einsum(_tp(a), [Ellipsis, 1], _tp(b), [1, 2]), torch.einsum(a, [Ellipsis, 1], b, [1, 2]))


def test_einsum_integer_sums_widen_like_torch():
    a = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    assert torch.from_dlpack(tp.einsum('ij->i', _tp(a))).dtype == torch.einsum('ij->i', a).dtype
    with pytest.raises(RuntimeError):  # torch: the summed operand is int64, the other int32
        tp.einsum('ij,jk->i', _tp(a), _tp(a.T.contiguous()))


def test_matmul_operator_and_reflected():
    a, b = torch.randn(5, 2, 3), torch.randn(3, 4)
    _close(_tp(a) @ _tp(b), a @ b)
    _close(_tp(b).__rmatmul__(_tp(a)), a @ b)
    with pytest.raises(TypeError):
        _tp(a) @ 2
    with pytest.raises(TypeError):
        2 @ _tp(a)


@pytest.mark.parametrize('op', ['mm', 'matmul'])
def test_out_aliasing_an_input_gives_the_product(op):
    # (PyTorch's BLAS path reads the output while writing it here; we compute first.)
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    x = _tp(a)
    getattr(tp, op)(x, _tp(b), out=x)
    _close(x, a @ b)


def test_out_written_in_place_when_contiguous():
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    out = tp.empty(4, 5)
    ptr = out.data_ptr()
    tp.matmul(_tp(a), _tp(b), out=out)
    assert out.data_ptr() == ptr
    _close(out, a @ b)


def test_out_noncontiguous_and_resized():
    a, b = torch.randn(4, 3), torch.randn(3, 5)
    out = tp.zeros(5, 4).t()
    tp.mm(_tp(a), _tp(b), out=out)
    _close(out, a @ b)
    small = tp.zeros(1)
    tp.matmul(_tp(a), _tp(b), out=small)
    _close(small, a @ b)


def test_addmm_inplace_transposed_self_and_beta_zero_nan():
    s, a, b = torch.randn(5, 4), torch.randn(4, 3), torch.randn(3, 5)
    x = _tp(s).t()
    x.addmm_(_tp(a), _tp(b), beta=0.5, alpha=2)
    _close(x, torch.addmm(s.t(), a, b, beta=0.5, alpha=2))
    nan = torch.full((4, 5), float('nan'))
    _close(tp.addmm(_tp(nan), _tp(a), _tp(b), beta=0), a @ b)


def test_cross_default_dim_warns():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    with pytest.warns(UserWarning, match='without specifying the dim'):
        r = tp.cross(_tp(a), _tp(b))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        _close(r, torch.cross(a, b))
    with pytest.warns(UserWarning):
        _tp(a).cross(_tp(b))


def test_linalg_cross():
    a, b = torch.randn(4, 3), torch.randn(1, 3)
    _close(tp.linalg.cross(_tp(a), _tp(b)), torch.linalg.cross(a, b))
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    _close(tp.linalg.cross(_tp(a), _tp(b), dim=0), torch.linalg.cross(a, b, dim=0))
    with pytest.raises(RuntimeError, match='must have length 3'):
        tp.linalg.cross(_tp(a), _tp(b))


@pytest.mark.parametrize('threads', [1, 2])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.bfloat16, torch.int32])
def test_batched_products_over_threads(threads, dtype):
    old = tp.get_num_threads()
    tp.set_num_threads(threads)
    try:
        a = torch.randint(-3, 4, (9, 1, 7, 5)).to(dtype)
        b = torch.randint(-3, 4, (4, 5, 6)).to(dtype)
        _close(tp.matmul(_tp(a), _tp(b)), torch.matmul(a, b), 1e-2)
        _close(tp.matmul(_tp(a).transpose(-1, -2), _tp(a)), a.transpose(-1, -2) @ a, 1e-2)
    finally:
        tp.set_num_threads(old)
