"""The fused attention ops (_flash_attention_forward / _backward) against PyTorch: the CPU
reference's values, log-sum-exp and gradients (causal or not, L != S), its bad-input errors,
scaled_dot_product_attention and MultiheadAttention routing, and on a GPU the CUDA kernels
(float16 / bfloat16, head dims 64 and 128) against torch's CUDA scaled_dot_product_attention."""
import math

import numpy as np
import pytest
import torch

import tensorplay as tp
import tensorplay.nn.functional as F

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
FWD, BWD = tp._C._flash_attention_forward, tp._C._flash_attention_backward


def _qkv(b, h, l, s, d, seed, dtype="float64", device="cpu"):
    """(q, k, v) as tensorplay tensors and as torch tensors with the same values."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) for shape in ((b, h, l, d), (b, h, s, d), (b, h, s, d))]
    ours = [tp.tensor(a, dtype=getattr(tp, dtype), device=device) for a in arrays]
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), device=device) for a in arrays]
    return ours, theirs


def _np(t):
    return np.asarray(t.detach().cpu().to(tp.float64).tolist() if isinstance(t, tp.Tensor)
                      else t.detach().cpu().double().numpy())


def _scores(q, k, causal, scale):
    """torch: the scaled scores with the top-left causal mask applied."""
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return s


SHAPES = [(1, 1), (7, 7), (5, 9), (9, 5), (33, 17)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("l,s", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_forward_and_lse_match_torch(l, s, causal, dtype):
    (q, k, v), (tq, tk, tv) = _qkv(2, 3, l, s, 8, seed=l * 31 + s, dtype=dtype)
    scale = 1 / math.sqrt(8)
    out, lse = FWD(q, k, v, causal, scale)
    scores = _scores(tq, tk, causal, scale)
    tol = 1e-12 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(_np(out), _np(torch.softmax(scores, -1) @ tv), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(lse), _np(torch.logsumexp(scores, -1)), rtol=tol, atol=tol)
    assert out.dtype == q.dtype and tuple(lse.shape) == (2, 3, l)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("l,s", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cpu_gradients_match_torch(l, s, causal, dtype):
    (q, k, v), (tq, tk, tv) = _qkv(2, 2, l, s, 4, seed=l * 7 + s, dtype=dtype)
    for t in (q, k, v, tq, tk, tv):
        t.requires_grad_(True)
    g = np.random.default_rng(5).standard_normal((2, 2, l, 4))
    out, _ = FWD(q, k, v, causal, 0.7)
    assert out.grad_fn.name() == "FlashAttentionBackward0"
    out.backward(tp.tensor(g, dtype=q.dtype))
    ref = torch.softmax(_scores(tq, tk, causal, 0.7), -1) @ tv
    ref.backward(torch.tensor(g, dtype=tq.dtype))
    tol = 1e-11 if dtype == "float64" else 2e-5
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        np.testing.assert_allclose(_np(ours.grad), _np(theirs.grad), rtol=tol, atol=tol)


def test_cpu_backward_op_directly_and_half_inputs():
    (q, k, v), (tq, tk, tv) = _qkv(1, 2, 6, 6, 8, seed=3, dtype="float32")
    out, lse = FWD(q, k, v, True, 0.5)
    dq, dk, dv = BWD(tp.ones_like(out), q, k, v, out, lse, True, 0.5)
    for t in (tq, tk, tv):
        t.requires_grad_(True)
    (torch.softmax(_scores(tq, tk, True, 0.5), -1) @ tv).sum().backward()
    for ours, theirs in ((dq, tq), (dk, tk), (dv, tv)):
        np.testing.assert_allclose(_np(ours), _np(theirs.grad), rtol=2e-5, atol=2e-5)
    h = [t.to(tp.bfloat16) for t in (q, k, v)]
    hout, hlse = FWD(*h, True, 0.5)
    assert hout.dtype == tp.bfloat16 and hlse.dtype == tp.float32
    np.testing.assert_allclose(_np(hout), _np(out), atol=5e-2)


def test_cpu_no_keys_and_empty():
    (q, k, v), _ = _qkv(1, 1, 3, 0, 4, seed=1, dtype="float32")
    out, lse = FWD(q, k, v, False, 1.0)
    assert (_np(out) == 0).all() and np.isneginf(_np(lse)).all()
    (q, k, v), _ = _qkv(0, 2, 3, 3, 4, seed=1, dtype="float32")
    out, lse = FWD(q, k, v, True, 1.0)
    assert tuple(out.shape) == (0, 2, 3, 4) and tuple(lse.shape) == (0, 2, 3)


def test_bad_inputs_name_the_op():
    q = tp.zeros((1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="_flash_attention_forward: expected 4-D"):
        FWD(q[0], q[0], q[0], False, 1.0)
    with pytest.raises(RuntimeError, match="_flash_attention_forward: expected query, key and value of one dtype"):
        FWD(q, q.double(), q, False, 1.0)
    with pytest.raises(RuntimeError, match="_flash_attention_forward: query .* do not match"):
        FWD(q, tp.zeros((1, 2, 3, 5)), q, False, 1.0)
    with pytest.raises(RuntimeError, match="_flash_attention_forward: query .* do not match"):
        FWD(q, q, tp.zeros((1, 2, 4, 4)), False, 1.0)
    with pytest.raises(RuntimeError, match="_flash_attention_forward: expected a floating query"):
        FWD(q.long(), q.long(), q.long(), False, 1.0)
    out, lse = FWD(q, q, q, False, 1.0)
    with pytest.raises(RuntimeError, match="_flash_attention_backward: expected a logsumexp"):
        BWD(out, q, q, q, out, lse[0], False, 1.0)
    with pytest.raises(RuntimeError, match="_flash_attention_backward: grad_out"):
        BWD(out[:, :1], q, q, q, out, lse, False, 1.0)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_cpu_math_path_matches_torch(causal):
    (q, k, v), (tq, tk, tv) = _qkv(2, 3, 5, 7, 8, seed=11)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="Explicit attn_mask"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=tp.ones((5, 7), dtype=tp.bool), is_causal=True)


def _mha_pair(e, h, dtype, device, seed=0, **kw):
    torch.manual_seed(seed)
    ref = torch.nn.MultiheadAttention(e, h, batch_first=True, **kw).to(dtype)
    ours = tp.nn.MultiheadAttention(e, h, batch_first=True, dtype=getattr(tp, str(dtype).split(".")[1]), **kw)
    with tp.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(tp.tensor(dict(ref.named_parameters())[name].detach().double().numpy(), dtype=p.dtype))
    return ours.to(device), ref.to(device)


@pytest.mark.parametrize("extra", [{}, {"add_bias_kv": True, "add_zero_attn": True}])
@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_mha_without_weights_matches_torch(causal, padding, extra):
    ours, ref = _mha_pair(16, 2, torch.float64, "cpu", **extra)
    x = np.random.default_rng(2).standard_normal((3, 6, 16))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64) if causal else None
    tmask = tp.tensor(mask.numpy()) if causal else None
    kpm = torch.tensor([[False] * 5 + [True], [False] * 6, [False] * 4 + [True] * 2]) if padding else None
    out, w = ours(*[tp.tensor(x)] * 3, need_weights=False, attn_mask=tmask, is_causal=causal,
                  key_padding_mask=tp.tensor(kpm.numpy()) if padding else None)
    rout, _ = ref(*[torch.tensor(x)] * 3, need_weights=False, attn_mask=mask, is_causal=causal, key_padding_mask=kpm)
    assert w is None
    np.testing.assert_allclose(_np(out), _np(rout), rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------------------ CUDA kernels
GPU_SHAPES = [(1, 1), (7, 7), (64, 64), (65, 129), (200, 200), (1024, 1024), (100, 300), (300, 100)]
GPU_TOL = {"bfloat16": 2e-2, "float16": 5e-3}


def _gpu_qkv(b, h, l, s, d, dtype, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) for shape in ((b, h, l, d), (b, h, s, d), (b, h, s, d))]
    ours = [tp.tensor(a, dtype=getattr(tp, dtype), device="cuda").requires_grad_(True) for a in arrays]
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), device="cuda").requires_grad_(True) for a in arrays]
    return ours, theirs


def _close_rel(ours, theirs, tol):
    """Max error within tol of the reference's largest entry. The floor 1e-3 is for results
    that are zero only by cancellation of O(1) terms (with one key, dq and dk are 0 as
    P * (dP - rowsum(dO * O)); both libraries are off by a few 1e-7 there)."""
    a, b = _np(ours), _np(theirs)
    assert np.isfinite(a).all()
    err = np.abs(a - b).max() if a.size else 0.0
    assert err <= tol * max(np.abs(b).max() if b.size else 0.0, 1e-3), f"max abs error {err}"


def test_mha_is_causal_needs_a_mask_as_torch():
    msgs = []
    for lib in (tp, torch):
        m = lib.nn.MultiheadAttention(8, 2, batch_first=True)
        x = lib.randn(2, 5, 8)
        for need_weights in (False, True):
            with pytest.raises(RuntimeError) as e:
                m(x, x, x, need_weights=need_weights, is_causal=True)
            msgs.append(str(e.value))
    assert msgs[:2] == msgs[2:] and "Need attn_mask if specifying the is_causal hint" in msgs[0]


@pytest.fixture(autouse=True)
def _flash_sdp_on():
    """These tests need the fused kernel (on by default; a test may switch it off)."""
    prev = tp.backends.cuda.flash_sdp_enabled()
    tp.backends.cuda.enable_flash_sdp(True)
    yield
    tp.backends.cuda.enable_flash_sdp(prev)


def test_flash_sdp_switch():
    tp.backends.cuda.enable_flash_sdp(False)
    assert not tp.backends.cuda.flash_sdp_enabled()
    tp.backends.cuda.enable_flash_sdp(True)
    assert tp.backends.cuda.flash_sdp_enabled()
    with pytest.raises(RuntimeError, match="enable_flash_sdp expects a bool, but got int"):
        tp.backends.cuda.enable_flash_sdp(1)


@pytest.fixture(params=["wmma", "mma", "cudnn"])
def flash_kernel(request):
    """Runs a GPU test on each fused path: the WMMA kernels (Note [Flash attention]), the
    mma.sync ones (Note [Flash attention on mma.sync], tp._C._cuda_set_flash_mma) and cuDNN's
    SDPA graphs with the mma kernels behind them (Note [cuDNN attention], tp._C._cudnn_set_sdpa;
    skipped in a build without the cuDNN frontend)."""
    if not HAS_GPU:
        pytest.skip("no CUDA GPU")
    if request.param == "cudnn" and not tp._C._cudnn_sdpa_available():
        pytest.skip("this build has no cuDNN frontend")
    prev, prev_sdpa = tp._C._cuda_flash_mma(), tp._C._cudnn_sdpa()
    tp._C._cuda_set_flash_mma(request.param != "wmma")
    tp._C._cudnn_set_sdpa(request.param == "cudnn")
    yield request.param
    tp._C._cuda_set_flash_mma(prev)
    tp._C._cudnn_set_sdpa(prev_sdpa)


def test_cudnn_sdpa_switch():
    assert tp._C._cudnn_sdpa() is True  # on by default (Note [cuDNN attention])
    tp._C._cudnn_set_sdpa(False)
    try:
        assert tp._C._cudnn_sdpa() is False
    finally:
        tp._C._cudnn_set_sdpa(True)
    assert isinstance(tp._C._cudnn_sdpa_available(), bool) and isinstance(tp._C._cudnn_sdpa_graphs(), int)


@gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
def test_cudnn_sdpa_runs_and_matches_torch(d, causal):
    # Note [cuDNN attention]: a plain shape builds a forward and a backward graph, reused after
    if not tp._C._cudnn_sdpa_available():
        pytest.skip("this build has no cuDNN frontend")
    prev = tp._C._cudnn_sdpa()
    tp._C._cudnn_set_sdpa(True)
    try:
        before = tp._C._cudnn_sdpa_graphs()
        for _ in range(2):
            (q, k, v), (tq, tk, tv) = _gpu_qkv(2, 3, 256, 256, d, "bfloat16", seed=d + causal)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
            _close_rel(out, ref, GPU_TOL["bfloat16"])
            g = np.random.default_rng(5).standard_normal((2, 3, 256, d))
            out.backward(tp.tensor(g, dtype=q.dtype, device="cuda"))
            ref.backward(torch.tensor(g, dtype=tq.dtype, device="cuda"))
            for ours, theirs in ((q, tq), (k, tk), (v, tv)):
                assert ours.grad.dtype == ours.dtype
                _close_rel(ours.grad, theirs.grad, GPU_TOL["bfloat16"])
            assert tp._C._cudnn_sdpa_graphs() == before + 2  # built once, then reused
    finally:
        tp._C._cudnn_set_sdpa(prev)


@gpu
def test_flash_mma_switch_is_on_by_default():
    assert tp._C._cuda_flash_mma() is True
    tp._C._cuda_set_flash_mma(False)
    try:
        assert tp._C._cuda_flash_mma() is False
    finally:
        tp._C._cuda_set_flash_mma(True)


@gpu
@pytest.mark.usefixtures("flash_kernel")
@pytest.mark.parametrize("l,s", GPU_SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_cuda_fused_matches_torch(dtype, d, causal, l, s):
    (q, k, v), (tq, tk, tv) = _gpu_qkv(2, 3, l, s, d, dtype, seed=l + s + d)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert out.grad_fn.name() == "FlashAttentionBackward0"  # the fused path, not the math one
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    tol = GPU_TOL[dtype]
    _close_rel(out, ref, tol)
    g = np.random.default_rng(9).standard_normal((2, 3, l, d))
    out.backward(tp.tensor(g, dtype=q.dtype, device="cuda"))
    ref.backward(torch.tensor(g, dtype=tq.dtype, device="cuda"))
    for ours, theirs in ((q, tq), (k, tk), (v, tv)):
        _close_rel(ours.grad, theirs.grad, tol)


@gpu
@pytest.mark.usefixtures("flash_kernel")
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
def test_cuda_lse_matches_torch(causal, d):
    (q, k, v), (tq, tk, _) = _gpu_qkv(1, 2, 130, 70, d, "bfloat16", seed=4)
    _, lse = FWD(q, k, v, causal, 0.125)
    assert lse.dtype == tp.float32
    ref = torch.logsumexp(_scores(tq.float().cpu(), tk.float().cpu(), causal, 0.125), -1)
    np.testing.assert_allclose(_np(lse), _np(ref), rtol=1e-3, atol=1e-3)


@gpu
@pytest.mark.usefixtures("flash_kernel")
def test_cuda_strided_inputs_and_fallbacks():
    # (B, L, H, D) transposed to (B, H, L, D): the op makes it contiguous
    base = [tp.randn((2, 50, 4, 64), dtype=tp.float16, device="cuda") for _ in range(3)]
    q, k, v = (t.transpose(1, 2) for t in base)
    out = F.scaled_dot_product_attention(q, k, v)
    ref = F.scaled_dot_product_attention(*(t.contiguous().float() for t in (q, k, v)))
    _close_rel(out, ref, 5e-3)
    # head dim 32, float32, a mask: the math path
    for x in (tp.randn((1, 2, 8, 32), dtype=tp.float16, device="cuda"), tp.randn((1, 2, 8, 64), device="cuda")):
        x.requires_grad_(True)
        assert F.scaled_dot_product_attention(x, x, x).grad_fn.name() != "FlashAttentionBackward0"
    with pytest.raises(NotImplementedError, match="_flash_attention_forward: the CUDA kernel takes"):
        FWD(*(tp.randn((1, 2, 8, 32), dtype=tp.float16, device="cuda"),) * 3, False, 1.0)


@gpu
def test_cuda_deterministic_mode_takes_math_path_for_gradients():
    q = tp.randn((1, 2, 8, 64), dtype=tp.bfloat16, device="cuda").requires_grad_(True)
    tp.use_deterministic_algorithms(True)
    try:
        assert F.scaled_dot_product_attention(q, q, q).grad_fn.name() != "FlashAttentionBackward0"
        with tp.no_grad():
            assert F.scaled_dot_product_attention(q, q, q).dtype == tp.bfloat16
    finally:
        tp.use_deterministic_algorithms(False)
    assert F.scaled_dot_product_attention(q, q, q).grad_fn.name() == "FlashAttentionBackward0"


@gpu
@pytest.mark.usefixtures("flash_kernel")
def test_cuda_mha_reaches_fused_kernel(monkeypatch):
    calls = []
    monkeypatch.setattr(tp._C, "_flash_attention_forward", lambda *a: calls.append(a[3]) or FWD(*a))
    ours, ref = _mha_pair(128, 2, torch.bfloat16, "cuda")
    x = np.random.default_rng(3).standard_normal((2, 40, 128))
    xo = tp.tensor(x, dtype=tp.bfloat16, device="cuda")
    xr = torch.tensor(x, dtype=torch.bfloat16, device="cuda")
    mask = torch.nn.Transformer.generate_square_subsequent_mask(40, device="cuda")
    out, _ = ours(xo, xo, xo, need_weights=False, attn_mask=tp.tensor(mask.cpu().numpy(), device="cuda"),
                  is_causal=True)
    rout, _ = ref(xr, xr, xr, need_weights=False, attn_mask=mask, is_causal=True)
    assert calls == [True]
    _close_rel(out, rout, 3e-2)
