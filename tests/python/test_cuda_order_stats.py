"""GPU checks of the order-statistic, scan and counting kernels (csrc/cuda/order_stats.h)
on inputs the op database does not reach: rows longer than one block, NaN, ties in long
rows, unique of a million values, bincount and histc of a million values. Each compares
with torch's CPU result on the same data (and, for tie indices, with our CPU result)."""
import numpy as np
import pytest
import torch

import tensorplay as tp

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason="no CUDA GPU")


def _gpu(t):
    return tp.tensor(t.numpy(), device="cuda")


def _np(x):
    return x.cpu().numpy()


def _tied(shape, hi, seed, nan=False):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, hi, shape, generator=g).double()
    if nan:
        t[t == hi - 1] = float("nan")
    return t


@gpu
@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("nan", [False, True])
def test_cummax_cummin_long_rows(name, nan):
    t = _tied((3, 100_003), 50, 1, nan)  # many chunks of one block, ties everywhere
    if nan:
        t[1, :70_000] = torch.where(t[1, :70_000].isnan(), torch.tensor(0.0), t[1, :70_000])
    for dtype in (torch.float64, torch.float32):
        ref = getattr(torch, name)(t.to(dtype), 1)
        ours = getattr(tp, name)(_gpu(t.to(dtype)), 1)
        np.testing.assert_array_equal(_np(ours.values), ref.values.numpy())
        np.testing.assert_array_equal(_np(ours.indices), ref.indices.numpy())
    ti = t.nan_to_num(7).long()
    ref = getattr(torch, name)(ti.t(), 0)  # a non-contiguous input, scanned along dim 0
    ours = getattr(tp, name)(_gpu(ti).t(), 0)
    np.testing.assert_array_equal(_np(ours.values), ref.values.numpy())
    np.testing.assert_array_equal(_np(ours.indices), ref.indices.numpy())


@gpu
def test_logcumsumexp_long_rows_and_infinities():
    g = torch.Generator().manual_seed(2)
    t = torch.randn(2, 150_001, generator=g, dtype=torch.float64) * 30
    t[0, :5000] = float("-inf")
    t[1, 90_000] = float("inf")
    ours = tp.logcumsumexp(_gpu(t), 1)
    np.testing.assert_allclose(_np(ours), torch.logcumsumexp(t, 1).numpy(), rtol=1e-12, atol=0)
    t[0, 100_000] = float("nan")
    ours = tp.logcumsumexp(_gpu(t.float()), 1)
    np.testing.assert_allclose(_np(ours), torch.logcumsumexp(t.float(), 1).numpy(), rtol=1e-6)


@gpu
@pytest.mark.parametrize("nan", [False, True])
def test_selection_long_rows_match_cpu(nan):
    """Tie indices as Note [Index choice on ties] says, in rows of 5000."""
    t = _tied((7, 5000), 4, 3, nan)
    x, y = tp.tensor(t.numpy()), _gpu(t)
    for name, args in [("kthvalue", (1234, 1)), ("median", (1,)), ("nanmedian", (1,)), ("mode", (1,))]:
        ref = getattr(torch, name)(t, *args)
        for res in (getattr(tp, name)(y, *args), getattr(tp, name)(x, *args)):
            np.testing.assert_array_equal(_np(res.values), ref.values.numpy(), err_msg=name)
            np.testing.assert_array_equal(_np(res.indices), ref.indices.numpy(), err_msg=name)
    all_nan = torch.full((2, 37), float("nan"))
    ref = torch.nanmedian(all_nan, 1)
    np.testing.assert_array_equal(_np(tp.nanmedian(_gpu(all_nan), 1).indices), ref.indices.numpy())
    assert np.isnan(_np(tp.median(_gpu(t))).item()) == nan


@gpu
@pytest.mark.parametrize("how", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_many_rows(how):
    g = torch.Generator().manual_seed(4)
    t = torch.randn(300, 999, generator=g, dtype=torch.float64)
    t[5, 17] = float("nan")
    q = torch.tensor([0.0, 0.1, 0.5, 0.77, 1.0], dtype=torch.float64)
    for name in ("quantile", "nanquantile"):
        ref = getattr(torch, name)(t, q, dim=1, interpolation=how)
        ours = getattr(tp, name)(_gpu(t), _gpu(q), dim=1, interpolation=how)
        np.testing.assert_array_equal(_np(ours), ref.numpy())
    ours = tp.quantile(_gpu(t.float()), 0.3, interpolation=how)  # all elements, float32
    assert np.isnan(_np(ours).item())


@gpu
def test_unique_a_million_ints():
    g = torch.Generator().manual_seed(5)
    t = torch.randint(-40_000, 40_000, (1_000_000,), generator=g)
    out, inv, cnt = tp.unique(_gpu(t), return_inverse=True, return_counts=True)
    ro, ri, rc = torch.unique(t, return_inverse=True, return_counts=True)
    for a, b in ((out, ro), (inv, ri), (cnt, rc)):
        np.testing.assert_array_equal(_np(a), b.numpy())
    s = torch.sort(t).values.repeat_interleave(2)[:1_000_000]
    out, inv, cnt = tp.unique_consecutive(_gpu(s), return_inverse=True, return_counts=True)
    ro, ri, rc = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    for a, b in ((out, ro), (inv, ri), (cnt, rc)):
        np.testing.assert_array_equal(_np(a), b.numpy())


@gpu
def test_unique_slices_and_nan():
    t = _tied((500, 3), 3, 6)
    for dim in (0, 1):
        ours = tp.unique(_gpu(t), dim=dim, return_inverse=True, return_counts=True)
        ref = torch.unique(t, dim=dim, return_inverse=True, return_counts=True)
        for a, b in zip(ours, ref):
            np.testing.assert_array_equal(_np(a), b.numpy())
    v = torch.tensor([2.0, float("nan"), 1.0, float("nan"), -0.0, 0.0, 2.0])
    ours = tp.unique(_gpu(v), return_inverse=True, return_counts=True)
    ref = torch.unique(v, return_inverse=True, return_counts=True)
    for a, b in zip(ours, ref):
        np.testing.assert_array_equal(_np(a), b.numpy())


@gpu
def test_bincount_and_histc_a_million_values():
    g = torch.Generator().manual_seed(7)
    t = torch.randint(0, 1000, (1_000_000,), generator=g)
    w = torch.rand(1_000_000, generator=g, dtype=torch.float64)
    np.testing.assert_array_equal(_np(tp.bincount(_gpu(t), minlength=1500)), torch.bincount(t, minlength=1500).numpy())
    np.testing.assert_allclose(_np(tp.bincount(_gpu(t), _gpu(w))), torch.bincount(t, w).numpy(), rtol=1e-12)
    ours = tp.bincount(_gpu(t), _gpu(w.float()))
    assert ours.dtype == tp.float32
    np.testing.assert_allclose(_np(ours), torch.bincount(t, w.float()).numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="non-negative"):
        tp.bincount(_gpu(t - 1))
    x = torch.randn(1_000_000, generator=g, dtype=torch.float64) * 3
    x[::1000] = float("nan")
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        for lo, hi in ((-2.0, 2.5), (0.0, 0.0)):
            xs = x.nan_to_num(0.5) if (lo, hi) == (0.0, 0.0) else x  # a NaN range fails
            tp_dtype = getattr(tp, str(dtype).split(".")[-1])
            ours = tp.histc(_gpu(xs.to(dtype).double()).to(tp_dtype), bins=77, min=lo, max=hi)
            cpu = tp.histc(tp.tensor(xs.to(dtype).double().numpy()).to(tp_dtype), bins=77, min=lo, max=hi)
            np.testing.assert_array_equal(_np(ours.double()), cpu.double().numpy(), err_msg=str(dtype))
            if dtype in (torch.float64, torch.float32):  # torch counts in float16 saturate at 2048 steps
                ref = torch.histc(xs.to(dtype), bins=77, min=lo, max=hi)
                np.testing.assert_array_equal(_np(ours.double()), ref.double().numpy(), err_msg=str(dtype))
