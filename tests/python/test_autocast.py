"""tp.autocast against torch.autocast: output dtypes and values of the listed op families
under CPU autocast (bfloat16 and float16), the cast cache, nesting, gradients, errors,
thread-locality, and (on a GPU) CUDA autocast."""
import threading
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")

AMP_DTYPES = [(tp.bfloat16, torch.bfloat16), (tp.float16, torch.float16)]


def _maker(lib, amp="bfloat16"):
    """mk(shape, dtype="float32", seed=0): the same random values for tp and torch; dtype
    "amp" is the autocast dtype of the test."""
    def mk(shape, dtype="float32", seed=0, low=None, high=None):
        dtype = amp if dtype == "amp" else dtype
        rng = np.random.default_rng(seed)
        if low is not None:
            a = rng.integers(low, high, size=shape)
            return lib.from_numpy(a.astype(np.int64))
        a = rng.standard_normal(shape).astype(np.float32)
        return lib.from_numpy(a).to(getattr(lib, dtype))
    return mk


def _name(dt):
    return str(dt).split(".")[-1]


def _np(t):
    return t.detach().to(tp.float64 if isinstance(t, tp.Tensor) else torch.float64).numpy()


def _run(case, amp_dtype, device="cpu"):
    """case(lib, F, mk) under each library's autocast; returns (tp result, torch result)."""
    tp_dt, torch_dt = amp_dtype
    with torch.autocast(device, dtype=torch_dt):
        t = case(torch, torch.nn.functional, _maker(torch, _name(tp_dt)))
    with tp.autocast(device, dtype=tp_dt):
        p = case(tp, tp.nn.functional, _maker(tp, _name(tp_dt)))
    return p, t


def _check(case, amp_dtype, rtol=2e-2, atol=2e-2):
    p, t = _run(case, amp_dtype)
    ps = p if isinstance(p, (tuple, list)) else [p]
    ts = t if isinstance(t, (tuple, list)) else [t]
    for a, b in zip(ps, ts):
        assert _name(a.dtype) == _name(b.dtype)
        np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- op families vs torch
LOWER = {
    "mm": lambda lib, F, mk: lib.mm(mk((5, 7)), mk((7, 3), seed=1)),
    "bmm": lambda lib, F, mk: lib.bmm(mk((2, 5, 7)), mk((2, 7, 3), seed=1)),
    "matmul": lambda lib, F, mk: lib.matmul(mk((2, 5, 7)), mk((7, 3), seed=1)),
    "matmul_op": lambda lib, F, mk: mk((4, 6)) @ mk((6, 2), seed=1),
    "matmul_vec": lambda lib, F, mk: mk((6,)) @ mk((6, 2), seed=1),
    "addmm": lambda lib, F, mk: lib.addmm(mk((5, 3), seed=2), mk((5, 7)), mk((7, 3), seed=1)),
    "baddbmm": lambda lib, F, mk: lib.baddbmm(mk((2, 5, 3), seed=2), mk((2, 5, 7)),
                                              mk((2, 7, 3), seed=1)),
    "addbmm": lambda lib, F, mk: lib.addbmm(mk((5, 3), seed=2), mk((2, 5, 7)),
                                            mk((2, 7, 3), seed=1)),
    "linear_2d": lambda lib, F, mk: F.linear(mk((4, 8)), mk((3, 8), seed=1), mk((3,), seed=2)),
    "linear_3d": lambda lib, F, mk: F.linear(mk((2, 4, 8)), mk((3, 8), seed=1), mk((3,), seed=2)),
    "linear_1d": lambda lib, F, mk: F.linear(mk((8,)), mk((3, 8), seed=1), mk((3,), seed=2)),
    "linear_nobias": lambda lib, F, mk: F.linear(mk((4, 8)), mk((3, 8), seed=1)),
    "conv1d": lambda lib, F, mk: F.conv1d(mk((2, 3, 9)), mk((4, 3, 3), seed=1), mk((4,), seed=2)),
    "conv2d": lambda lib, F, mk: F.conv2d(mk((2, 3, 6, 6)), mk((4, 3, 3, 3), seed=1),
                                          mk((4,), seed=2), padding=1),
    "conv_transpose2d": lambda lib, F, mk: F.conv_transpose2d(mk((1, 3, 4, 4)),
                                                              mk((3, 2, 3, 3), seed=1)),
    "prelu": lambda lib, F, mk: F.prelu(mk((2, 3, 4)), mk((3,), seed=1)),
    "einsum": lambda lib, F, mk: lib.einsum("bij,bjk->bik", mk((2, 3, 4)), mk((2, 4, 5), seed=1)),
    "einsum_3": lambda lib, F, mk: lib.einsum("ij,jk,kl->il", mk((2, 3)), mk((3, 4), seed=1),
                                              mk((4, 2), seed=2)),
    "tensordot": lambda lib, F, mk: lib.tensordot(mk((3, 4, 2)), mk((4, 2, 5), seed=1), dims=2),
    "mixed_bf16_f32": lambda lib, F, mk: lib.mm(mk((4, 5), "amp"), mk((5, 2), seed=1)),
}

FP32 = {
    "prod": lambda lib, F, mk: lib.prod(mk((6,), "amp") * 0.5 + 1, 0),
    "trace": lambda lib, F, mk: lib.trace(mk((4, 4), "amp")),
    "inv": lambda lib, F, mk: lib.linalg.inv(mk((3, 3), "amp") + 4 * lib.eye(3)),
    "svdvals": lambda lib, F, mk: lib.linalg.svdvals(mk((4, 3), "amp")),
    "mse_loss": lambda lib, F, mk: F.mse_loss(mk((4, 5), "amp"), mk((4, 5), "amp", 1)),
    "l1_loss": lambda lib, F, mk: F.l1_loss(mk((4, 5), "amp"), mk((4, 5), "amp", 1)),
    "smooth_l1": lambda lib, F, mk: F.smooth_l1_loss(mk((4, 5), "amp"),
                                                     mk((4, 5), "amp", 1)),
    "cross_entropy": lambda lib, F, mk: F.cross_entropy(mk((4, 5), "amp"),
                                                        mk((4,), low=0, high=5)),
    "cross_entropy_none": lambda lib, F, mk: F.cross_entropy(mk((4, 5), "amp"),
                                                             mk((4,), low=0, high=5),
                                                             reduction="none"),
    "nll_loss": lambda lib, F, mk: F.nll_loss(mk((4, 5), "amp"), mk((4,), low=0, high=5)),
    "bce": lambda lib, F, mk: F.binary_cross_entropy(lib.sigmoid(mk((6,), "amp")),
                                                     lib.sigmoid(mk((6,), "amp", 1))),
    "bce_logits": lambda lib, F, mk: F.binary_cross_entropy_with_logits(
        mk((6,), "amp"), lib.sigmoid(mk((6,), "amp", 1))),
    "kl_div": lambda lib, F, mk: F.kl_div(mk((4, 5), "amp"), mk((4, 5), "amp", 1),
                                          reduction="batchmean", log_target=True),
    "reflect_pad": lambda lib, F, mk: F.pad(mk((1, 2, 4, 4), "amp"), (1, 1, 1, 1),
                                            mode="reflect"),
    "quantile": lambda lib, F, mk: lib.quantile(mk((9,), "amp"), 0.3),
    "loss_after_linear": lambda lib, F, mk: F.mse_loss(
        F.linear(mk((4, 8)), mk((3, 8), seed=1)), mk((4, 3), seed=2)),
}

PROMOTE = {
    "cat": lambda lib, F, mk: lib.cat([mk((2, 3), "amp"), mk((1, 3), seed=1)]),
    "cat_lower": lambda lib, F, mk: lib.cat([mk((2, 3), "amp"), mk((1, 3), "amp", 1)]),
    "stack": lambda lib, F, mk: lib.stack([mk((3,), "amp"), mk((3,), seed=1)]),
    "index_copy": lambda lib, F, mk: mk((4, 3), "amp").index_copy(
        0, lib.tensor([0, 2]), mk((2, 3), seed=1)),
}

# Not listed on CPU: they run in their inputs' dtype.
UNLISTED = {
    "softmax": lambda lib, F, mk: F.softmax(mk((3, 5)), dim=1),
    "softmax_bf16": lambda lib, F, mk: F.softmax(mk((3, 5), "amp"), dim=1),
    "log_softmax_of_linear": lambda lib, F, mk: F.log_softmax(
        F.linear(mk((4, 8)), mk((3, 8), seed=1)), dim=1),
    "layer_norm": lambda lib, F, mk: F.layer_norm(mk((3, 8), "amp"), (8,),
                                                  mk((8,), seed=1), mk((8,), seed=2)),
    "layer_norm_f32": lambda lib, F, mk: F.layer_norm(mk((3, 8)), (8,)),
    "exp": lambda lib, F, mk: lib.exp(mk((5,), "amp")),
    "sum": lambda lib, F, mk: mk((5,), "amp").sum(),
    "add_mixed": lambda lib, F, mk: mk((5,), "amp") + mk((5,), seed=1),
    "relu_of_mm": lambda lib, F, mk: lib.relu(lib.mm(mk((5, 7)), mk((7, 3), seed=1))),
}


@pytest.mark.parametrize("amp", AMP_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", sorted(LOWER))
def test_lower_precision_ops(name, amp):
    _check(LOWER[name], amp)


@pytest.mark.parametrize("amp", AMP_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", sorted(FP32))
def test_fp32_ops(name, amp):
    _check(FP32[name], amp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("amp", AMP_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", sorted(PROMOTE))
def test_promote_ops(name, amp):
    _check(PROMOTE[name], amp, rtol=0, atol=0)


@pytest.mark.parametrize("amp", AMP_DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", sorted(UNLISTED))
def test_unlisted_ops(name, amp):
    _check(UNLISTED[name], amp)


def test_lower_precision_results_are_cast():
    # the autocast output is the op on rounded inputs, not a rounded float32 result
    mk = _maker(tp)
    a, b = mk((16, 32)), mk((32, 8), seed=1)
    with tp.autocast("cpu"):
        r = tp.mm(a, b)
    ref = tp.mm(a.to(tp.bfloat16), b.to(tp.bfloat16))
    assert r.dtype == tp.bfloat16 and tp.equal(r, ref)


def test_float64_and_integers_untouched():
    mk = _maker(tp)
    with tp.autocast("cpu"):
        assert tp.mm(mk((3, 4), "float64"), mk((4, 2), "float64", 1)).dtype == tp.float64
        assert tp.mm(mk((3, 4), low=0, high=5), mk((4, 2), low=0, high=5)).dtype == tp.int64
        assert F_mse(mk((3,), "float64"), mk((3,), "float64", 1)).dtype == tp.float64
        # promote ignores float64 arguments, as torch does
        t = torch.cat([torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.bfloat16)])
        p = tp.cat([tp.ones(2, dtype=tp.float64), tp.ones(2, dtype=tp.bfloat16)])
    assert _name(p.dtype) == _name(t.dtype)


def F_mse(a, b):
    return tp.nn.functional.mse_loss(a, b)


def test_inplace_and_out_forms_not_autocast():
    a, b = tp.ones((2, 2)), tp.ones((2, 2))
    out = tp.empty((2, 2))
    with tp.autocast("cpu"):
        tp.mm(a, b, out=out)
        c = tp.zeros((2, 2)).addmm_(a, b)
    assert out.dtype == tp.float32 and c.dtype == tp.float32


def test_explicit_dtype_is_not_autocast():
    x = tp.ones(4, dtype=tp.bfloat16)
    with tp.autocast("cpu"):
        assert tp.prod(x, dtype=tp.bfloat16).dtype == tp.bfloat16
        assert tp.prod(x).dtype == tp.float32


# ---------------------------------------------------------------- state and regions
def test_defaults_and_state_functions():
    assert tp.get_autocast_dtype("cpu") == tp.bfloat16
    assert tp.get_autocast_dtype("cuda") == tp.float16
    assert not tp.is_autocast_enabled("cpu") and not tp.is_autocast_enabled()
    assert tp.is_autocast_cache_enabled()
    with tp.autocast("cpu", dtype=tp.float16):
        assert tp.is_autocast_enabled("cpu") and not tp.is_autocast_enabled("cuda")
        assert tp.get_autocast_dtype("cpu") == tp.float16
    assert not tp.is_autocast_enabled("cpu") and tp.get_autocast_dtype("cpu") == tp.bfloat16
    assert tp.amp.autocast is tp.autocast


def test_set_autocast_enabled_and_dtype_directly():
    a = tp.ones((2, 2))
    tp.set_autocast_enabled("cpu", True)
    tp.set_autocast_dtype("cpu", tp.float16)
    try:
        assert tp.mm(a, a).dtype == tp.float16
    finally:
        tp.set_autocast_enabled("cpu", False)
        tp.set_autocast_dtype("cpu", tp.bfloat16)
    assert tp.mm(a, a).dtype == tp.float32


def test_nesting_and_disabled_inside():
    a = tp.ones((2, 2))
    with tp.autocast("cpu"):
        assert tp.mm(a, a).dtype == tp.bfloat16
        with tp.autocast("cpu", enabled=False):
            assert not tp.is_autocast_enabled("cpu")
            assert tp.mm(a, a).dtype == tp.float32
        assert tp.mm(a, a).dtype == tp.bfloat16
        with tp.autocast("cpu", dtype=tp.float16):
            assert tp.mm(a, a).dtype == tp.float16
        assert tp.mm(a, a).dtype == tp.bfloat16
    assert tp.mm(a, a).dtype == tp.float32


def test_nesting_counter():
    assert tp.autocast_increment_nesting() == 1
    assert tp.autocast_increment_nesting() == 2
    assert tp.autocast_decrement_nesting() == 1
    assert tp.autocast_decrement_nesting() == 0


def test_exception_restores_state():
    with pytest.raises(ValueError):
        with tp.autocast("cpu"):
            raise ValueError("boom")
    assert not tp.is_autocast_enabled("cpu")
    # an op that fails inside its autocast redispatch leaves autocast armed
    with tp.autocast("cpu"):
        with pytest.raises(RuntimeError, match="mm"):
            tp.mm(tp.ones((2, 3)), tp.ones((2, 3)))
        assert tp.mm(tp.ones((2, 2)), tp.ones((2, 2))).dtype == tp.bfloat16


def test_decorator():
    @tp.autocast("cpu")
    def f(a):
        assert tp.is_autocast_enabled("cpu")
        return a @ a

    a = tp.ones((2, 2))
    assert f(a).dtype == tp.bfloat16 and f.__name__ == "f"
    assert not tp.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        tp.autocast("cpu")(3)


def test_thread_local():
    seen = {}

    def worker():
        seen["enabled"] = tp.is_autocast_enabled("cpu")
        seen["dtype"] = tp.mm(tp.ones((2, 2)), tp.ones((2, 2))).dtype

    with tp.autocast("cpu"):
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        assert tp.mm(tp.ones((2, 2)), tp.ones((2, 2))).dtype == tp.bfloat16
    assert seen == {"enabled": False, "dtype": tp.float32}


# ---------------------------------------------------------------- cache and gradients
def test_cache_reuses_parameter_casts():
    lin = tp.nn.Linear(4, 3)
    x = tp.ones((2, 4))
    with tp.autocast("cpu"):
        y1, y2 = lin(x), lin(x)
        # weight and bias, each cast once although used twice
        assert tp._C._autocast_cache_size() == 2
        with tp.autocast("cpu"):
            lin(x)
        assert tp._C._autocast_cache_size() == 2  # an inner region's exit keeps the cache
    assert tp._C._autocast_cache_size() == 0
    # addmm(bias, x, weight.t()): both results share the bias's and the weight's cast nodes
    g1, g2 = y1.grad_fn.next_functions, y2.grad_fn.next_functions
    assert g1[0][0] is g2[0][0] and g1[2][0].next_functions[0][0] is g2[2][0].next_functions[0][0]
    with tp.autocast("cpu"):
        y3 = lin(x)
    assert y3.grad_fn.next_functions[0][0] is not g1[0][0]  # a new region casts anew
    # inputs (not leaves requiring grad) and cache_enabled=False are not cached
    with tp.autocast("cpu", cache_enabled=False):
        assert not tp.is_autocast_cache_enabled()
        lin(x)
        assert tp._C._autocast_cache_size() == 0
    assert tp.is_autocast_cache_enabled()


def test_cache_not_used_for_non_leaves():
    w = tp.ones((3, 3), requires_grad=True)
    with tp.autocast("cpu"):
        tp.mm(w * 2, w * 2)
        assert tp._C._autocast_cache_size() == 0  # w * 2 is not a leaf
        tp.mm(w, w)
        assert tp._C._autocast_cache_size() == 1
    assert tp._C._autocast_cache_size() == 0


def _mlp_grads(lib, x_np, w1, w2, dtype):
    nn = lib.nn
    m = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    with lib.no_grad():
        m[0].weight.copy_(lib.from_numpy(w1))
        m[2].weight.copy_(lib.from_numpy(w2))
        m[0].bias.zero_()
        m[2].bias.zero_()
    x = lib.from_numpy(x_np)
    ac = lib.autocast("cpu", dtype=dtype)
    with ac:
        out = m(x)
        loss = nn.functional.mse_loss(out, lib.zeros((4, 2)))
    loss.backward()
    return out, loss, m[0].weight.grad, m[2].bias.grad


def test_gradients_flow_through_casts():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    w1 = rng.standard_normal((5, 6)).astype(np.float32)
    w2 = rng.standard_normal((2, 5)).astype(np.float32)
    po, pl, pg, pb = _mlp_grads(tp, x, w1, w2, tp.bfloat16)
    to, tl, tg, tb = _mlp_grads(torch, x, w1, w2, torch.bfloat16)
    assert po.dtype == tp.bfloat16 and pl.dtype == tp.float32
    assert pg.dtype == tp.float32 and pb.dtype == tp.float32
    for a, b in [(po, to), (pl, tl), (pg, tg), (pb, tb)]:
        assert _name(a.dtype) == _name(b.dtype)
        np.testing.assert_allclose(_np(a), _np(b), rtol=3e-2, atol=3e-2)


# ---------------------------------------------------------------- errors and warnings
def test_bad_arguments():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        tp.autocast(3)
    with pytest.raises(RuntimeError):
        tp.autocast("foo")
    with pytest.warns(UserWarning, match="CPU Autocast only supports dtypes of"):
        ac = tp.autocast("cpu", dtype=tp.float32)
    with ac:
        assert not tp.is_autocast_enabled("cpu")
        assert tp.mm(tp.ones((2, 2)), tp.ones((2, 2))).dtype == tp.float32
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        tp.autocast("cpu", dtype=tp.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tp.autocast("cpu", dtype=tp.float32, enabled=False)


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU fallback")
def test_cuda_autocast_without_gpu_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ac = tp.autocast("cuda")
    with ac:
        assert not tp.is_autocast_enabled("cuda")
    with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
        tp.cuda.amp.autocast()


def test_cuda_autocast_leaves_cpu_tensors_alone():
    a, h = tp.ones((2, 2)), tp.ones(3, dtype=tp.bfloat16)
    tp.set_autocast_enabled("cuda", True)
    try:
        assert tp.is_autocast_enabled("cuda") and not tp.is_autocast_enabled("cpu")
        assert tp.mm(a, a).dtype == tp.float32
        assert tp.exp(h).dtype == tp.bfloat16
        assert tp.nn.functional.binary_cross_entropy(tp.full((2,), 0.5),
                                                     tp.ones(2)).dtype == tp.float32
    finally:
        tp.set_autocast_enabled("cuda", False)


@pytest.mark.parametrize("name,cpu,cuda", [
    ("mm", "lower_precision", "lower_precision"), ("linear", "lower_precision", "lower_precision"),
    ("mv", None, "lower_precision"), ("einsum", "lower_precision", "lower_precision"),
    ("tensordot", "lower_precision", "promote"),
    ("softmax", None, "fp32"), ("log_softmax", None, "fp32"), ("layer_norm", None, "fp32"),
    ("exp", None, "fp32"), ("pow", None, "fp32"), ("sum", None, "fp32"), ("prod", "fp32", "fp32"),
    ("mse_loss", "fp32", "fp32"), ("cross_entropy", "fp32", "fp32"),
    ("atan2", None, "promote"), ("cat", "promote", None), ("index_put", None, "promote"),
    ("binary_cross_entropy", "fp32", "banned"), ("add", None, None)])
def test_policy_tables(name, cpu, cuda):
    assert tp._C._autocast_policy(name, "cpu") == cpu
    assert tp._C._autocast_policy(name, "cuda") == cuda


# ---------------------------------------------------------------- CUDA
@gpu
@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_cuda_matmul_and_softmax(dtype):
    a = tp.randn((8, 16), device="cuda")
    b = tp.randn((16, 4), device="cuda")
    with tp.autocast("cuda", dtype=dtype):
        assert tp.is_autocast_enabled("cuda") and tp.get_autocast_dtype("cuda") == dtype
        r = a @ b
        assert r.dtype == dtype
        s = tp.nn.functional.softmax(r, dim=1)
        assert s.dtype == tp.float32
        assert tp.exp(r).dtype == tp.float32
        assert tp.atan2(r, a[:, :4]).dtype == tp.float32
        assert tp.mm(a.cpu(), b.cpu()).dtype == tp.float32  # CPU tensors: CPU autocast is off
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            tp.nn.functional.binary_cross_entropy(tp.sigmoid(r), tp.ones_like(s))
    ref = a.cpu().to(dtype).float() @ b.cpu().to(dtype).float()
    np.testing.assert_allclose(_np(r.cpu()), _np(ref), rtol=2e-2, atol=2e-2)


@gpu
@pytest.mark.parametrize("dtype", [tp.float16, tp.bfloat16])
def test_cuda_mlp_forward_backward(dtype):
    tp.manual_seed(0)
    m = tp.nn.Sequential(tp.nn.Linear(16, 32), tp.nn.ReLU(), tp.nn.Linear(32, 4))
    x, t = tp.randn((8, 16)), tp.randint(0, 4, (8,))
    cpu_loss = tp.nn.functional.cross_entropy(m(x), t)
    cpu_loss.backward()
    cpu_grad = m[0].weight.grad.clone()
    m.zero_grad()
    m.to("cuda")
    with tp.autocast("cuda", dtype=dtype):
        out = m(x.cuda())
        loss = tp.nn.functional.cross_entropy(out, t.cuda())
    assert out.dtype == dtype and loss.dtype == tp.float32
    loss.backward()
    assert m[0].weight.grad.dtype == tp.float32
    np.testing.assert_allclose(loss.item(), cpu_loss.item(), rtol=3e-2, atol=3e-2)
    np.testing.assert_allclose(_np(m[0].weight.grad.cpu()), _np(cpu_grad), rtol=5e-2, atol=5e-2)


@gpu
def test_cuda_amp_alias():
    with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
        ac = tp.cuda.amp.autocast()
    a = tp.ones((4, 4), device="cuda")
    with ac:
        assert (a @ a).dtype == tp.float16
