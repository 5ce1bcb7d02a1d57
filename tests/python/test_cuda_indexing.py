"""CUDA index kernels at sizes and in modes the op database does not reach: device nonzero /
masked_select / masked_scatter over millions of elements (and past 2^31), batched
searchsorted with a sorter, and the deterministic index writes
(tp.use_deterministic_algorithms). Skipped without a GPU."""
import numpy as np
import pytest
import torch

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")


def _cuda(t):
    """A torch CPU tensor as a tensorplay CUDA tensor (same dtype and values)."""
    if t.dtype == torch.bfloat16:
        return tp.tensor(t.float().numpy(), device="cuda").to(tp.bfloat16)
    return tp.tensor(t.numpy(), device="cuda")


def _np(x):
    """A tensorplay tensor's values as numpy (bfloat16 via float32)."""
    x = x.cpu()
    return (x.float() if x.dtype == tp.bfloat16 else x).numpy()


@pytest.fixture
def deterministic():
    tp.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        tp.use_deterministic_algorithms(False)


def test_deterministic_switch():
    assert not tp.are_deterministic_algorithms_enabled()
    tp.use_deterministic_algorithms(True, warn_only=True)
    try:
        assert tp.are_deterministic_algorithms_enabled()
        assert tp.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tp.use_deterministic_algorithms(False)
    assert not tp.are_deterministic_algorithms_enabled()
    assert not tp.is_deterministic_algorithms_warn_only_enabled()
    with pytest.raises(TypeError):
        tp.use_deterministic_algorithms(1)


# ---------------------------------------------------------------- nonzero and masks


@gpu
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "bfloat16", "float32"])
def test_nonzero_large(dtype):
    g = torch.Generator().manual_seed(0)
    shape = (10, 1000, 1001)  # 10M elements, tiles not aligned to rows
    t = (torch.rand(shape, generator=g) < 0.3).to(getattr(torch, dtype))
    if dtype.startswith(("float", "bfloat")):
        t[0, 0, :7] = float("nan")  # NaN is nonzero
        t[1, 2, 3] = -0.0          # -0 is zero
    x = _cuda(t)
    np.testing.assert_array_equal(tp.nonzero(x).cpu().numpy(), torch.nonzero(t).numpy())
    # non-contiguous input, and the forms built on nonzero
    np.testing.assert_array_equal(tp.nonzero(x.transpose(0, 2)).cpu().numpy(),
                                  torch.nonzero(t.transpose(0, 2)).numpy())
    np.testing.assert_array_equal(tp.argwhere(x).cpu().numpy(), torch.argwhere(t).numpy())
    for a, b in zip(tp.nonzero(x, as_tuple=True), torch.nonzero(t, as_tuple=True)):
        np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())


@gpu
def test_nonzero_edges():
    for t in (torch.tensor(0.0), torch.tensor(2.0), torch.tensor(float("nan")), torch.zeros(0, 3),
              torch.zeros(5, 0, 2), torch.zeros(4097), torch.ones(4097), torch.ones(1, 1, 1)):
        r = tp.nonzero(_cuda(t))
        assert tuple(r.shape) == tuple(torch.nonzero(t).shape), t
        assert r.dtype == tp.int64 and r.device.type == "cuda"
        np.testing.assert_array_equal(r.cpu().numpy(), torch.nonzero(t).numpy())


@gpu
def test_nonzero_past_2_31_elements():
    n1 = (1 << 30) + 3  # 2 * n1 > 2^31 elements: coordinates and ranks need 64-bit math
    x = tp.zeros((2, n1), dtype=tp.bool, device="cuda")
    rows = tp.tensor([0, 0, 1, 1, 1], device="cuda")
    cols = tp.tensor([0, n1 - 1, 0, 5, n1 - 1], device="cuda")
    x[rows, cols] = True
    expected = np.array([[0, 0], [0, n1 - 1], [1, 0], [1, 5], [1, n1 - 1]])
    np.testing.assert_array_equal(tp.nonzero(x).cpu().numpy(), expected)
    flat = x.reshape(-1)
    np.testing.assert_array_equal(tp.nonzero(flat).cpu().numpy().ravel(),
                                  expected[:, 0] * n1 + expected[:, 1])
    del x, flat


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_masked_select_and_scatter_large(dtype):
    g = torch.Generator().manual_seed(1)
    t = (torch.rand(3000, 3333, generator=g) * 100).to(getattr(torch, dtype))
    m = torch.rand(3000, 3333, generator=g) < 0.5
    x, xm = _cuda(t), _cuda(m)
    np.testing.assert_array_equal(_np(tp.masked_select(x, xm)), torch.masked_select(t, m).numpy())
    src = (torch.rand(int(m.sum()) + 17, generator=g) * 100).to(getattr(torch, dtype))
    np.testing.assert_array_equal(_np(x.masked_scatter(xm, _cuda(src))), t.masked_scatter(m, src).numpy())
    # a broadcast mask and a non-contiguous self, in place
    row = m[0]
    src = (torch.rand(int(row.sum()) * 3000 + 5, generator=g) * 100).to(getattr(torch, dtype))
    y, e = x.t().contiguous().t(), t.clone()
    y.masked_scatter_(_cuda(row), _cuda(src))
    e.masked_scatter_(row, src)
    np.testing.assert_array_equal(_np(y), e.numpy())


@gpu
def test_masked_scatter_too_few_source():
    t = torch.arange(12.0).reshape(3, 4)
    x = _cuda(t)
    m = _cuda(t > 2)  # 9 true positions
    with pytest.raises(RuntimeError, match="masked_scatter: Number of elements of source < number of "
                                           "ones in mask"):
        x.masked_scatter_(m, tp.ones(8, device="cuda"))
    np.testing.assert_array_equal(x.cpu().numpy(), t.numpy())  # nothing written
    with pytest.raises(RuntimeError, match="same device"):
        x.masked_scatter(m.cpu(), tp.ones(9, device="cuda"))


# ---------------------------------------------------------------- searchsorted / bucketize


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int16"])
def test_searchsorted_batched(dtype):
    g = torch.Generator().manual_seed(2)
    tdt = getattr(torch, dtype)
    bd = (torch.randn(64, 5000, generator=g) * 50).to(tdt)
    vals = (torch.randn(64, 20000, generator=g) * 60).to(tdt)
    if tdt.is_floating_point:
        bd[3, -4:] = float("nan")
        vals[5, :9] = float("nan")
    sbd = bd.sort(dim=-1).values
    for right in (False, True):
        r = tp.searchsorted(_cuda(sbd), _cuda(vals), right=right)
        np.testing.assert_array_equal(r.cpu().numpy(), torch.searchsorted(sbd, vals, right=right).numpy())
    sorter = bd.argsort(dim=-1, stable=True)
    r = tp.searchsorted(_cuda(bd), _cuda(vals), side="right", sorter=_cuda(sorter), out_int32=True)
    assert r.dtype == tp.int32
    np.testing.assert_array_equal(
        r.cpu().numpy(), torch.searchsorted(bd, vals, side="right", sorter=sorter, out_int32=True).numpy())
    flat = sbd[0]
    for v in (vals[:, :777], vals[0, 0], 3):
        xv = _cuda(v) if isinstance(v, torch.Tensor) else v
        np.testing.assert_array_equal(tp.searchsorted(_cuda(flat), xv).cpu().numpy(),
                                      torch.searchsorted(flat, v).numpy())
        np.testing.assert_array_equal(tp.bucketize(xv, _cuda(flat), right=True).cpu().numpy(),
                                      torch.bucketize(v, flat, right=True).numpy())
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        tp.searchsorted(_cuda(flat), _cuda(vals[0]), sorter=tp.full((5000,), 5000, device="cuda"))


# ---------------------------------------------------------------- deterministic index writes


def _dup_index(n, size, seed):
    return torch.randint(0, size, (n,), generator=torch.Generator().manual_seed(seed))


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_deterministic_index_writes(dtype, deterministic):
    tdt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(3)
    base = torch.randn(7, 33, generator=g).to(tdt)
    src = torch.randn(200000, 33, generator=g).to(tdt)
    idx = _dup_index(200000, 7, 4)  # ~28k duplicates per target
    x, xs, xi = _cuda(base), _cuda(src), _cuda(idx)
    ref = tp.tensor(base.float().numpy()).to(getattr(tp, dtype))  # our CPU result
    cs = tp.tensor(src.float().numpy()).to(getattr(tp, dtype))
    ci = tp.tensor(idx.numpy())
    tol = dict(rtol=1e-2, atol=1e-1) if dtype in ("float16", "bfloat16") else dict(rtol=1e-4, atol=1e-3)

    def twice(f):
        a, b = _np(f()), _np(f())
        np.testing.assert_array_equal(a, b)  # bitwise reproducible
        return a

    a = twice(lambda: x.index_add(0, xi, xs, alpha=0.5))
    np.testing.assert_allclose(a, _np(ref.index_add(0, ci, cs, alpha=0.5)), **tol)
    a = twice(lambda: x.clone().index_put_((xi,), xs, accumulate=True))
    e = _np(ref.clone().index_put_((ci,), cs, accumulate=True))
    np.testing.assert_array_equal(a, e)  # same serial order as the CPU: the same bits
    # two index tensors (k = 2), one element per row
    j = _dup_index(200000, 33, 5)
    a = twice(lambda: x.clone().index_put_((xi, _cuda(j)), xs[:, 0], accumulate=True))
    e = _np(ref.clone().index_put_((ci, tp.tensor(j.numpy())), cs[:, 0], accumulate=True))
    np.testing.assert_array_equal(a, e)
    si = torch.randint(0, 7, (5000, 33), generator=g)
    a = twice(lambda: x.scatter_add(0, _cuda(si), xs[:5000]))
    np.testing.assert_allclose(a, _np(ref.scatter_add(0, tp.tensor(si.numpy()), cs[:5000])), **tol)
    for red in ("sum", "mean", "prod", "amax"):
        sub = xs[:64] if red == "prod" else xs[:5000]
        sidx = si[:64] if red == "prod" else si
        a = twice(lambda: x.scatter_reduce(0, _cuda(sidx), sub, red, include_self=False))
        e = _np(ref.scatter_reduce(0, tp.tensor(sidx.numpy()), cs[:sub.shape[0]], red, include_self=False))
        np.testing.assert_allclose(a, e, **tol)
    a = twice(lambda: x.clone().put_(_cuda(idx[:1000] * 33), xs[:1000, 0], accumulate=True))
    e = _np(ref.clone().put_(tp.tensor(idx[:1000].numpy() * 33), cs[:1000, 0], accumulate=True))
    np.testing.assert_array_equal(a, e)
    # assignment with duplicates: the last entry for each target wins
    a = twice(lambda: x.clone().index_put_((xi,), xs))
    rev = idx.numpy()[::-1]
    targets, first = np.unique(rev, return_index=True)
    e = _np(ref).copy()
    e[targets] = _np(cs)[len(rev) - 1 - first]
    np.testing.assert_array_equal(a, e)


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_accumulate_matches_cpu_by_default(dtype):
    # float16/bfloat16 index_put_(accumulate=True) rounds after each addition in index order
    # on the CPU; CUDA takes the sorted path for these types even without the switch.
    g = torch.Generator().manual_seed(6)
    base = torch.randn(5, 8, generator=g).to(getattr(torch, dtype))
    src = torch.randn(30000, 8, generator=g).to(getattr(torch, dtype))
    idx = _dup_index(30000, 5, 7)
    r = _cuda(base).index_put_((_cuda(idx),), _cuda(src), accumulate=True)
    cpu = tp.tensor(base.float().numpy()).to(getattr(tp, dtype))
    cpu.index_put_((tp.tensor(idx.numpy()),), tp.tensor(src.float().numpy()).to(getattr(tp, dtype)),
                   accumulate=True)
    np.testing.assert_array_equal(_np(r), _np(cpu))
