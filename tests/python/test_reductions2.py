"""Checks on reductions2 ops beyond the op database: the index PyTorch's CPU kernels report
on ties in long rows (Note [Index choice on ties]), and the norms that wait for SVD."""
import numpy as np
import pytest
import torch

import tensorplay as tp


@pytest.mark.parametrize('n', [2, 3, 17, 100, 1000, 5000])
@pytest.mark.parametrize('with_nan', [False, True])
def test_tie_indices_match_torch(n, with_nan):
    g = torch.Generator().manual_seed(n)
    x = torch.randint(0, 4, (5, n), generator=g).float()
    if with_nan:
        x[x == 3] = float('nan')
    y = tp.from_numpy(x.numpy())
    for name, args in [('kthvalue', (max(1, n // 3), 1)), ('median', (1,)), ('nanmedian', (1,)),
                       ('mode', (1,)), ('cummax', (1,)), ('cummin', (1,))]:
        ours, ref = getattr(tp, name)(y, *args), getattr(torch, name)(x, *args)
        assert np.array_equal(ours.indices.numpy(), ref.indices.numpy()), name
        assert np.array_equal(ours.values.numpy(), ref.values.numpy(), equal_nan=True), name


@pytest.mark.parametrize('call', [
    lambda lib, x: lib.linalg.matrix_norm(x, 2), lambda lib, x: lib.linalg.matrix_norm(x, -2),
    lambda lib, x: lib.linalg.matrix_norm(x, 'nuc'), lambda lib, x: lib.linalg.norm(x, 'nuc'),
    lambda lib, x: lib.linalg.norm(x, 2), lambda lib, x: lib.norm(x, 'nuc'),
    lambda lib, x: x.norm('nuc'), lambda lib, x: lib.linalg.matrix_norm(x, 2, dim=(1, 0), keepdim=True)])
def test_svd_norms_match_torch_with_gradients(call):
    """The singular-value norms (ord 2, -2, 'nuc') and their gradients, as torch's."""
    x = torch.rand(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    tx = x.clone().requires_grad_()
    expected = call(torch, tx)
    (g_expected,) = torch.autograd.grad(expected.sum(), tx)
    px = tp.from_numpy(x.numpy().copy()).requires_grad_()
    actual = call(tp, px)
    (g_actual,) = tp.autograd.grad(actual.sum(), px)
    assert tuple(actual.shape) == tuple(expected.shape)
    torch.testing.assert_close(torch.from_numpy(np.array(actual.detach().numpy())), expected.detach())
    torch.testing.assert_close(torch.from_numpy(np.array(g_actual.numpy())), g_expected)


@pytest.mark.parametrize('name', ['quantile', 'nanquantile'])
def test_quantile_size_limit(name):
    """PyTorch refuses inputs above 2**24 elements; 2**24 itself works."""
    for lib in (torch, tp):
        with pytest.raises(RuntimeError, match='too large'):
            getattr(lib, name)(lib.zeros(2 ** 24 + 1), 0.5)
    assert getattr(tp, name)(tp.zeros(2 ** 24), 0.5).item() == 0.0


@pytest.mark.parametrize("dims", [(1,), (1, 2), (2,), (0, 1), (1, 2, 3), (0, 3), (1, 3), (2, 3)])
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "prod", "all", "any"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions_over_a_middle_block_match_torch(dims, op, keepdim):
    # reduced dims between kept ones (the slab path) and the permuted fallback agree with torch
    x = np.random.default_rng(2).standard_normal((3, 4, 1, 5, 6)).astype(np.float32)
    if op in ("all", "any"):
        x = x > 0.3
    dims5 = tuple(d + (d >= 2) for d in dims)  # skip the size-1 dim, which the path ignores
    a = getattr(torch.from_numpy(x), op)(dim=dims5, keepdim=keepdim) if op not in ("prod",) else \
        torch.from_numpy(x).prod(dim=dims5[0], keepdim=keepdim)
    b = getattr(tp.from_numpy(x), op)(dim=dims5, keepdim=keepdim) if op not in ("prod",) else \
        tp.from_numpy(x).prod(dim=dims5[0], keepdim=keepdim)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('layout', ['contiguous', 'transposed', 'strided', 'middle'])
def test_result_layouts_match_torch_on_cpu(layout):
    """sort / argsort / msort keep the input's strides (dense ones in their order when the
    input is not dense), topk's results are contiguous and a 1-D q puts a strided q dim first
    in quantile's result, as in PyTorch; values and indices agree too."""
    base = torch.randn(400, generator=torch.Generator().manual_seed(1))
    views = {'contiguous': lambda b: b[:60].view(3, 4, 5),
             'transposed': lambda b: b[:60].view(5, 4, 3).permute(2, 1, 0),
             'strided': lambda b: b.as_strided((3, 4, 5), (40, 10, 2)),
             'middle': lambda b: b[:60].view(3, 5, 4).transpose(1, 2)}
    x = views[layout](base)
    y = views[layout](tp.from_numpy(base.numpy().copy()))
    q = [0.1, 0.5, 0.9]
    calls = [('sort', lambda lib, t: lib.sort(t, dim=1, stable=True)),
             ('sort desc', lambda lib, t: lib.sort(t, dim=0, descending=True, stable=True)),
             ('argsort', lambda lib, t: lib.argsort(t, dim=-1, stable=True)),
             ('msort', lambda lib, t: lib.msort(t)),
             ('topk', lambda lib, t: lib.topk(t, 2, 1)),
             ('quantile', lambda lib, t: lib.quantile(t, lib.tensor(q), 1, True)),
             ('quantile all', lambda lib, t: lib.quantile(t, lib.tensor(q)))]
    for name, call in calls:
        ours, ref = call(tp, y), call(torch, x)
        ours = ours if isinstance(ours, tuple) else (ours,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        for a, b in zip(ours, ref):
            assert (tuple(a.shape), tuple(a.stride())) == (tuple(b.shape), b.stride()), name
            torch.testing.assert_close(torch.from_numpy(np.array(a.numpy())), b, msg=name)
