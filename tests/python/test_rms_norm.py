"""rms_norm through the fused _fused_rms_norm op on the CPU: values, dtypes and shapes,
first and second derivatives (finite differences in float64 and PyTorch's autograd), the
weight gradient's reproducibility and PyTorch's errors on bad inputs."""
import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.autograd.gradcheck import gradcheck, gradgradcheck

TOL = {"float64": 1e-10, "float32": 2e-5, "bfloat16": 2e-2, "float16": 2e-3}


def _pair(shape, dtype="float64", seed=0, scale=1.0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape) * scale
    t = torch.tensor(a).to(getattr(torch, dtype)).requires_grad_(requires_grad)
    x = tp.tensor(a, dtype=tp.float64).to(getattr(tp, dtype)).requires_grad_(requires_grad)
    return x, t


def _close(ours, ref, dtype="float64", scale=1.0):
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(ours.detach().to(tp.float64).numpy(), ref.detach().double().numpy(), rtol=tol,
                               atol=tol)


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


CASES = [((4, 8), [8]), ((3, 5, 7), [7]), ((2, 3, 4, 5), [4, 5]), ((6,), [6]), ((5, 300), [300]),
         ((2, 1027), [1027])]


@pytest.mark.parametrize("shape,norm", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16", "float16"])
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_fused_rms_norm_matches_torch(shape, norm, dtype, with_weight, eps):
    x, tx = _pair(shape, dtype, seed=1)
    w, tw = _pair(norm, dtype, seed=2) if with_weight else (None, None)
    y, rstd = tp._fused_rms_norm(x, norm, w, eps)
    ty, trstd = torch._fused_rms_norm(tx, norm, tw, eps)
    assert _dtype_name(y) == dtype and tuple(y.shape) == tuple(ty.shape)
    assert _dtype_name(rstd) == str(trstd.dtype).split(".")[-1] and tuple(rstd.shape) == tuple(trstd.shape)
    _close(y, ty, dtype)
    _close(rstd, trstd, "float64" if dtype == "float64" else "float32")
    _close(tp.nn.functional.rms_norm(x, norm, w, eps), torch.nn.functional.rms_norm(tx, norm, tw, eps), dtype)


def test_rms_norm_default_eps_is_the_accumulation_dtypes():
    # eps None: finfo(float32).eps for half inputs too (PyTorch's opmath epsilon)
    for dtype in ["float16", "bfloat16", "float32", "float64"]:
        x, tx = _pair((3, 4), dtype, seed=3, scale=1e-3)
        _close(tp.nn.functional.rms_norm(x, [4]), torch.nn.functional.rms_norm(tx, [4]), dtype)


def test_rms_norm_empty_and_strided_inputs():
    y, rstd = tp._fused_rms_norm(tp.ones((3, 0)), [0], None, None)
    assert tuple(y.shape) == (3, 0) and tuple(rstd.shape) == (3, 1) and np.isnan(rstd.numpy()).all()
    y, rstd = tp._fused_rms_norm(tp.ones((0, 4)), [4], None, None)
    assert tuple(y.shape) == (0, 4) and tuple(rstd.shape) == (0, 1)
    x, tx = _pair((6, 5), "float32", seed=4)
    _close(tp.nn.functional.rms_norm(x.t(), [6]), torch.nn.functional.rms_norm(tx.t(), [6]), "float32")


@pytest.mark.parametrize("shape,norm", [((4, 8), [8]), ((2, 3, 4, 5), [4, 5]), ((6,), [6])])
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm_gradients_match_torch(shape, norm, dtype, with_weight):
    x, tx = _pair(shape, dtype, seed=5, requires_grad=True)
    w, tw = _pair(norm, dtype, seed=6, requires_grad=True) if with_weight else (None, None)
    g, tg = _pair(shape, dtype, seed=7)
    y = tp.nn.functional.rms_norm(x, norm, w)
    assert y.grad_fn.name() == "FusedRmsNormBackward0"
    (y * g).sum().backward()
    (torch.nn.functional.rms_norm(tx, norm, tw) * tg).sum().backward()
    _close(x.grad, tx.grad, dtype, scale=5)
    if with_weight:
        assert _dtype_name(w.grad) == dtype
        _close(w.grad, tw.grad, dtype, scale=5)


def test_rms_norm_weight_gradient_in_the_weights_dtype():
    x, tx = _pair((5, 8), "bfloat16", seed=8, requires_grad=True)
    w, tw = _pair((8,), "float32", seed=9, requires_grad=True)
    tp.nn.functional.rms_norm(x, [8], w).sum().backward()
    torch.nn.functional.rms_norm(tx, [8], tw).sum().backward()
    assert _dtype_name(x.grad) == "bfloat16" and _dtype_name(w.grad) == "float32"
    _close(x.grad, tx.grad, "bfloat16", scale=2)
    _close(w.grad, tw.grad, "bfloat16", scale=2)


@pytest.mark.parametrize("with_weight", [True, False])
def test_rms_norm_finite_differences(with_weight):
    x, _ = _pair((3, 2, 5), seed=10, requires_grad=True)
    w, _ = _pair((2, 5), seed=11, requires_grad=True)
    inputs = (x, w) if with_weight else (x,)
    f = (lambda a, b: tp.nn.functional.rms_norm(a, [2, 5], b, 1e-4)) if with_weight else (
        lambda a: tp.nn.functional.rms_norm(a, [2, 5]))
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_rms_norm_double_backward_matches_torch():
    x, tx = _pair((4, 6), seed=12, requires_grad=True)
    w, tw = _pair((6,), seed=13, requires_grad=True)
    g, tg = _pair((4, 6), seed=14)
    gx, gw = tp.autograd.grad((tp.nn.functional.rms_norm(x, [6], w) * g).sum(), [x, w], create_graph=True)
    tgx, tgw = torch.autograd.grad((torch.nn.functional.rms_norm(tx, [6], tw) * tg).sum(), [tx, tw],
                                   create_graph=True)
    _close(gx, tgx)
    _close(gw, tgw)
    ((gx * gx).sum() + (gw * gw).sum()).backward()
    ((tgx * tgx).sum() + (tgw * tgw).sum()).backward()
    _close(x.grad, tx.grad, scale=10)
    _close(w.grad, tw.grad, scale=10)


@pytest.mark.parametrize("use_output", [False, True])
def test_fused_rms_norm_rstd_gradient_matches_torch(use_output):
    """rstd is differentiable in x; with only rstd used the weight's gradient is None, with
    the output used too (times 0) it is zeros, as torch's."""
    x, tx = _pair((3, 8), seed=18, requires_grad=True)
    w, tw = _pair((8,), seed=19, requires_grad=True)
    for lib, a, b in ((tp, x, w), (torch, tx, tw)):
        y, rstd = lib._fused_rms_norm(a, [8], b, None)
        (rstd.sum() + (0 * y.sum() if use_output else 0)).backward()
    _close(x.grad, tx.grad)
    if use_output:
        _close(w.grad, tw.grad)
    else:
        assert w.grad is None and tw.grad is None


def test_fused_rms_norm_backward_op():
    x, tx = _pair((7, 33), "float32", seed=15, requires_grad=True)
    w, tw = _pair((33,), "float32", seed=16, requires_grad=True)
    g, tg = _pair((7, 33), "float32", seed=17)
    _, rstd = tp._fused_rms_norm(x.detach(), [33], w.detach(), None)
    gx, gw = tp._fused_rms_norm_backward(g, x.detach(), [33], rstd, w.detach(), True, True)
    tgx, tgw = torch.autograd.grad((torch.nn.functional.rms_norm(tx, [33], tw) * tg).sum(), [tx, tw])
    _close(gx, tgx, "float32", scale=5)
    _close(gw, tgw, "float32", scale=5)
    _, only_w = tp._fused_rms_norm_backward(g, x.detach(), [33], rstd, w.detach(), False, True)
    _close(only_w, tgw, "float32", scale=5)


def test_rms_norm_weight_gradient_is_reproducible():
    x, _ = _pair((3000, 64), "float32", seed=18)
    g, _ = _pair((3000, 64), "float32", seed=19)
    w, _ = _pair((64,), "float32", seed=20)
    _, rstd = tp._fused_rms_norm(x, [64], w, None)
    first = tp._fused_rms_norm_backward(g, x, [64], rstd, w, True, True)
    second = tp._fused_rms_norm_backward(g, x, [64], rstd, w, True, True)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3), [4]),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3), [3], lib.ones(4)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3), []),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3, dtype=lib.int64), [3]),
    lambda lib: lib._fused_rms_norm(lib.ones(2, 3, dtype=lib.int64), [3], None, None),
])
def test_rms_norm_errors_match_torch(make):
    with pytest.raises(Exception) as want:
        make(torch)
    with pytest.raises(type(want.value)) as got:
        make(tp)
    # ours name the op first; the message itself is PyTorch's
    assert "rms_norm" in str(got.value) and str(want.value)[:30] in str(got.value)
