"""Derivative formulas beyond the op database's samples: inputs where PyTorch's formulas
take special paths (zeros in products, -inf in logcumsumexp, overlapping strided views,
shared extrema), compared with torch, and second derivatives (gradgradcheck)."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _pair(values):
    a = np.asarray(values, dtype=np.float64)
    return (tp.tensor(a, dtype=tp.float64).requires_grad_(),
            torch.tensor(a, dtype=torch.float64).requires_grad_())


def _check(fn_tp, fn_torch, *values, create_graph=False):
    """Runs both, backpropagates the same cotangent, compares every input's gradient."""
    pairs = [_pair(v) for v in values]
    out_p = fn_tp(*[p for p, _ in pairs])
    out_t = fn_torch(*[t for _, t in pairs])
    cot = np.random.default_rng(0).standard_normal(tuple(out_t.shape))
    got = tp.autograd.grad(out_p, [p for p, _ in pairs], tp.tensor(cot, dtype=tp.float64),
                           allow_unused=True, create_graph=create_graph)
    want = torch.autograd.grad(out_t, [t for _, t in pairs], torch.from_numpy(cot), allow_unused=True)
    for g, w in zip(got, want):
        g = np.zeros(tuple(w.shape)) if g is None else np.asarray(g.detach().tolist(), dtype=np.float64)
        w = np.zeros(g.shape) if w is None else w.detach().numpy()
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9, equal_nan=True)


ZEROS = [[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0], [1.0, 2.0, 3.0, 4.0]]


@pytest.mark.parametrize('create_graph', [False, True])
@pytest.mark.parametrize('call', [lambda m, x: m.prod(x), lambda m, x: m.prod(x, 1),
                                  lambda m, x: m.prod(x, 0, keepdim=True),
                                  lambda m, x: m.cumprod(x, 1), lambda m, x: m.cumprod(x, 0)])
def test_products_with_zeros(call, create_graph):
    _check(lambda x: call(tp, x), lambda x: call(torch, x), ZEROS, create_graph=create_graph)


def test_prod_single_zero():
    _check(lambda x: tp.prod(x), lambda x: torch.prod(x), [2.0, 0.0, 3.0])


def test_logcumsumexp_with_minus_inf():
    v = [[-np.inf, 0.5, -np.inf, 2.0], [1.0, -np.inf, -1.0, 0.0]]
    _check(lambda x: tp.logcumsumexp(x, 1), lambda x: torch.logcumsumexp(x, 1), v)


@pytest.mark.parametrize('geometry', [((2, 2), (1, 2), 1), ((3, 3), (1, 1), 0), ((2, 3), (2, 1), 2)])
def test_as_strided_overlapping_views(geometry):
    size, stride, offset = geometry
    v = np.arange(1.0, 9.0)
    _check(lambda x: tp.as_strided(x, size, stride, offset),
           lambda x: torch.as_strided(x, size, stride, offset), v)


def test_as_strided_of_expanded_input():
    v = [1.0, 2.0, 3.0]
    _check(lambda x: tp.as_strided(x.expand(2, 3), (3,), (1,)),
           lambda x: torch.as_strided(x.expand(2, 3), (3,), (1,)), v)


@pytest.mark.parametrize('reduce', ['sum', 'prod', 'mean', 'amax', 'amin'])
@pytest.mark.parametrize('include_self', [True, False])
def test_scatter_reduce_ties_and_zeros(reduce, include_self):
    idx = [0, 1, 0, 1, 2, 0]
    self_v, src_v = [1.0, 0.0, 2.0], [1.0, 3.0, 0.0, 0.0, 2.0, 1.0]
    _check(lambda s, x: s.scatter_reduce(0, tp.tensor(idx), x, reduce, include_self=include_self),
           lambda s, x: s.scatter_reduce(0, torch.tensor(idx), x, reduce, include_self=include_self),
           self_v, src_v)


@pytest.mark.parametrize('reduce', ['prod', 'mean', 'amax', 'amin'])
def test_index_reduce_ties(reduce):
    idx = [0, 2, 0]
    self_v, src_v = [[1.0, 2.0], [3.0, 0.0], [5.0, 6.0]], [[1.0, 0.0], [7.0, 6.0], [1.0, 2.0]]
    _check(lambda s, x: s.index_reduce(0, tp.tensor(idx), x, reduce),
           lambda s, x: s.index_reduce(0, torch.tensor(idx), x, reduce), self_v, src_v)


def test_scatter_reduce_prod_shared_zeros_refuses_double_backward():
    s = tp.ones(2, dtype=tp.float64, requires_grad=True)
    x = tp.tensor([0.0, 0.0, 1.0], dtype=tp.float64, requires_grad=True)
    out = s.scatter_reduce(0, tp.tensor([0, 0, 1]), x, 'prod')
    (g,) = tp.autograd.grad(out.sum(), [x])
    assert g.tolist() == [0.0, 0.0, 1.0]
    out = s.scatter_reduce(0, tp.tensor([0, 0, 1]), x, 'prod')
    with pytest.raises(RuntimeError, match='scatter_reduce'):
        tp.autograd.grad(out.sum(), [x], create_graph=True)


def test_quantile_ties_and_nan():
    v = [[3.0, 1.0, 2.0, 1.0, 5.0], [1.0, np.nan, 2.0, 0.5, 0.5]]
    for fn in ('quantile', 'nanquantile'):
        _check(lambda x, q: getattr(tp, fn)(x, q, 1), lambda x, q: getattr(torch, fn)(x, q, 1),
               v, [0.3, 0.5, 1.0])


def test_block_diag_records_history():
    a = tp.ones(2, 2, dtype=tp.float64, requires_grad=True)
    b = tp.ones(3, dtype=tp.float64, requires_grad=True)
    out = tp.block_diag(a, b, tp.tensor(2.0))
    assert out.requires_grad and tuple(out.shape) == (4, 6)
    ga, gb = tp.autograd.grad(out.sum(), [a, b])
    assert ga.tolist() == [[1.0, 1.0], [1.0, 1.0]] and gb.tolist() == [1.0, 1.0, 1.0]


def _double(*shape, seed=0, low=0.5, high=1.5):
    a = np.random.default_rng(seed).uniform(low, high, shape)
    return tp.tensor(a, dtype=tp.float64).requires_grad_()


IDX = tp.tensor([0, 1, 0])
TWICE = {
    'logit': (lambda x: tp.logit(x * 0.5), [(2, 3)]),
    'copysign': (lambda x, y: tp.copysign(x, y - 1.0), [(2, 3), (2, 3)]),
    'prod': (lambda x: tp.prod(x, 1), [(2, 3)]),
    'prod_zero': (lambda x: tp.prod(x * tp.tensor([1.0, 0.0, 1.0], dtype=tp.float64)), [(3,)]),
    'cumprod': (lambda x: tp.cumprod(x, 1), [(2, 3)]),
    'cumprod_zero': (lambda x: tp.cumprod(x * tp.tensor([1.0, 0.0, 1.0], dtype=tp.float64), 0), [(3,)]),
    'logcumsumexp': (lambda x: tp.logcumsumexp(x, 0), [(3, 2)]),
    'diagonal': (lambda x: tp.diagonal(x, 1) ** 2, [(3, 4)]),
    'diag_embed': (lambda x: tp.diag_embed(x, -1) ** 2, [(2, 3)]),
    'unfold': (lambda x: x.unfold(0, 2, 1) ** 2, [(4,)]),
    'as_strided': (lambda x: tp.as_strided(x, (2, 2), (1, 2)) ** 2, [(6,)]),
    'take_along_dim': (lambda x: tp.take_along_dim(x, tp.tensor([[1], [0]]), 1) ** 2, [(2, 3)]),
    'scatter_reduce_mean': (lambda s, x: s.scatter_reduce(0, IDX, x, 'mean') ** 2, [(2,), (3,)]),
    'scatter_reduce_prod': (lambda s, x: s.scatter_reduce(0, IDX, x, 'prod'), [(2,), (3,)]),
    'tensordot': (lambda x, y: tp.tensordot(x, y, dims=([1, 0], [0, 2])) ** 2, [(3, 2), (2, 4, 3)]),
    'einsum': (lambda x, y: tp.einsum('ij,jk->ik', x, y) ** 2, [(2, 3), (3, 2)]),
    'quantile': (lambda x: tp.quantile(x, 0.3, 1) ** 2, [(2, 4)]),
}


@pytest.mark.parametrize('name', sorted(TWICE))
def test_gradgradcheck(name):
    fn, shapes = TWICE[name]
    inputs = tuple(_double(*s, seed=i) for i, s in enumerate(shapes))
    assert tp.autograd.gradgradcheck(fn, inputs)
