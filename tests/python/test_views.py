"""View ops alias their input exactly where PyTorch's do: same storage, writes visible
through both, one version counter."""
import pytest
import torch

import tensorplay as tp

CASES = [
    ("view", lambda x: x.view(4, 6)),
    ("reshape", lambda x: x.reshape(6, 4)),
    ("reshape_copy", lambda x: x.transpose(0, 1).reshape(24)),   # not viewable: a copy
    ("flatten", lambda x: x.flatten()),
    ("flatten_copy", lambda x: x.transpose(1, 2).flatten(1)),
    ("unflatten", lambda x: x.unflatten(1, (3, 1))),
    ("permute", lambda x: x.permute(2, 0, 1)),
    ("transpose", lambda x: x.transpose(0, 2)),
    ("swapaxes", lambda x: x.swapaxes(0, 1)),
    ("movedim", lambda x: x.movedim(0, 2)),
    ("t", lambda x: x[0].t()),
    ("T", lambda x: x[0].T),
    ("mT", lambda x: x.mT),
    ("expand", lambda x: x[:, :1].expand(2, 3, 4)),
    ("expand_as", lambda x: x[:1].expand_as(x)),
    ("broadcast_to", lambda x: x[:1].broadcast_to((2, 3, 4))),
    ("squeeze", lambda x: x[:1].squeeze(0)),
    ("unsqueeze", lambda x: x.unsqueeze(1)),
    ("narrow", lambda x: x.narrow(2, 1, 2)),
    ("select", lambda x: x.select(1, 2)),
    ("slice", lambda x: x[:, 1:, ::2]),
    ("unfold", lambda x: x.unfold(2, 2, 1)),
    ("as_strided", lambda x: x.as_strided((2, 2), (1, 4), 3)),
    ("diagonal", lambda x: x.diagonal(0, 1, 2)),
    ("split", lambda x: x.split(2, 2)[1]),
    ("chunk", lambda x: x.chunk(3, 1)[2]),
    ("unbind", lambda x: x.unbind(2)[3]),
    ("tensor_split", lambda x: x.tensor_split(3, 2)[1]),
    ("detach", lambda x: x.detach()),
    ("view_as", lambda x: x.view_as(x.view(6, 4))),
    ("contiguous_noop", lambda x: x.contiguous()),
    ("contiguous_copy", lambda x: x.transpose(0, 1).contiguous()),
]


def _aliases(lib, fn):
    base = lib.arange(24, dtype=lib.float32).reshape(2, 3, 4).clone()
    out = fn(base)
    v0 = base._version
    if out.numel():
        out.view(-1)[0:1].fill_(-1.0) if out.is_contiguous() else out.fill_(-1.0)
    shared_write = -1.0 in base.reshape(-1).tolist() if out.numel() else None
    return shared_write, base._version != v0


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_view_aliasing_matches_torch(name, fn):
    assert _aliases(tp, fn) == _aliases(torch, fn)


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_view_values_match_torch(name, fn):
    ours = fn(tp.arange(24, dtype=tp.float32).reshape(2, 3, 4))
    ref = fn(torch.arange(24, dtype=torch.float32).reshape(2, 3, 4))
    assert tuple(ours.shape) == tuple(ref.shape)
    assert tuple(ours.stride()) == tuple(ref.stride())
    assert ours.tolist() == ref.tolist()


@pytest.mark.parametrize("dtype", ["int32", "float16", "uint8", "float64", "bool", "int16"])
@pytest.mark.parametrize("index", [(), (slice(None), slice(0, 2)), (slice(1, 3),)])
def test_view_dtype_matches_torch(dtype, index):
    got = []
    for lib in (tp, torch):
        x = lib.arange(12, dtype=lib.float32).reshape(3, 4)[index]
        try:
            v = x.view(getattr(lib, dtype))
        except RuntimeError as e:
            got.append(str(e).removeprefix("view: "))
            continue
        v[(0,) * v.dim()].fill_(1)  # shares the storage and the version counter
        got.append((tuple(v.shape), tuple(v.stride()), v.storage_offset(), v.tolist(),
                    x.tolist(), x._version))
    assert got[0] == got[1]


@pytest.mark.parametrize("case", ["0-dim", "stride", "size", "offset", "inner stride"])
def test_view_dtype_errors_match_torch(case):
    def make(lib):
        x = lib.arange(24, dtype=lib.float32).reshape(4, 6)
        return {"0-dim": (x[0, 0], lib.float16), "stride": (x.t(), lib.float16),
                "size": (x[:, :3], lib.float64), "offset": (x[:, 1:3], lib.float64),
                "inner stride": (x.reshape(2, 12)[:, :2].as_strided((2, 2), (3, 1)), lib.float64)}[case]
    msgs = []
    for lib in (tp, torch):
        x, dt = make(lib)
        with pytest.raises(RuntimeError) as e:
            x.view(dt)
        msgs.append(str(e.value).removeprefix("view: "))
    assert msgs[0] == msgs[1]


def test_view_dtype_is_not_differentiable():
    x = tp.ones(2, requires_grad=True)
    v = x.view(tp.int32)
    assert not v.requires_grad and v.grad_fn is None and v.tolist() == [1065353216] * 2
    assert not x.view(tp.float32).requires_grad  # as torch: view.dtype has no derivative


@pytest.mark.parametrize("size,stride", [((2**40, 2**40), (2**40, 1)), ((2**40, 2**40), (0, 0)),
                                         ((2**62, 3), (1, 2**62)), ((3, 2**61), (2**61, 8))])
def test_as_strided_geometry_overflow_raises(size, stride):
    # sizes whose element count or extent overflows int64 must not slip past the bounds check
    with pytest.raises(RuntimeError):
        torch.zeros(4).as_strided(size, stride, 0)
    with pytest.raises(RuntimeError, match="as_strided"):
        tp.zeros(4).as_strided(size, stride, 0)


@pytest.mark.parametrize("name,shape", [("hsplit", (2, 3)), ("vsplit", (2, 3)), ("dsplit", (1, 2, 3))])
def test_directional_split_into_zero_sections_raises(name, shape):
    # found by the fuzzer: a split_size of 0 raised ZeroDivisionError instead of PyTorch's RuntimeError
    with pytest.raises(RuntimeError, match="not divisible by the split_size 0"):
        getattr(torch, name)(torch.ones(shape), 0)
    with pytest.raises(RuntimeError, match="not divisible by the split_size 0"):
        getattr(tp, name)(tp.ones(shape), 0)
