"""Output layouts (strides) of copying shape ops, and repeat_interleave's counts-only
overload, against PyTorch."""
import pytest
import torch

import tensorplay as tp


@pytest.mark.parametrize('k', [0, 1, 2, 3])
@pytest.mark.parametrize('perm', [(0, 1), (1, 0)])
def test_rot90_strides(k, perm):
    t = torch.randn(3, 4)
    x, y = t.permute(perm), tp.from_dlpack(t).permute(perm)
    ref, got = torch.rot90(x, k), tp.rot90(y, k)
    assert got.stride() == ref.stride()
    assert torch.equal(torch.from_dlpack(got.contiguous()), ref.contiguous())


@pytest.mark.parametrize('perm', [(0, 1, 2), (2, 0, 1), (1, 2, 0)])
@pytest.mark.parametrize('dims', [[0], [2], [0, 2], [0, 1, 2]])
def test_flip_keeps_dense_layout(perm, dims):
    t = torch.randn(2, 3, 4)
    ref, got = torch.flip(t.permute(perm), dims), tp.flip(tp.from_dlpack(t).permute(perm), dims)
    assert got.stride() == ref.stride()
    assert torch.equal(torch.from_dlpack(got.contiguous()), ref.contiguous())


def test_flip_of_overlapping_input_is_contiguous():
    t = torch.randn(3, 1).expand(3, 4)
    got = tp.flip(tp.from_dlpack(torch.randn(3, 1)).expand(3, 4), [1])
    assert got.stride() == torch.flip(t, [1]).stride() == (4, 1)


@pytest.mark.parametrize('dim', [0, 1, 2, 3])
def test_cat_channels_last_stays_channels_last(dim):
    a = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    b = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    ref = torch.cat([a, b], dim)
    got = tp.cat([tp.from_dlpack(a), tp.from_dlpack(b)], dim)
    assert got.stride() == ref.stride()
    assert torch.equal(torch.from_dlpack(got), ref)
    mixed = tp.cat([tp.from_dlpack(a), tp.from_dlpack(b.contiguous())], dim)
    assert mixed.stride() == torch.cat([a, b.contiguous()], dim).stride()


def test_out_of_another_shape_is_resized():
    a, b = torch.randn(2, 3), torch.randn(2, 3)
    out = tp.empty(5)
    res = tp.cat([tp.from_dlpack(a), tp.from_dlpack(b)], 0, out=out)
    assert res is out and tuple(out.shape) == (4, 3)
    assert torch.equal(torch.from_dlpack(out), torch.cat([a, b]))


@pytest.mark.parametrize('counts,dtype', [([1, 2, 3], 'int64'), ([0, 2], 'int32'), ([], 'int64')])
def test_repeat_interleave_counts_only(counts, dtype):
    ref = torch.repeat_interleave(torch.tensor(counts, dtype=getattr(torch, dtype)))
    got = tp.repeat_interleave(tp.tensor(counts, dtype=getattr(tp, dtype)))
    assert str(got.dtype).split('.')[-1] == str(ref.dtype).split('.')[-1]
    assert got.tolist() == ref.tolist()
    assert tp.repeat_interleave(tp.tensor([1, 2]), output_size=3).tolist() == [0, 1, 1]


@pytest.mark.parametrize('bad,exc', [([[1]], RuntimeError), ([1.0], NotImplementedError),
                                     ([-1], RuntimeError), (2, RuntimeError)])
def test_repeat_interleave_counts_only_errors(bad, exc):
    with pytest.raises(exc):
        torch.repeat_interleave(torch.tensor(bad))
    with pytest.raises(exc, match='repeat'):
        tp.repeat_interleave(tp.tensor(bad))


def test_like_factories_preserve_a_dense_layout():
    import torch
    x = tp.empty(2, 4, 5, 3).permute(0, 3, 1, 2)  # channels-last data
    tx = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    for name in ("zeros_like", "ones_like", "empty_like"):
        assert getattr(tp, name)(x).stride() == getattr(torch, name)(tx).stride()
        assert getattr(tp, name)(x, memory_format=tp.contiguous_format).stride() == \
            getattr(torch, name)(tx, memory_format=torch.contiguous_format).stride()
    assert tp.full_like(x, 2.0).stride() == torch.full_like(tx, 2.0).stride()
    assert float(tp.full_like(x, 2.0).sum().item()) == 2.0 * 120
    assert tp.zeros_like(x[:, :, ::2]).stride() == torch.zeros_like(tx[:, :, ::2]).stride()
    assert tp.zeros_like(tp.ones(3, 4).t()).stride() == torch.zeros_like(torch.ones(3, 4).t()).stride()
    y = tp.zeros_like(x, requires_grad=True)
    assert y.requires_grad and y.is_leaf
