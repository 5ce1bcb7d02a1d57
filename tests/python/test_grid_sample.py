"""F.grid_sample and F.affine_grid against PyTorch: every mode x padding mode x
align_corners on 4-D and 5-D inputs (values, input and grid gradients, second derivatives),
NaN / inf / out-of-range coordinates, float16/bfloat16, and bad input."""
import itertools
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

tF, pF = torch.nn.functional, tp.nn.functional
MODES, PADDINGS = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")
COMBOS = [(d, m, p, a) for d, m, p, a in itertools.product((4, 5), MODES, PADDINGS, (False, True))
          if not (d == 5 and m == "bicubic")]


def _ids(c):
    return f"{c[0]}d-{c[1]}-{c[2]}-{'align' if c[3] else 'noalign'}"


def _inputs(dims, rng, dtype=np.float64, special=()):
    """(input, grid, output cotangent) arrays: grid points inside and outside [-1, 1], some on
    the edges and the centre, and `special` values at a few places."""
    sp_in, sp_out = (4, 5, 6)[:dims - 2], (3, 4, 2)[:dims - 2]
    x = rng.standard_normal((2, 3) + sp_in)
    g = rng.uniform(-1.4, 1.4, (2,) + sp_out + (dims - 2,))
    flat = g.reshape(-1)
    flat[:5] = [-1.0, 1.0, 0.0, 1.0, -1.0]
    if special:
        idx = rng.choice(np.arange(5, flat.size), 2 * len(special), replace=False)
        flat[idx] = list(special) * 2
    cot = rng.standard_normal((2, 3) + sp_out)
    return x.astype(dtype), g.astype(dtype), cot.astype(dtype)


def _both(arrays, requires_grad=True):
    t = [torch.from_numpy(a.copy()).requires_grad_(requires_grad) for a in arrays]
    p = [tp.from_numpy(a.copy()).requires_grad_(requires_grad) for a in arrays]
    return t, p


def _close(ours, ref, tol):
    np.testing.assert_allclose(np.asarray(ours.detach().double().numpy()), ref.detach().double().numpy(),
                               rtol=tol, atol=tol, equal_nan=True)


def _run(lib, x, g, cot, combo, grads=True):
    F = tF if lib is torch else pF
    _, mode, padding, align = combo
    out = F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)
    if not grads:
        return out, None, None
    gx, gg = lib.autograd.grad(out, [x, g], cot)
    return out, gx, gg


@pytest.mark.parametrize("combo", COMBOS, ids=_ids)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grid_sample_matches_torch(combo, dtype):
    x, g, cot = _inputs(combo[0], np.random.default_rng(0), dtype)
    (tx, tg, tc), (px, pg, pc) = _both([x, g, cot])
    tol = 1e-10 if dtype == np.float64 else 1e-4
    for ours, ref in zip(_run(tp, px, pg, pc.detach(), combo), _run(torch, tx, tg, tc.detach(), combo)):
        _close(ours, ref, tol)


@pytest.mark.parametrize("combo", [(4, "bilinear", "zeros", False), (4, "bicubic", "border", True),
                                   (5, "nearest", "reflection", True)], ids=_ids)
def test_grid_sample_more_threads_than_samples(combo):
    """One sample on four threads: the backward splits channels (input) and points (grid)."""
    x, g, cot = _inputs(combo[0], np.random.default_rng(5))
    x, g, cot = x[:1], g[:1], cot[:1]
    threads = tp.get_num_threads()
    tp.set_num_threads(4)
    try:
        (tx, tg, tc), (px, pg, pc) = _both([x, g, cot])
        for ours, ref in zip(_run(tp, px, pg, pc.detach(), combo), _run(torch, tx, tg, tc.detach(), combo)):
            _close(ours, ref, 1e-10)
    finally:
        tp.set_num_threads(threads)


@pytest.mark.parametrize("combo", COMBOS, ids=_ids)
def test_grid_sample_special_coordinates_match_torch(combo):
    """NaN, inf and coordinates far outside (beyond the int range too). PyTorch's 4-D
    bilinear backward crashes on NaN with border/reflection padding: forward only there."""
    special = (float("nan"), float("inf"), -float("inf"), 1e30, -3e9, 5e9)
    x, g, cot = _inputs(combo[0], np.random.default_rng(1), np.float64, special)
    (tx, tg, tc), (px, pg, pc) = _both([x, g, cot])
    grads = not (combo[0] == 4 and combo[1] == "bilinear" and combo[2] != "zeros")
    for ours, ref in zip(_run(tp, px, pg, pc.detach(), combo, grads), _run(torch, tx, tg, tc.detach(), combo, grads)):
        if ref is not None:
            _close(ours, ref, 1e-10)


@pytest.mark.parametrize("combo", COMBOS, ids=_ids)
def test_grid_sample_gradcheck_and_second_derivatives(combo):
    dims, mode, padding, align = combo
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2) + (3, 4, 3)[:dims - 2])
    g = rng.uniform(-1.2, 1.2, (1,) + (2, 2, 2)[:dims - 2] + (dims - 2,))
    (tx, tg), (px, pg) = _both([x, g])

    def f(a, b):
        return pF.grid_sample(a, b, mode=mode, padding_mode=padding, align_corners=align)
    assert tp.autograd.gradcheck(f, (px, pg))
    assert tp.autograd.gradgradcheck(f, (px, pg))
    # second derivatives through create_graph, against torch's
    cot = rng.standard_normal((1, 2) + (2, 2, 2)[:dims - 2])
    results = []
    for lib, a, b in ((tp, px, pg), (torch, tx, tg)):
        F = tF if lib is torch else pF
        out = F.grid_sample(a, b, mode=mode, padding_mode=padding, align_corners=align)
        ga, gb = lib.autograd.grad(out, [a, b], lib.from_numpy(cot.copy()), create_graph=True)
        results.append(lib.autograd.grad((ga * ga).sum() + (gb ** 3).sum(), [a, b], allow_unused=True))
    for ours, ref in zip(*results):  # None (no path from the input) and zeros mean the same
        ours = np.zeros(ref.shape) if ours is None else ours.numpy()
        ref = np.zeros(ours.shape) if ref is None else ref.numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("combo", [(4, "bilinear", "zeros", False), (4, "bicubic", "reflection", True),
                                   (5, "bilinear", "border", True), (5, "nearest", "reflection", False)], ids=_ids)
def test_grid_sample_half_computes_in_float32(combo, dtype):
    """float16/bfloat16 compute in float32 and round once (PyTorch rounds every step, so its
    results are compared with tolerance only)."""
    x, g, _ = _inputs(combo[0], np.random.default_rng(3), np.float32)
    g = np.round(g * 8) / 8  # positions exact in both dtypes
    tx, tg = torch.from_numpy(x).to(getattr(torch, dtype)), torch.from_numpy(g).to(getattr(torch, dtype))
    px, pg = tp.from_numpy(x).to(getattr(tp, dtype)), tp.from_numpy(g).to(getattr(tp, dtype))
    out = _run(tp, px, pg, None, combo, False)[0]
    assert out.dtype == getattr(tp, dtype)
    exact = _run(torch, tx.float(), tg.float(), None, combo, False)[0].to(getattr(torch, dtype))
    _close(out, exact, 0.0)
    _close(out, _run(torch, tx, tg, None, combo, False)[0], 0.1)


def _raises_like_torch(fn_torch, fn_tp):
    with pytest.raises(Exception) as expected:
        fn_torch()
    with pytest.raises(type(expected.value)) as actual:
        fn_tp()
    return str(actual.value)


BAD = [
    ((1, 3, 4, 5), (2, 2, 2, 2), {}),                 # batch sizes differ
    ((3, 4, 5), (3, 2, 2), {}),                       # 3-D input
    ((1, 3, 4, 5), (1, 2, 2, 3), {}),                 # grid's last dim
    ((1, 3, 4, 5), (1, 2, 2, 2, 2), {}),              # grid has more dims
    ((1, 3, 2, 4, 5), (1, 2, 2, 2, 2), {}),           # 5-D input, 4-D grid's last dim
    ((1, 3, 0, 5), (1, 2, 2, 2), {}),                 # empty spatial dim
    ((1, 3, 2, 4, 5), (1, 2, 2, 2, 3), {"mode": "bicubic"}),
    ((1, 3, 4, 5), (1, 2, 2, 2), {"mode": "linear"}),
    ((1, 3, 4, 5), (1, 2, 2, 2), {"padding_mode": "circular"}),
    ((1, 3, 4, 5), (1, 2, 2, 2), {"mode": "bilinear", "padding_mode": "reflect"}),
]


@pytest.mark.parametrize("x_shape, g_shape, kwargs", BAD)
def test_grid_sample_bad_input_raises_like_torch(x_shape, g_shape, kwargs):
    kw = {"align_corners": False, **kwargs}
    msg = _raises_like_torch(lambda: tF.grid_sample(torch.ones(x_shape), torch.zeros(g_shape), **kw),
                             lambda: pF.grid_sample(tp.ones(x_shape), tp.zeros(g_shape), **kw))
    assert "grid_sample" in msg or "grid_sampler" in msg


@pytest.mark.parametrize("x_dtype, g_dtype", [("float32", "float64"), ("int64", "int64"), ("float32", "int32"),
                                              ("bool", "bool")])
def test_grid_sample_bad_dtypes_raise_like_torch(x_dtype, g_dtype):
    x, g = np.ones((1, 2, 3, 3)), np.zeros((1, 2, 2, 2))
    msg = _raises_like_torch(
        lambda: tF.grid_sample(torch.from_numpy(x).to(getattr(torch, x_dtype)),
                               torch.from_numpy(g).to(getattr(torch, g_dtype)), align_corners=False),
        lambda: pF.grid_sample(tp.from_numpy(x).to(getattr(tp, x_dtype)),
                               tp.from_numpy(g).to(getattr(tp, g_dtype)), align_corners=False))
    assert "grid_sampler" in msg


def test_align_corners_default_warns_like_torch():
    for lib, F in ((torch, tF), (tp, pF)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            F.grid_sample(lib.ones((1, 1, 2, 2)), lib.zeros((1, 1, 1, 2)))
            F.affine_grid(lib.zeros((1, 2, 3)), (1, 1, 2, 2))
        assert [str(w.message)[:40] for w in caught] == ["Default grid_sample and affine_grid beha"] * 2


@pytest.mark.parametrize("size", [(2, 3, 4, 7), (2, 1, 3, 4, 5), (2, 3, 1, 1), (2, 2, 1, 3, 1)])
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(size, align):
    rng = np.random.default_rng(4)
    k = len(size) - 2
    theta = rng.standard_normal((2, k, k + 1))
    (tt,), (pt,) = _both([theta])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit sizes with align_corners warn (in both)
        tg, pg = tF.affine_grid(tt, size, align_corners=align), pF.affine_grid(pt, size, align_corners=align)
    _close(pg, tg, 1e-12)
    cot = rng.standard_normal(tuple(tg.shape))
    _close(tp.autograd.grad(pg, [pt], tp.from_numpy(cot))[0], torch.autograd.grad(tg, [tt], torch.from_numpy(cot))[0],
           1e-12)
    # sampling a 5-D volume along its own affine grid, as a spatial transformer does
    if k == 3:
        x = rng.standard_normal(size)
        (tx,), (px,) = _both([x])
        _close(pF.grid_sample(px, pg, align_corners=align), tF.grid_sample(tx, tg, align_corners=align), 1e-10)


@pytest.mark.parametrize("theta_shape, size, dtype", [
    ((2, 2, 3), (2, 3, 4, 5, 6), "float32"),   # 2-D theta, 5-D size
    ((2, 3, 4), (2, 3, 4, 5), "float32"),      # 3-D theta, 4-D size
    ((2, 3, 4), (3, 3, 4, 5, 6), "float32"),   # batch sizes differ
    ((2, 3, 4), (2, 3, 0, 5, 6), "float32"),   # empty output
    ((2, 3, 4), (2, 3, 4, 5, 6, 7), "float32"),
    ((2, 3, 4), (2, 3, 4, 5, 6), "int64"),
])
def test_affine_grid_bad_input_raises_like_torch(theta_shape, size, dtype):
    theta = np.zeros(theta_shape)
    _raises_like_torch(lambda: tF.affine_grid(torch.from_numpy(theta).to(getattr(torch, dtype)), size,
                                              align_corners=False),
                       lambda: pF.affine_grid(tp.from_numpy(theta).to(getattr(tp, dtype)), size, align_corners=False))
