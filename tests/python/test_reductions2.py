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
    lambda x: tp.linalg.matrix_norm(x, 2), lambda x: tp.linalg.matrix_norm(x, -2),
    lambda x: tp.linalg.matrix_norm(x, 'nuc'), lambda x: tp.linalg.norm(x, 'nuc'),
    lambda x: tp.linalg.norm(x, 2), lambda x: tp.norm(x, 'nuc'), lambda x: x.norm('nuc')])
def test_svd_norms_not_implemented(call):
    with pytest.raises(NotImplementedError, match='svd'):
        call(tp.ones(3, 3))


@pytest.mark.parametrize('name', ['quantile', 'nanquantile'])
def test_quantile_size_limit(name):
    """PyTorch refuses inputs above 2**24 elements; 2**24 itself works."""
    for lib in (torch, tp):
        with pytest.raises(RuntimeError, match='too large'):
            getattr(lib, name)(lib.zeros(2 ** 24 + 1), 0.5)
    assert getattr(tp, name)(tp.zeros(2 ** 24), 0.5).item() == 0.0
