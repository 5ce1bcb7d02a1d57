"""The nn kernels beyond what the op database checks: batch_norm's in-place running
statistics, a small conv/pool/norm/softmax network's outputs and gradients end to end,
and second derivatives through a convolution, all against PyTorch."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _pair(shape, seed, scale=1.0):
    a = np.random.default_rng(seed).standard_normal(shape) * scale
    return tp.tensor(a.tolist(), dtype=tp.float64), torch.tensor(a, dtype=torch.float64)


def _close(ours, ref, tol=1e-10):
    np.testing.assert_allclose(np.asarray(ours.tolist()), ref.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize('momentum', [0.1, 0.5])
def test_batch_norm_updates_running_stats_in_place(momentum):
    x, tx = _pair((4, 3, 5), 0, 2.0)
    rm, trm = _pair((3,), 1)
    rv, trv = _pair((3,), 2)
    rv, trv = rv.abs() + 0.5, trv.abs() + 0.5
    mean_before = rm
    y = tp.batch_norm(x, None, None, rm, rv, True, momentum, 1e-5)
    ty = torch.batch_norm(tx, None, None, trm, trv, True, momentum, 1e-5, False)
    _close(y, ty)
    _close(rm, trm)  # same tensor object, updated in place
    _close(rv, trv)  # unbiased variance, as PyTorch keeps it
    assert rm is mean_before
    # evaluation mode normalises with the running statistics and leaves them alone
    before = np.asarray(rm.tolist())
    _close(tp.batch_norm(x, None, None, rm, rv, False, momentum, 1e-5),
           torch.batch_norm(tx, None, None, trm, trv, False, momentum, 1e-5, False))
    np.testing.assert_array_equal(np.asarray(rm.tolist()), before)


def _net(lib, x, w1, b1, w2, gamma, beta, w3):
    h = lib.conv2d(x, w1, b1, padding=1)
    h = lib.relu(h)
    h = lib.max_pool2d(h, 2)
    h = lib.batch_norm(h, gamma, beta, None, None, True, 0.1, 1e-5, False)
    h = lib.conv2d(h, w2, None, stride=1, padding='same', groups=2)
    h = lib.avg_pool2d(h, 2, ceil_mode=True)
    h = lib.layer_norm(h, [h.shape[-1]])
    h = lib.conv_transpose2d(h, w3, None, stride=2)
    h = lib.adaptive_avg_pool2d(h, 3)
    return lib.log_softmax(h.reshape(h.shape[0], -1), 1)


def test_small_network_matches_torch():
    shapes = [(2, 3, 8, 8), (4, 3, 3, 3), (4,), (4, 2, 3, 3), (4,), (4,), (4, 2, 2, 2)]
    pairs = [_pair(s, 10 + i) for i, s in enumerate(shapes)]
    ours = [p[0].requires_grad_() for p in pairs]
    ref = [p[1].requires_grad_() for p in pairs]
    out, tout = _net(tp, *ours), _net(torch, *ref)
    _close(out, tout, 1e-9)
    cot, tcot = _pair(tuple(tout.shape), 99)
    grads = tp.autograd.grad([out], ours, [cot])
    tgrads = torch.autograd.grad([tout], ref, [tcot])
    for g, tg in zip(grads, tgrads):
        _close(g, tg, 1e-8)


def test_conv_second_derivative_matches_torch():
    (x, tx), (w, tw) = _pair((2, 2, 5, 5), 3), _pair((3, 2, 3, 3), 4)
    x.requires_grad_(), w.requires_grad_(), tx.requires_grad_(), tw.requires_grad_()

    def grad_norm(lib, a, b):
        y = lib.conv2d(a, b, None, stride=2, padding=1)
        (gx,) = lib.autograd.grad([(y * y).sum()], [a], create_graph=True)
        return (gx * gx).sum()

    ours, ref = grad_norm(tp, x, w), grad_norm(torch, tx, tw)
    _close(ours, ref, 1e-9)
    for g, tg in zip(tp.autograd.grad([ours], [x, w]), torch.autograd.grad([ref], [tx, tw])):
        _close(g, tg, 1e-8)


# ---------------------------------------------------------------- fused activations
ACTIVATIONS = [("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
               ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}), ("elu", {}),
               ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 2.0}), ("leaky_relu", {}),
               ("leaky_relu", {"negative_slope": 0.2}), ("hardswish", {}), ("hardsigmoid", {})]


def _activation_input(lib, dtype, n=1037):
    # a spread of values (odd length: vector bodies and scalar tails) plus the edges the
    # kernels branch on (0, +-3, softplus's threshold, infinities, NaN)
    base = np.linspace(-12, 12, n).astype(np.float64)
    base[:12] = [0.0, -0.0, 3.0, -3.0, 2.9999, -2.9999, 10.0, 20.0, 1.5, np.inf, -np.inf, np.nan]
    return lib.tensor(base.tolist(), dtype=getattr(lib, dtype))


@pytest.mark.parametrize("name,kw", ACTIVATIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_fused_activations_match_torch(name, kw, dtype):
    out = []
    for lib in (torch, tp):
        x = _activation_input(lib, dtype).requires_grad_()
        y = getattr(lib.nn.functional, name)(x, **kw)
        g = lib.tensor(np.linspace(-2, 2, x.numel()).tolist(), dtype=getattr(lib, dtype))
        y.backward(g)
        out.append((y.detach().float().numpy(), x.grad.float().numpy(), str(y.dtype)))
    (ty, tg, tdt), (py, pg, pdt) = out
    assert tdt.split(".")[-1] == pdt.split(".")[-1]
    tol = {"float32": 2e-6, "float64": 1e-13, "bfloat16": 1e-2, "float16": 2e-3}[dtype]
    np.testing.assert_allclose(py, ty, rtol=tol, atol=tol)
    np.testing.assert_allclose(pg, tg, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kw", ACTIVATIONS)
def test_fused_activations_second_order_and_forward_ad(name, kw):
    f = lambda x: getattr(tp.nn.functional, name)(x, **kw)  # noqa: E731
    x = tp.tensor([-4.0, -2.5, -0.7, 0.3, 1.2, 2.6, 4.5, 25.0], dtype=tp.float64,
                  requires_grad=True)
    assert tp.autograd.gradcheck(f, (x,))
    assert tp.autograd.gradgradcheck(f, (x,))
    # create_graph against torch's second derivative
    seen = []
    for lib in (torch, tp):
        xx = lib.tensor(x.detach().tolist(), dtype=lib.float64, requires_grad=True)
        y = getattr(lib.nn.functional, name)(xx, **kw)
        (g,) = lib.autograd.grad(y.sum(), xx, create_graph=True)
        if name == "hardsigmoid" and lib is torch:  # torch has no double backward here
            gg = tp.zeros(xx.shape, dtype=tp.float64)
        else:
            (gg,) = lib.autograd.grad((g * g).sum(), xx)
        with lib.autograd.forward_ad.dual_level():
            dual = lib.autograd.forward_ad.make_dual(xx.detach(), lib.ones_like(xx.detach()))
            tangent = lib.autograd.forward_ad.unpack_dual(
                getattr(lib.nn.functional, name)(dual, **kw)).tangent
        seen.append((g.detach().numpy(), gg.numpy(), tangent.numpy()))
    for a, b in zip(*seen):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["gelu", "silu", "mish", "softplus", "elu", "leaky_relu",
                                  "hardswish", "hardsigmoid"])
def test_fused_activations_refuse_integer_input(name):
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        getattr(tp.nn.functional, name)(tp.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        tp.nn.functional.gelu(tp.ones(2), approximate="erf")
