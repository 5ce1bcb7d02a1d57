"""The spatial nn ops on CUDA against our CPU kernels (which test_nn / test_grid_sample hold
to PyTorch): pooling, padding, max_unpool, unfold/fold, grid_sample and embedding_bag, on
inputs large enough to cross grid-stride boundaries, channels-last inputs, ceil_mode and
padding corners, NaN in max pooling, the backward of each family, determinism of the gather
backward kernels, and errors identical to the CPU's."""
import numpy as np
import pytest

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
F = tp.nn.functional


def _rand(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _both(a, cl=False, grad=False):
    """(CPU, CUDA) tensors of array a, channels last when `cl`, requiring grad when `grad`."""
    out = []
    for dev in ("cpu", "cuda"):
        t = tp.tensor(a, device=dev)
        if cl:
            t = t.contiguous(memory_format=tp.channels_last if t.dim() == 4 else tp.channels_last_3d)
        out.append(t.requires_grad_() if grad else t)
    return out


def _np(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == tp.bfloat16 else t).numpy()


def _same(gpu_t, cpu_t, rtol=0.0, atol=0.0):
    assert gpu_t.device.type == "cuda"
    assert gpu_t.dtype == cpu_t.dtype and tuple(gpu_t.shape) == tuple(cpu_t.shape)
    assert gpu_t.stride() == cpu_t.stride(), (gpu_t.stride(), cpu_t.stride())
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(_np(gpu_t), _np(cpu_t))
    else:
        np.testing.assert_allclose(_np(gpu_t), _np(cpu_t), rtol=rtol, atol=atol)


def _forward_backward(fn, a, cl=False, seed=1, rtol=1e-12, atol=1e-12):
    """fn on CPU and CUDA: equal values (and strides), gradients within tolerance."""
    xc, xg = _both(a, cl, grad=True)
    yc, yg = fn(xc), fn(xg)
    _same(yg, yc)
    cot = _rand(tuple(yc.shape), seed)
    (gc,) = tp.autograd.grad(yc, [xc], tp.tensor(cot))
    (gg,) = tp.autograd.grad(yg, [xg], tp.tensor(cot, device="cuda"))
    _same(gg, gc, rtol, atol)
    return gg


# ------------------------------------------------------------------ pooling

# (N, C, H, W) = (3, 5, 203, 190): 578k outputs of a 3x3 pool, several grid-stride rounds
POOL_2D = [
    lambda x: F.max_pool2d(x, 3, 2, 1),
    lambda x: F.max_pool2d(x, 3, 2, 1, 2, True),  # dilation 2, ceil_mode
    lambda x: F.max_pool2d(x, (2, 3), (3, 2), (1, 0), 1, True),
    lambda x: F.avg_pool2d(x, 3, 1, 1),
    lambda x: F.avg_pool2d(x, 3, 2, 1, True, False),  # ceil_mode, count_include_pad=False
    lambda x: F.avg_pool2d(x, (4, 2), (3, 2), (2, 1), True, True, 5),  # divisor_override
    lambda x: F.adaptive_avg_pool2d(x, (17, 23)),
    lambda x: F.adaptive_avg_pool2d(x, 1),
    lambda x: F.adaptive_max_pool2d(x, (31, 7)),
]


@gpu
@pytest.mark.parametrize("case", range(len(POOL_2D)))
@pytest.mark.parametrize("cl", [False, True])
def test_pool2d_large_and_channels_last(case, cl):
    _forward_backward(POOL_2D[case], _rand((3, 5, 203, 190)), cl=cl)


@gpu
@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool1d(x, 4, 3, 2, 1, True),
    lambda x: F.avg_pool1d(x, 5, 2, 2, True, False),
    lambda x: F.adaptive_avg_pool1d(x, 37),
    lambda x: F.adaptive_max_pool1d(x, 37),
])
def test_pool1d(fn):
    _forward_backward(fn, _rand((4, 6, 1001)))


@gpu
@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool3d(x, 3, 2, 1, 1, True),
    lambda x: F.max_pool3d(x, (1, 2, 3), (2, 1, 2), 0, (2, 1, 1)),
    lambda x: F.avg_pool3d(x, 3, 2, 1, True, False),
    lambda x: F.avg_pool3d(x, 2, 2, 1, False, True, 3),
    lambda x: F.adaptive_avg_pool3d(x, (3, 5, 4)),
])
@pytest.mark.parametrize("cl", [False, True])
def test_pool3d(fn, cl):
    _forward_backward(fn, _rand((2, 3, 17, 19, 21)), cl=cl)


@gpu
def test_max_pool_indices_and_nan():
    a = _rand((2, 3, 33, 35))
    a[0, 0, 4, 4] = np.nan
    a[1, 2, 10, 11] = a[1, 2, 10, 12] = np.nan  # a later NaN in one window takes the index
    a[1, 1, 0:4, 0:4] = 7.0  # ties: the first maximum wins
    for cl in (False, True):
        xc, xg = _both(a, cl)
        for args in ((3, 2, 1), (2, 2, 0, 1, True), (4, 3, 2, 2, True)):
            (vc, ic), (vg, ig) = (F.max_pool2d(x, *args, return_indices=True) for x in (xc, xg))
            _same(vg, vc)
            _same(ig, ic)
            assert np.isnan(_np(vg)).any()


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "int32", "uint8", "int8"])
def test_max_pool_dtypes(dtype):
    a = (_rand((2, 4, 37, 29)) * 20)
    xc = tp.tensor(a).to(getattr(tp, dtype))
    xg = xc.cuda()
    (vc, ic), (vg, ig) = (F.max_pool2d(x, 3, 2, 1, return_indices=True) for x in (xc, xg))
    _same(vg, vc)
    _same(ig, ic)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
def test_avg_pool_dtypes(dtype):
    a = _rand((2, 4, 37, 29)) * 20
    xc = tp.tensor(a).to(getattr(tp, dtype))
    yc, yg = F.avg_pool2d(xc, 3, 2, 1), F.avg_pool2d(xc.cuda(), 3, 2, 1)
    _same(yg, yc)


@gpu
def test_pool_backward_is_deterministic():
    xg = tp.tensor(_rand((4, 8, 64, 64)), dtype=tp.float32, device="cuda", requires_grad=True)
    y = F.avg_pool2d(xg, 5, 1, 2)
    cot = tp.tensor(_rand(tuple(y.shape)), dtype=tp.float32, device="cuda")
    g1, g2 = (tp.autograd.grad(F.avg_pool2d(xg, 5, 1, 2), [xg], cot)[0] for _ in range(2))
    np.testing.assert_array_equal(_np(g1), _np(g2))


@gpu
def test_pool_errors_match_cpu():
    for fn in (lambda x: F.max_pool2d(x, 3, 1, 2), lambda x: F.avg_pool2d(x, 9),
               lambda x: F.adaptive_max_pool2d(x.long(), 2), lambda x: F.max_pool2d(x.bool(), 2)):
        xc, xg = _both(_rand((1, 2, 5, 5)))
        with pytest.raises(Exception) as ec:
            fn(xc)
        with pytest.raises(type(ec.value)) as eg:
            fn(xg)
        assert str(eg.value) == str(ec.value)


# ------------------------------------------------------------------ padding and unpooling

@gpu
@pytest.mark.parametrize("mode", ["reflect", "replicate", "constant"])
@pytest.mark.parametrize("shape,pad", [((3, 4, 1000), (7, 3)), ((2, 3, 71, 93), (5, 2, 0, 9)),
                                       ((2, 2, 9, 11, 13), (2, 3, 4, 1, 3, 0)), ((3, 50, 60), (-3, 4, 2, -5))])
def test_pads(mode, shape, pad):
    if mode != "constant" and min(pad) < 0:
        pytest.skip("negative pads crop: constant mode only")
    kw = {"value": 1.5} if mode == "constant" else {}
    _forward_backward(lambda x: F.pad(x, pad, mode=mode, **kw), _rand(shape))


@gpu
def test_pad_bits_of_every_dtype():
    for dt in ("float16", "int8", "int64", "float32"):
        xc = (tp.tensor(_rand((2, 3, 7, 8))) * 10).to(getattr(tp, dt))
        for mode in ("reflect", "replicate"):
            _same(F.pad(xc.cuda(), (2, 3, 1, 4), mode=mode), F.pad(xc, (2, 3, 1, 4), mode=mode))


@gpu
def test_pad_errors_match_cpu():
    xc, xg = _both(_rand((1, 2, 3, 4)))
    for fn in (lambda x: F.pad(x, (4, 0), mode="reflect"), lambda x: F.pad(x, (1, 1, 1), mode="replicate")):
        with pytest.raises(Exception) as ec:
            fn(xc)
        with pytest.raises(type(ec.value)) as eg:
            fn(xg)
        assert str(eg.value) == str(ec.value)


@gpu
@pytest.mark.parametrize("nsp", [2, 3])
def test_max_unpool(nsp):
    shape = (2, 3) + (24, 30, 18)[:nsp]
    xc, xg = _both(_rand(shape), grad=True)
    pool, unpool = (F.max_pool2d, F.max_unpool2d) if nsp == 2 else (F.max_pool3d, F.max_unpool3d)
    outs = []
    for x in (xc, xg):
        v, i = pool(x, 2, return_indices=True)
        y = unpool(v, i, 2, output_size=shape[2:])
        outs.append((y, tp.autograd.grad(y, [x], tp.ones_like(y))[0]))
    _same(outs[1][0], outs[0][0])
    _same(outs[1][1], outs[0][1])
    v, i = pool(xg, 2, return_indices=True)
    bad = i.clone()
    bad[0, 0, 0] = 10 ** 6
    with pytest.raises(RuntimeError, match="Found an invalid max index"):
        unpool(v, bad, 2, output_size=shape[2:])


# ------------------------------------------------------------------ unfold / fold

@gpu
@pytest.mark.parametrize("args", [dict(kernel_size=3), dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2),
                                                            stride=(2, 3)), dict(kernel_size=5, stride=1, padding=2)])
def test_unfold_fold(args):
    a = _rand((3, 7, 61, 47))
    _forward_backward(lambda x: F.unfold(x, **args), a)
    xc, xg = _both(_rand(tuple(F.unfold(tp.tensor(a), **args).shape), 3), grad=True)
    yc, yg = F.fold(xc, (61, 47), **args), F.fold(xg, (61, 47), **args)
    _same(yg, yc)  # the gather sums in the CPU's order: equal bits
    fold_again = F.fold(xg, (61, 47), **args)
    np.testing.assert_array_equal(_np(fold_again), _np(yg))
    (gc,) = tp.autograd.grad(yc, [xc], tp.ones_like(yc))
    (gg,) = tp.autograd.grad(yg, [xg], tp.ones_like(yg))
    _same(gg, gc)


# ------------------------------------------------------------------ grid_sample

@gpu
@pytest.mark.parametrize("dims,mode", [(4, "bilinear"), (4, "nearest"), (4, "bicubic"), (5, "bilinear"),
                                       (5, "nearest")])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(dims, mode, padding, align):
    rng = np.random.default_rng(5)
    sp_in, sp_out = ((37, 41), (29, 31)) if dims == 4 else ((9, 11, 13), (7, 8, 9))
    x = rng.standard_normal((3, 4) + sp_in)
    g = rng.uniform(-1.3, 1.3, (3,) + sp_out + (dims - 2,))
    g.reshape(-1)[:6] = [-1.0, 1.0, 0.0, np.nan, 1.0, -1.0]
    xc, xg = _both(x, grad=True)
    gc, gg = _both(g, grad=True)
    yc = F.grid_sample(xc, gc, mode=mode, padding_mode=padding, align_corners=align)
    yg = F.grid_sample(xg, gg, mode=mode, padding_mode=padding, align_corners=align)
    _same(yg, yc, rtol=1e-12, atol=1e-12)
    cot = rng.standard_normal(tuple(yc.shape))
    grads_c = tp.autograd.grad(yc, [xc, gc], tp.tensor(cot))
    grads_g = tp.autograd.grad(yg, [xg, gg], tp.tensor(cot, device="cuda"))
    for a, b in zip(grads_g, grads_c):
        _same(a, b, rtol=1e-10, atol=1e-10)


@gpu
def test_grid_sample_float32_large():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 16, 128, 96)).astype(np.float32)
    g = rng.uniform(-1.1, 1.1, (2, 300, 250, 2)).astype(np.float32)
    xc, xg = _both(x)
    gc, gg = _both(g)
    _same(F.grid_sample(xg, gg, align_corners=False), F.grid_sample(xc, gc, align_corners=False),
          rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ embedding_bag

@gpu
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_embedding_bag(mode, padding_idx, last, dtype):
    rng = np.random.default_rng(7)
    w = rng.standard_normal((500, 67)).astype(dtype)
    idx = rng.integers(0, 500, 3000)
    idx[::7] = 3
    offs = np.sort(rng.integers(0, 3000, 400))
    offs[0] = 0
    offs[5] = offs[6]  # an empty bag
    if last:
        offs = np.append(offs, idx.size)
    psw = rng.standard_normal(idx.size).astype(dtype) if mode == "sum" else None
    results = []
    for dev in ("cpu", "cuda"):
        lw = tp.tensor(w, device=dev).requires_grad_()
        lp = None if psw is None else tp.tensor(psw, device=dev).requires_grad_()
        out = F.embedding_bag(tp.tensor(idx, device=dev), lw, tp.tensor(offs, device=dev), mode=mode,
                              per_sample_weights=lp, padding_idx=padding_idx, include_last_offset=last)
        cot = tp.tensor(np.random.default_rng(8).standard_normal(tuple(out.shape)).astype(dtype), device=dev)
        grads = tp.autograd.grad(out, [lw] + ([lp] if lp is not None else []), cot)
        results.append((out, grads))
    (oc, gcs), (og, ggs) = results
    tol = 1e-12 if dtype == np.float64 else 1e-5  # summed in the CPU's order, but the GPU fuses multiply-adds
    _same(og, oc, rtol=tol, atol=tol)
    for a, b in zip(ggs, gcs):
        _same(a, b, rtol=tol, atol=tol)


@gpu
def test_embedding_bag_half_and_raw_outputs():
    rng = np.random.default_rng(9)
    w = tp.tensor(rng.standard_normal((50, 9))).to(tp.float16)
    idx, offs = tp.tensor(rng.integers(0, 50, 200)), tp.tensor(np.arange(0, 200, 9))
    for mode in (0, 1, 2):
        rc = tp.embedding_bag(w, idx, offs, False, mode, False, None, False, 4)
        rg = tp.embedding_bag(w.cuda(), idx.cuda(), offs.cuda(), False, mode, False, None, False, 4)
        for a, b in zip(rg, rc):
            _same(a, b)


@gpu
def test_embedding_bag_2d_input():
    w = tp.tensor(_rand((30, 6)))
    idx = tp.tensor(np.random.default_rng(3).integers(0, 30, (7, 5)))
    for mode in ("sum", "mean", "max"):
        _same(F.embedding_bag(idx.cuda(), w.cuda(), mode=mode, padding_idx=2),
              F.embedding_bag(idx, w, mode=mode, padding_idx=2))


@gpu
def test_embedding_bag_errors_match_cpu():
    w = tp.tensor(_rand((10, 3)))
    for idx, offs in (([1, 2, 10], [0, 1]), ([1, 2, 3], [1, 2]), ([1, 2, 3], [0, 2, 1])):
        with pytest.raises(Exception) as ec:
            F.embedding_bag(tp.tensor(idx), w, tp.tensor(offs))
        with pytest.raises(type(ec.value)) as eg:
            F.embedding_bag(tp.tensor(idx, device="cuda"), w.cuda(), tp.tensor(offs, device="cuda"))
        assert str(eg.value) == str(ec.value)


@gpu
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, float("inf")])
def test_embedding_max_norm(norm_type):
    a = _rand((40, 13)) * 3
    idx = np.array([[1, 5, 5, 39], [0, 2, 7, 1]])
    outs = []
    for dev in ("cpu", "cuda"):
        w = tp.tensor(a, device=dev)
        y = F.embedding(tp.tensor(idx, device=dev), w, max_norm=1.5, norm_type=norm_type)
        outs.append((y, w))
    _same(outs[1][0], outs[0][0], rtol=1e-14, atol=1e-14)
    _same(outs[1][1], outs[0][1], rtol=1e-14, atol=1e-14)
