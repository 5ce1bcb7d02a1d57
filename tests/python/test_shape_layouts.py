"""Output layouts (strides) of copying shape ops, and repeat_interleave's counts-only
overload, against PyTorch."""
import numpy as np
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


@pytest.mark.parametrize("how", ["contiguous", "clone", "to", "double", "module_to", "tp_clone"])
@pytest.mark.parametrize("fmt", ["channels_last", "channels_last_3d", "contiguous_format",
                                 "preserve_format"])
@pytest.mark.parametrize("src", ["contiguous", "transposed", "sliced", "rank3"])
def test_memory_format_conversions_match_torch(how, fmt, src):
    def run(lib):
        rank = 5 if fmt == "channels_last_3d" else 4
        x = lib.arange(2 * 3 * 4 * 5 * 2, dtype=lib.float32).reshape(2, 3, 4, 5, 2)
        x = x[..., 0] if rank == 4 else x
        if src == "transposed":
            x = x.transpose(1, 2)
        elif src == "sliced":
            x = x[:, :, ::2]
        elif src == "rank3":
            x = x.reshape(2, 3, -1)
        mf = getattr(lib, fmt)
        if how == "contiguous":
            return x.contiguous(memory_format=mf)
        if how == "clone":
            return x.clone(memory_format=mf)
        if how == "tp_clone":
            return lib.clone(x, memory_format=mf)
        if how == "to":
            return x.to(memory_format=mf)
        if how == "double":
            return x.double(memory_format=mf)
        m = lib.nn.Module()
        m.register_buffer("b", x.contiguous())
        return m.to(memory_format=mf).b
    outcomes = []
    for lib in (torch, tp):
        try:
            outcomes.append(run(lib))
        except RuntimeError as e:
            outcomes.append(str(e))
    a, b = outcomes
    if isinstance(a, str):
        assert b == a
        return
    assert tuple(b.stride()) == tuple(a.stride()) and b.dtype.__repr__().split(".")[-1] == str(a.dtype).split(".")[-1]
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_channels_last_copy_passes_gradients():
    x = tp.randn(2, 3, 4, 5, requires_grad=True)
    y = x.contiguous(memory_format=tp.channels_last)
    (y * y).sum().backward()
    assert x.grad.stride() == x.stride()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("view", ["expand_row", "expand_col", "permute_slice", "size1_dims",
                                  "transpose_step", "nhwc_sliced"])
@pytest.mark.parametrize("op", ["clone", "empty_like", "zeros_like", "double", "add"])
def test_preserve_format_of_non_dense_views_matches_torch(view, op):
    def run(lib):
        base = lib.arange(2 * 3 * 4 * 6, dtype=lib.float32).reshape(2, 3, 4, 6)
        x = {"expand_row": lambda: base[0, 0, 0].expand(5, 6),
             "expand_col": lambda: base[0, 0, :, :1].expand(4, 7),
             "permute_slice": lambda: base.permute(3, 1, 0, 2)[::2],
             "size1_dims": lambda: base[:1, :, :1].transpose(0, 3)[::3],
             "transpose_step": lambda: base[..., ::2].transpose(1, 3),
             "nhwc_sliced": lambda: base.permute(0, 2, 3, 1)[:, :, ::2].permute(0, 3, 1, 2)}[view]()
        if op == "clone":
            return x.clone()
        if op == "double":
            return x.double()
        if op == "add":
            return x + 1
        return getattr(lib, op)(x)
    a, b = run(torch), run(tp)
    assert tuple(b.stride()) == tuple(a.stride())
    if op != "empty_like":
        np.testing.assert_array_equal(b.numpy(), a.numpy())


# ---- Note [Transposing copies]: dense copies whose layouts are rotations of each other (channels
# last <-> row-major, transposed matrices) run as tiled transposes; every element lands right

@pytest.mark.parametrize('dtype', ['uint8', 'float16', 'float32', 'int64', 'bool'])
@pytest.mark.parametrize('case', [
    ((3, 37, 19, 23), lambda t, lib: t.contiguous(memory_format=lib.channels_last)),
    ((3, 37, 19, 23), lambda t, lib: t.contiguous(memory_format=lib.channels_last).contiguous()),
    ((2, 9, 5, 11, 13), lambda t, lib: t.contiguous(memory_format=lib.channels_last_3d)),
    ((2, 9, 5, 11, 13), lambda t, lib: t.contiguous(memory_format=lib.channels_last_3d).contiguous()),
    ((129, 65), lambda t, lib: t.t().contiguous()),
    ((4, 1, 70, 90), lambda t, lib: t.transpose(2, 3).contiguous()),
    ((5, 40, 33), lambda t, lib: t.permute(2, 0, 1).contiguous()),
    ((6, 40, 33, 2), lambda t, lib: t.permute(0, 2, 1, 3).contiguous()),  # not a rotation
], ids=['to_cl', 'from_cl', 'to_cl3d', 'from_cl3d', 't', 'transpose_last', 'rotate3', 'swap_middle'])
def test_transposing_copies_match_torch(case, dtype):
    shape, f = case
    n = int(np.prod(shape))
    ref = torch.arange(n).reshape(shape).remainder(251).to(getattr(torch, dtype))
    ours = tp.arange(n).reshape(shape).remainder(251).to(getattr(tp, dtype))
    a, b = f(ours, tp), f(ref, torch)
    assert tuple(a.shape) == tuple(b.shape) and tuple(a.stride()) == tuple(b.stride())
    assert np.array_equal(a.numpy(), b.numpy())
    out = tp.empty_like(a)
    out.copy_(f(ours, tp))  # copy_ into a dense destination of the same layout
    assert np.array_equal(out.numpy(), b.numpy())
