"""cuDNN convolutions (csrc/cuda/cudnn_conv.cpp, Note [cuDNN convolutions]): conv1d/2d/3d and
the transposed ones with groups, strides, dilation and channels-last inputs in float64,
float32, float16 and bfloat16 on CUDA, values and gradients against the CPU op (in float64)
and torch's CUDA result, layouts as torch's; the benchmark/deterministic flags; the unfold
fallback when tp.backends.cudnn.enabled is False. The value tests run through both the legacy
API and the backend (graph) API with its plan cache (tp._C._cudnn_set_backend_api, Note [cuDNN
backend API]). The flag tests run on every build."""
import numpy as np
import pytest
import torch

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
HAS_CUDNN = HAS_GPU and tp.backends.cudnn.is_available()
TORCH_GPU = torch.cuda.is_available()
cudnn = pytest.mark.skipif(not HAS_CUDNN, reason="no CUDA GPU or a build without cuDNN")
F = tp.nn.functional
TF = torch.nn.functional


@pytest.fixture(autouse=True)
def _restore_flags():
    c = tp.backends.cudnn
    old = (c.enabled, c.benchmark, c.deterministic, c.allow_tf32)
    old_torch = torch.backends.cudnn.allow_tf32
    old_api = tp._C._cudnn_backend_api()
    yield
    c.enabled, c.benchmark, c.deterministic, c.allow_tf32 = old
    torch.backends.cudnn.allow_tf32 = old_torch
    tp._C._cudnn_set_backend_api(old_api)


@pytest.fixture(params=[False, True], ids=["legacy_api", "backend_api"])
def cudnn_api(request):
    """Runs the test with convolutions through cuDNN's legacy API, then its backend API."""
    old = tp._C._cudnn_backend_api()
    tp._C._cudnn_set_backend_api(request.param)
    yield request.param
    tp._C._cudnn_set_backend_api(old)


# ------------------------------------------------------------------ flags (every build)

def test_flags_reach_the_cpp_side():
    c = tp.backends.cudnn
    assert tp._C._get_cudnn_flags() == (True, False, False)
    c.benchmark, c.deterministic = True, True
    assert tp._C._get_cudnn_flags() == (True, True, True) and c.benchmark and c.deterministic
    with c.flags(enabled=False, benchmark=False, deterministic=True, allow_tf32=False):
        assert tp._C._get_cudnn_flags() == (False, False, True) and c.allow_tf32 is False
    assert tp._C._get_cudnn_flags() == (True, True, True) and c.allow_tf32 is True
    c.enabled = False
    assert (c.enabled, c.benchmark, c.deterministic) == (False, True, True)
    with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool, but got int"):
        c.benchmark = 1
    assert c.benchmark is True


def test_backend_api_switch():
    assert tp._C._cudnn_backend_api() is True  # on by default
    tp._C._cudnn_set_backend_api(False)
    assert tp._C._cudnn_backend_api() is False
    tp._C._cudnn_set_backend_api(True)
    assert tp._C._cudnn_backend_api() is True
    assert isinstance(tp._C._cudnn_plan_cache_size(), int)


def test_availability_matches_the_build():
    c = tp.backends.cudnn
    assert c.is_available() is tp._C._has_cudnn
    if c.is_available():
        v = c.version()
        assert isinstance(v, int) and 90000 <= v < 100000  # cuDNN 9
    else:
        assert c.version() is None
    if not tp._C._cuda_compiled:
        assert c.is_available() is False


# ------------------------------------------------------------------ values and gradients (GPU)

# (function, input size, weight size, keyword arguments)
CASES = [
    ("conv1d", (4, 6, 37), (8, 3, 5), dict(stride=2, padding=1, groups=2)),
    ("conv1d", (3, 5, 20), (7, 5, 3), dict(dilation=3, padding=2)),
    ("conv2d", (3, 8, 19, 23), (12, 8, 3, 3), dict(padding=1)),
    ("conv2d", (2, 6, 21, 17), (9, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(2, 1), groups=3)),
    ("conv2d", (2, 8, 15, 15), (8, 1, 3, 3), dict(padding=1, groups=8)),  # depthwise
    ("conv2d", (4, 16, 9, 9), (32, 16, 1, 1), {}),  # 1x1
    ("conv3d", (2, 4, 7, 8, 9), (6, 4, 3, 3, 3), dict(stride=(1, 2, 1), padding=1)),
    ("conv3d", (2, 6, 9, 8, 7), (4, 3, 2, 3, 2), dict(dilation=(2, 1, 1), groups=2)),
    ("conv_transpose1d", (3, 6, 17), (6, 4, 4), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("conv_transpose2d", (2, 8, 9, 11), (8, 5, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (2, 6, 7, 8), (6, 2, 3, 3), dict(stride=(1, 2), dilation=2, groups=3)),
    ("conv_transpose3d", (2, 4, 5, 6, 5), (4, 3, 3, 3, 3), dict(stride=2, padding=1)),
]
# tolerance relative to the reference's largest magnitude, per dtype (float32 without TF32;
# cuDNN's FFT and Winograd algorithms round differently from a direct sum)
TOL = {"float64": 1e-10, "float32": 1e-4, "float16": 4e-3, "bfloat16": 3e-2}


def _case_id(case):
    fn, x, w, kw = case
    return f"{fn}-{'x'.join(map(str, x))}-{'x'.join(map(str, w))}-" + ",".join(f"{k}={v}" for k, v in kw.items())


def _bias_size(fn, w, kw):
    return w[1] * kw.get("groups", 1) if "transpose" in fn else w[0]


def _np(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == tp.bfloat16 else t).numpy().astype(np.float64)


def _close(got, ref, dtype, what):
    ref = np.asarray(ref, dtype=np.float64)
    scale = max(float(np.abs(ref).max()), 1e-30)
    np.testing.assert_allclose(_np(got) if not isinstance(got, np.ndarray) else got, ref, rtol=TOL[dtype],
                               atol=TOL[dtype] * scale, err_msg=what)


def _layout(t, cl):
    if not cl:
        return t
    lib = tp if isinstance(t, tp.Tensor) else torch
    return t.contiguous(memory_format=lib.channels_last if t.dim() == 4 else lib.channels_last_3d)


def _run(lib, fn, arrays, dtype, device, cl, kw, cot):
    """fn on `lib` tensors (leaves requiring grad), its result and gradients for cotangent `cot`."""
    dt = getattr(lib, dtype)
    x, w, b = (lib.tensor(a, dtype=dt, device=device) for a in arrays)
    x = _layout(x, cl).requires_grad_()
    w, b = w.requires_grad_(), b.requires_grad_()
    f = getattr(F if lib is tp else TF, fn)
    y = f(x, w, b, **kw)
    grads = (tp.autograd.grad if lib is tp else torch.autograd.grad)(
        y, [x, w, b], lib.tensor(cot, dtype=dt, device=device))
    return y, grads


@cudnn
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("cl", [False, True], ids=["rowmajor", "channels_last"])
def test_convolution_against_cpu_and_torch(case, dtype, cl, cudnn_api):
    fn, xs, ws, kw = case
    if cl and len(xs) == 3:
        pytest.skip("no channels-last layout for 1-D convolutions")
    tp.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False  # torch's reference in full float32 too
    rng = np.random.default_rng(len(xs) * 100 + ws[0])
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws) * 0.3, rng.standard_normal(_bias_size(fn, ws, kw))]
    y_cpu = getattr(F, fn)(*(tp.tensor(a) for a in arrays), **kw)
    cot = rng.standard_normal(tuple(y_cpu.shape))
    y_ref, g_ref = _run(tp, fn, arrays, "float64", "cpu", False, kw, cot)
    y, grads = _run(tp, fn, arrays, dtype, "cuda", cl, kw, cot)
    assert y.device.type == "cuda" and y.dtype == getattr(tp, dtype)
    _close(y, _np(y_ref), dtype, "output")
    for name, g, r in zip(("input", "weight", "bias"), grads, g_ref):
        _close(g, _np(r), dtype, f"grad {name}")
    if TORCH_GPU:
        yt, grads_t = _run(torch, fn, arrays, dtype, "cuda", cl, kw, cot)
        assert y.stride() == yt.stride(), (y.stride(), yt.stride())
        assert grads[0].stride() == grads_t[0].stride()
        _close(y, yt.detach().double().cpu().numpy(), dtype, "output vs torch")
        for name, g, r in zip(("input", "weight", "bias"), grads, grads_t):
            _close(g, r.double().cpu().numpy(), dtype, f"grad {name} vs torch")
    elif cl and dtype != "float64":  # float64 stays row-major, as torch's
        assert y.is_contiguous(memory_format=tp.channels_last if y.dim() == 4 else tp.channels_last_3d)


@cudnn
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_benchmark_and_deterministic_agree(dtype, cudnn_api):
    rng = np.random.default_rng(7)
    x = _layout(tp.tensor(rng.standard_normal((8, 32, 28, 28)), dtype=getattr(tp, dtype), device="cuda"), True)
    w = tp.tensor(rng.standard_normal((64, 32, 3, 3)) * 0.1, dtype=getattr(tp, dtype), device="cuda")
    cot = tp.tensor(rng.standard_normal((8, 64, 28, 28)), dtype=getattr(tp, dtype), device="cuda")
    tp.backends.cudnn.allow_tf32 = False

    def fwd_bwd():
        xg, wg = x.detach().requires_grad_(), w.detach().requires_grad_()
        y = F.conv2d(xg, wg, padding=1)
        return [y.detach()] + list(tp.autograd.grad(y, [xg, wg], cot))

    plain = fwd_bwd()
    tp.backends.cudnn.benchmark = True
    timed = [fwd_bwd(), fwd_bwd()]  # the second call takes the cached choice
    tp.backends.cudnn.deterministic = True
    det = [fwd_bwd(), fwd_bwd()]
    for a, b in zip(det[0], det[1]):  # deterministic algorithms: bitwise equal runs
        np.testing.assert_array_equal(_np(a), _np(b))
    for run in timed + det:
        for a, b in zip(run, plain):
            _close(a, _np(b), dtype, "benchmark/deterministic vs heuristic")


@cudnn
def test_disabled_cudnn_falls_back_to_unfold(cudnn_api):
    rng = np.random.default_rng(3)
    x2, w2 = rng.standard_normal((2, 4, 10, 10)), rng.standard_normal((6, 4, 3, 3))
    x3, w3 = rng.standard_normal((2, 4, 5, 6, 7)), rng.standard_normal((6, 4, 3, 3, 3))
    ref = F.conv2d(tp.tensor(x2), tp.tensor(w2), padding=1)
    xg = _layout(tp.tensor(x2, device="cuda"), True)
    with_cudnn = F.conv2d(xg, tp.tensor(w2, device="cuda"), padding=1)
    assert with_cudnn.is_contiguous()  # float64 stays row-major, as torch's
    assert F.conv2d(xg.float(), tp.tensor(w2, device="cuda").float(), padding=1).is_contiguous(
        memory_format=tp.channels_last)  # cuDNN's layout
    ref3 = F.conv3d(tp.tensor(x3), tp.tensor(w3))
    _close(F.conv3d(tp.tensor(x3, device="cuda"), tp.tensor(w3, device="cuda")), _np(ref3), "float64", "cuDNN 3-D")
    tp.backends.cudnn.enabled = False
    try:
        unfolded = F.conv2d(xg, tp.tensor(w2, device="cuda"), padding=1)
        assert unfolded.is_contiguous()  # the unfold path's row-major result
        _close(unfolded, _np(ref), "float64", "unfold fallback")
        _close(F.conv3d(tp.tensor(x3, device="cuda"), tp.tensor(w3, device="cuda")), _np(ref3), "float64",
               "unfold 3-D (vol2col)")
    finally:
        tp.backends.cudnn.enabled = True
    _close(F.conv2d(xg, tp.tensor(w2, device="cuda"), padding=1), _np(ref), "float64", "cuDNN again")


@cudnn
def test_empty_batch_and_channels(cudnn_api):
    w = tp.randn(6, 4, 3, 3, device="cuda", requires_grad=True)
    x = tp.randn(0, 4, 8, 8, device="cuda", requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert tuple(y.shape) == (0, 6, 8, 8)
    gx, gw = tp.autograd.grad(y.sum(), [x, w])
    assert tuple(gx.shape) == (0, 4, 8, 8) and float(gw.abs().sum()) == 0.0
    y = F.conv2d(tp.randn(2, 0, 8, 8, device="cuda"), tp.randn(6, 0, 3, 3, device="cuda"), tp.ones(6, device="cuda"))
    np.testing.assert_array_equal(_np(y), np.ones((2, 6, 6, 6)))


@cudnn
def test_output_padding_cudnn_does_not_take(cudnn_api):
    # output_padding >= stride (allowed below the dilation): cuDNN's sizes rule has no such
    # output, so the unfold path computes it
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 4, 6, 7)), rng.standard_normal((4, 3, 3, 3))
    kw = dict(dilation=2, output_padding=1)
    ref = F.conv_transpose2d(tp.tensor(x), tp.tensor(w), **kw)
    got = F.conv_transpose2d(tp.tensor(x, device="cuda"), tp.tensor(w, device="cuda"), **kw)
    assert tuple(got.shape) == tuple(ref.shape)
    _close(got, _np(ref), "float64", "output_padding past cuDNN")


@cudnn
@pytest.mark.parametrize("dtype,cl", [("float32", False), ("bfloat16", True)], ids=["float32", "bfloat16-nhwc"])
def test_backend_api_caches_plans(dtype, cl):
    # forward, input and weight gradients of a new shape: three plans built once, then reused
    rng = np.random.default_rng(11)
    dt = getattr(tp, dtype)
    x = _layout(tp.tensor(rng.standard_normal((3, 16, 13, 11)), dtype=dt, device="cuda"), cl)
    w = tp.tensor(rng.standard_normal((24, 16, 3, 3)) * 0.1, dtype=dt, device="cuda")
    cot = tp.tensor(rng.standard_normal((3, 24, 13, 11)), dtype=dt, device="cuda")
    tp.backends.cudnn.allow_tf32 = False  # float32 within TOL of the legacy result

    def fwd_bwd():
        xg, wg = x.detach().requires_grad_(), w.detach().requires_grad_()
        y = F.conv2d(xg, wg, padding=1)
        return [y.detach()] + list(tp.autograd.grad(y, [xg, wg], cot))

    tp._C._cudnn_set_backend_api(False)
    legacy = fwd_bwd()
    tp._C._cudnn_set_backend_api(True)
    before = tp._C._cudnn_plan_cache_size()
    first = fwd_bwd()
    built = tp._C._cudnn_plan_cache_size()
    assert built == before + 3, (before, built)  # no pass fell back to the legacy API
    for _ in range(3):
        again = fwd_bwd()
    assert tp._C._cudnn_plan_cache_size() == built
    for run in (first, again):
        for a, b in zip(run, legacy):
            _close(a, _np(b), dtype, "backend API vs legacy API")
