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


@pytest.mark.parametrize("fn,xs,ws,kw", [
    ("conv_transpose1d", (1, 2, 5), (2, 2, 2), dict(stride=2, dilation=3, output_padding=2)),
    ("conv_transpose2d", (2, 4, 6, 7), (4, 3, 3, 3), dict(dilation=2, output_padding=1)),
    ("conv_transpose2d", (2, 4, 6, 5), (4, 2, 3, 2), dict(stride=(2, 1), padding=(2, 1), dilation=(3, 2),
                                                         output_padding=(2, 1), groups=2)),
    ("conv_transpose3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), dict(stride=(1, 2, 1), padding=(0, 1, 0),
                                                                dilation=(2, 3, 1), output_padding=(1, 2, 0))),
])
def test_conv_transpose_output_padding_past_stride_matches_torch(fn, xs, ws, kw):
    """output_padding may reach the stride when the dilation is larger: the gradients' plain
    convolutions over the output gradient then need its exact extent, not its padding."""
    (x, tx), (w, tw), (b, tb) = _pair(xs, 5), _pair(ws, 6), _pair((ws[1] * kw.get("groups", 1),), 7)
    ours, ref = [t.requires_grad_() for t in (x, w, b)], [t.requires_grad_() for t in (tx, tw, tb)]
    y, ty = getattr(tp.nn.functional, fn)(*ours, **kw), getattr(torch.nn.functional, fn)(*ref, **kw)
    _close(y, ty)
    cot, tcot = _pair(tuple(ty.shape), 8)
    for g, tg in zip(tp.autograd.grad([y], ours, [cot]), torch.autograd.grad([ty], ref, [tcot])):
        _close(g, tg)


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


# ---------------------------------------------------------------- channels-last layouts
# PyTorch's CPU kernels give channels-last results (and input gradients) for channels-last
# inputs; each case checks values and the exact strides of the output and of every
# gradient (torch.autograd.grad: the raw gradients, before a leaf's .grad is laid out).
def _cl(lib, t, fmt):
    if fmt == 'cl':
        return t.contiguous(memory_format=lib.channels_last if t.dim() == 4 else lib.channels_last_3d)
    if fmt == 'nhwc_view':  # a permuted view: strides read as channels last, never copied
        perm = (0, *range(2, t.dim()), 1)
        back = (0, t.dim() - 1, *range(1, t.dim() - 1))
        return t.permute(perm).contiguous().permute(back)
    if fmt == 'cl_slice':  # channels last but not dense: a slice of a wider one
        wide = lib.cat([t, t], dim=-1)
        wide = wide.contiguous(memory_format=lib.channels_last if t.dim() == 4 else lib.channels_last_3d)
        return wide[..., :t.shape[-1]]
    return t


LAYOUT_CASES = [
    ("conv3x3", lambda F, x, w, b: F.conv2d(x, w, b, padding=1), [(2, 8, 7, 7), (4, 8, 3, 3), (4,)], 'x'),
    ("conv3x3 weight cl", lambda F, x, w: F.conv2d(x, w, padding=1), [(2, 8, 7, 7), (4, 8, 3, 3)], 'w'),
    ("conv1x1", lambda F, x, w, b: F.conv2d(x, w, b), [(2, 8, 5, 6), (4, 8, 1, 1), (4,)], 'x'),
    ("conv1x1 groups", lambda F, x, w: F.conv2d(x, w, groups=2), [(2, 8, 5, 6), (6, 4, 1, 1)], 'x'),
    ("conv1x1 stride 2", lambda F, x, w: F.conv2d(x, w, stride=2), [(2, 8, 5, 6), (4, 8, 1, 1)], 'x'),
    ("depthwise", lambda F, x, w, b: F.conv2d(x, w, b, padding=1, groups=8), [(2, 8, 7, 7), (8, 1, 3, 3), (8,)], 'x'),
    ("depthwise stride 2", lambda F, x, w: F.conv2d(x, w, stride=2, groups=8), [(2, 8, 7, 7), (8, 1, 3, 3)], 'x'),
    ("grouped", lambda F, x, w: F.conv2d(x, w, stride=2, groups=2), [(2, 8, 7, 7), (4, 4, 3, 3)], 'x'),
    ("conv_transpose", lambda F, x, w: F.conv_transpose2d(x, w, stride=2), [(2, 8, 4, 4), (8, 3, 3, 3)], 'x'),
    ("conv_transpose1x1", lambda F, x, w: F.conv_transpose2d(x, w), [(2, 8, 4, 4), (8, 3, 1, 1)], 'x'),
    ("conv3d", lambda F, x, w: F.conv3d(x, w, padding=1), [(2, 4, 4, 5, 5), (3, 4, 3, 3, 3)], 'x'),
    ("max_pool2d", lambda F, x: F.max_pool2d(x, 3, 2, 1), [(2, 8, 9, 9)], 'x'),
    ("max_pool2d indices", lambda F, x: F.max_pool2d(x, 2, return_indices=True)[1].to(x.dtype) + x[:, :, ::2, ::2],
     [(2, 8, 8, 8)], 'x'),
    ("max_pool2d dilated ceil", lambda F, x: F.max_pool2d(x, 2, 2, 0, 2, True), [(2, 8, 9, 9)], 'x'),
    ("max_pool3d", lambda F, x: F.max_pool3d(x, 2), [(2, 4, 4, 4, 4)], 'x'),
    ("avg_pool2d", lambda F, x: F.avg_pool2d(x, 3, 2, 1), [(2, 8, 9, 9)], 'x'),
    ("avg_pool2d options", lambda F, x: F.avg_pool2d(x, 3, 2, 1, True, False, 4), [(2, 8, 9, 9)], 'x'),
    ("avg_pool3d", lambda F, x: F.avg_pool3d(x, 2), [(2, 4, 4, 4, 4)], 'x'),
    ("adaptive_avg_pool2d", lambda F, x: F.adaptive_avg_pool2d(x, (3, 2)), [(2, 8, 9, 7)], 'x'),
    ("adaptive_avg_pool2d 1", lambda F, x: F.adaptive_avg_pool2d(x, 1), [(2, 8, 9, 7)], 'x'),
    ("adaptive_avg_pool3d 1", lambda F, x: F.adaptive_avg_pool3d(x, 1), [(2, 4, 3, 4, 4)], 'x'),
    ("adaptive_max_pool2d", lambda F, x: F.adaptive_max_pool2d(x, 3), [(2, 8, 9, 7)], 'x'),
    ("adaptive_max_pool2d 1", lambda F, x: F.adaptive_max_pool2d(x, 1), [(2, 8, 9, 7)], 'x'),
    ("lp_pool2d", lambda F, x: F.lp_pool2d(x, 2, 2), [(2, 8, 8, 8)], 'x'),
    ("batch_norm", lambda F, x, w, b: F.batch_norm(x, None, None, w, b, True), [(3, 8, 5, 5), (8,), (8,)], 'x'),
    ("batch_norm 3d", lambda F, x: F.batch_norm(x, None, None, training=True), [(2, 4, 3, 4, 4)], 'x'),
    ("group_norm", lambda F, x, w, b: F.group_norm(x, 2, w, b), [(3, 8, 5, 5), (8,), (8,)], 'x'),
    ("group_norm 3d", lambda F, x: F.group_norm(x, 4), [(2, 4, 3, 4, 4)], 'x'),
]


def _layout_run(lib, case, arrays, fmt, cot_layout, dtype):
    _, fn, shapes, which = case
    F = lib.nn.functional
    ts = [lib.tensor(a.tolist(), dtype=getattr(lib, dtype)) for a in arrays]
    ts = [_cl(lib, t, fmt) if (i == 0) == (which == 'x') and t.dim() >= 4 else t for i, t in enumerate(ts)]
    ts = [t.requires_grad_() for t in ts]
    y = fn(F, *ts)
    if cot_layout == 'sum':  # an expanded gradient (zero strides)
        out = y.sum()
    else:
        cot = lib.tensor(np.random.default_rng(7).standard_normal(tuple(y.shape)).tolist(), dtype=y.dtype)
        if cot_layout == 'cl':
            cot = _cl(lib, cot, 'cl')
        out = (y * cot).sum()
    return y, lib.autograd.grad([out], ts)


@pytest.mark.parametrize('cot_layout', ['cl', 'contiguous', 'sum'])
@pytest.mark.parametrize('fmt', ['cl', 'nhwc_view', 'cl_slice'])
@pytest.mark.parametrize('case', LAYOUT_CASES, ids=[c[0] for c in LAYOUT_CASES])
def test_channels_last_layouts_match_torch(case, fmt, cot_layout):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in case[2]]
    y, grads = _layout_run(tp, case, arrays, fmt, cot_layout, 'float32')
    ty, tgrads = _layout_run(torch, case, arrays, fmt, cot_layout, 'float32')
    for ours, ref in [(y, ty), *zip(grads, tgrads)]:
        np.testing.assert_allclose(np.asarray(ours.tolist()), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
        assert tuple(ours.stride()) == tuple(ref.stride()), (tuple(ours.stride()), tuple(ref.stride()))


@pytest.mark.parametrize('dtype', ['float64', 'bfloat16'])
@pytest.mark.parametrize('case', LAYOUT_CASES, ids=[c[0] for c in LAYOUT_CASES])
def test_channels_last_layouts_other_dtypes(case, dtype):
    # values, and the layout up to the strides of size-1 dims (PyTorch's float64 kernels
    # place those differently from its float32 ones)
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in case[2]]
    try:
        ty, tgrads = _layout_run(torch, case, arrays, 'cl', 'cl', dtype)
    except NotImplementedError:  # avg_pool3d has no reduced-precision kernel
        with pytest.raises(NotImplementedError):
            _layout_run(tp, case, arrays, 'cl', 'cl', dtype)
        return
    y, grads = _layout_run(tp, case, arrays, 'cl', 'cl', dtype)
    tol = 1e-9 if dtype == 'float64' else 1e-1
    for ours, ref in [(y, ty), *zip(grads, tgrads)]:
        np.testing.assert_allclose(np.asarray(ours.float().tolist()), ref.detach().float().numpy(), rtol=tol, atol=tol)
        assert [st for sz, st in zip(ours.shape, ours.stride()) if sz != 1] == \
            [st for sz, st in zip(ref.shape, ref.stride()) if sz != 1]


def test_row_major_inputs_keep_row_major_results():
    # ambiguous strides read as row-major: (N, C, 1, 1) and (N, 1, 1, 1) inputs, an
    # unbatched slice of a channels-last tensor
    for shape, wshape in [((2, 8, 1, 1), (4, 8, 1, 1)), ((3, 1, 1, 1), (2, 1, 1, 1))]:
        x, tx = _pair(shape, 5)
        w, tw = _pair(wshape, 6)
        y, ty = tp.conv2d(x, w), torch.conv2d(tx, tw)
        _close(y, ty)
        assert y.stride() == ty.stride()
        for f in ['max_pool2d', 'avg_pool2d']:
            assert getattr(tp, f)(x, 1).stride() == getattr(torch, f)(tx, 1).stride()
    x, tx = _pair((1, 4, 6, 6), 7)
    x, tx = x.contiguous(memory_format=tp.channels_last)[0], tx.contiguous(memory_format=torch.channels_last)[0]
    y, ty = tp.conv2d(x, tp.ones(3, 4, 3, 3, dtype=tp.float64)), torch.conv2d(tx, torch.ones(3, 4, 3, 3, dtype=torch.float64))
    _close(y, ty)
    assert y.stride() == ty.stride() and y.is_contiguous()


@pytest.mark.parametrize('op', ['conv', 'batch_norm', 'group_norm'])
def test_channels_last_second_derivative_matches_torch(op):
    (x, tx), (w, tw) = _pair((2, 4, 5, 5), 8), _pair((3, 4, 3, 3) if op == 'conv' else (4,), 9)
    x, tx = x.contiguous(memory_format=tp.channels_last), tx.contiguous(memory_format=torch.channels_last)
    x.requires_grad_(), w.requires_grad_(), tx.requires_grad_(), tw.requires_grad_()

    def grad_norm(lib, a, b):
        F = lib.nn.functional
        y = {'conv': lambda: F.conv2d(a, b, None, padding=1),
             'batch_norm': lambda: F.batch_norm(a, None, None, b, None, True),
             'group_norm': lambda: F.group_norm(a, 2, b)}[op]()
        (gx,) = lib.autograd.grad([(y * y * y).sum()], [a], create_graph=True)
        assert gx.stride() == a.stride()
        return (gx * gx).sum()

    ours, ref = grad_norm(tp, x, w), grad_norm(torch, tx, tw)
    _close(ours, ref, 1e-8)
    for g, tg in zip(tp.autograd.grad([ours], [x, w]), torch.autograd.grad([ref], [tx, tw])):
        _close(g, tg, 1e-7)


def test_native_group_norm_matches_torch():
    x, tx = _pair((2, 6, 3, 3), 11)
    w, tw = _pair((6,), 12)
    for ours, ref in zip(tp.native_group_norm(x, w, None, 2, 6, 9, 3, 1e-5),
                         torch.native_group_norm(tx, tw, None, 2, 6, 9, 3, 1e-5)):
        _close(ours, ref)
        assert ours.shape == ref.shape
    with pytest.raises(RuntimeError, match="N \\* C \\* HxW"):
        tp.native_group_norm(x, None, None, 2, 6, 8, 3, 1e-5)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        tp.native_group_norm(x, None, None, 2, 6, 9, 4, 1e-5)
    with pytest.raises(RuntimeError, match="weight to be a vector of size equal to the number of channels"):
        tp.native_group_norm(x, tp.ones(5, dtype=tp.float64), None, 2, 6, 9, 3, 1e-5)


# ---- the convolution algorithms of issue 34 (Note [Convolution algorithms] in csrc/ops/nn_conv.cpp):
# Winograd F(4x4, 3x3), the batch-folded GEMM paths (planes under 256 pixels), per-sample GEMM

def _rel_err(ours, ref):
    a = np.asarray(ours.double().tolist(), dtype=np.float64)
    b = ref.detach().double().numpy()
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def _conv_fwd_bwd(lib, x, w, b, cot, kw, transposed, cl, dtype):
    def t(a):
        v = lib.from_numpy(a.copy()).to(getattr(lib, dtype))
        return v
    X, W, B, C = t(x), t(w), t(b), t(cot)
    if cl:
        X, C = X.contiguous(memory_format=lib.channels_last), C.contiguous(memory_format=lib.channels_last)
    X, W, B = X.requires_grad_(), W.requires_grad_(), B.requires_grad_()
    fn = lib.nn.functional.conv_transpose2d if transposed else lib.nn.functional.conv2d
    y = fn(X, W, B, **kw)
    y.backward(C)
    return y, X.grad, W.grad, B.grad


CONV_ALGO_CASES = [
    # (input shape, weight shape, kwargs, transposed): Winograd (16+ channels, 3x3, stride 1)
    ((2, 16, 9, 7), (16, 16, 3, 3), dict(padding=1), False),
    ((3, 17, 13, 11), (24, 17, 3, 3), dict(padding=0), False),
    ((1, 32, 5, 6), (16, 32, 3, 3), dict(padding=2), False),
    ((2, 16, 4, 4), (33, 16, 3, 3), dict(padding='same'), False),
    ((2, 16, 7, 9), (16, 18, 3, 3), dict(padding=1), True),
    ((1, 64, 23, 30), (64, 64, 3, 3), dict(padding=1), False),  # > 1 tile block, several rows
    ((1, 16, 70, 66), (16, 16, 3, 3), dict(padding=1), False),  # border tiles without a padded copy
    # batch-folded GEMM: stride 2, dilation, groups, 1x1, 5x5 on small planes
    ((4, 16, 7, 7), (32, 16, 3, 3), dict(stride=2, padding=1), False),
    ((3, 16, 9, 9), (16, 16, 3, 3), dict(padding=2, dilation=2), False),
    ((3, 16, 8, 8), (24, 4, 3, 3), dict(padding=1, groups=4), False),
    ((4, 32, 5, 5), (64, 32, 1, 1), dict(stride=2), False),
    ((2, 3, 11, 11), (8, 3, 5, 5), dict(padding=2), False),
    ((2, 16, 5, 5), (16, 8, 3, 3), dict(stride=2, padding=1, output_padding=1), True),
    # register-tiled direct convolution (planes of 256+ pixels, or one sample; row-major
    # results): odd planes, output channels that are no multiple of 8, every stride phase
    ((2, 8, 20, 20), (16, 8, 3, 3), dict(stride=1, padding=1, dilation=2), False),
    ((2, 16, 33, 17), (16, 16, 3, 3), dict(stride=2, padding=1), False),
    ((2, 24, 17, 19), (13, 24, 1, 1), dict(), False),  # reads the input itself; partial last block
    ((2, 12, 37, 29), (20, 12, 1, 1), dict(stride=2), False),  # one phase of four
    ((2, 5, 50, 41), (11, 5, 3, 3), dict(stride=3, padding=2), False),
    ((2, 6, 31, 33), (9, 6, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 3)), False),
    ((2, 16, 24, 23), (40, 4, 3, 3), dict(padding=1, groups=4), False),
    ((2, 12, 22, 22), (18, 2, 3, 3), dict(padding=2, dilation=2, groups=6), False),
    ((2, 3, 40, 37), (16, 3, 7, 7), dict(stride=2, padding=3), False),
    ((3, 3, 20, 18), (12, 3, 5, 5), dict(padding='same'), False),
    ((1, 4, 9, 10), (6, 4, 3, 3), dict(padding=1), False),  # one sample, a small plane
    ((2, 1, 28, 20), (32, 1, 3, 3), dict(padding=1), False),
    ((2, 10, 18, 17), (10, 7, 3, 3), dict(padding=1), True),  # the transposed (input gradient) form
    ((2, 10, 18, 17), (10, 14, 3, 3), dict(padding=2, dilation=2, groups=2), True),
]


@pytest.mark.parametrize('cl', [False, True], ids=['nchw', 'channels_last'])
@pytest.mark.parametrize('case', CONV_ALGO_CASES, ids=lambda c: f'{c[0]}-{c[1]}-{c[2]}-{"t" if c[3] else "p"}')
def test_conv_algorithms_match_torch(case, cl):
    xs, ws, kw, transposed = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.2).astype(np.float32)
    bias = rng.standard_normal(ws[1] * kw.get('groups', 1) if transposed else ws[0]).astype(np.float32)
    fn = torch.nn.functional.conv_transpose2d if transposed else torch.nn.functional.conv2d
    out_shape = tuple(fn(torch.from_numpy(x), torch.from_numpy(w), None, **kw).shape)
    cot = rng.standard_normal(out_shape).astype(np.float32)
    for dtype, tol in (('float32', 2e-5), ('float64', 1e-12), ('bfloat16', 3e-2)):
        ours = _conv_fwd_bwd(tp, x, w, bias, cot, kw, transposed, cl, dtype)
        ref = _conv_fwd_bwd(torch, x, w, bias, cot, kw, transposed, cl, dtype)
        for name, a, b in zip(('out', 'gx', 'gw', 'gb'), ours, ref):
            assert tuple(a.shape) == tuple(b.shape)
            assert str(a.dtype).split('.')[-1] == str(b.dtype).split('.')[-1]
            if name in ('out', 'gx') and dtype == 'float32':  # (a size-1 dim's stride says nothing)
                sa = [st for st, n in zip(a.stride(), a.shape) if n > 1]
                sb = [st for st, n in zip(b.stride(), b.shape) if n > 1]
                assert sa == sb, (name, a.stride(), b.stride())
            assert _rel_err(a, b) < tol, (dtype, name, _rel_err(a, b))


@pytest.mark.parametrize('transposed', [False, True])
def test_conv1d_register_tiled_matches_torch(transposed):
    # 1-D convolutions of 256+ outputs take the register-tiled kernel as planes of one row
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 6, 300)).astype(np.float32)
    w = rng.standard_normal((6, 4, 5) if transposed else (8, 3, 5)).astype(np.float32)
    kw = dict(padding=2, dilation=1) if transposed else dict(stride=2, padding=3, groups=2)
    outs = []
    for lib in (tp, torch):
        X, W = lib.from_numpy(x.copy()).requires_grad_(), lib.from_numpy(w.copy()).requires_grad_()
        fn = lib.nn.functional.conv_transpose1d if transposed else lib.nn.functional.conv1d
        y = fn(X, W, **kw)
        y.backward(lib.ones_like(y))
        outs.append((y, X.grad, W.grad))
    for a, b in zip(*outs):
        assert tuple(a.shape) == tuple(b.shape)
        assert _rel_err(a, b) < 2e-5


# channels-last 3x3 depthwise convolutions: inner pixels with the weights (forward, stride-1
# input gradient) or the sums (weight gradient) in registers, the border through tap lists
@pytest.mark.parametrize('case', [
    (2, 32, 9, 11, 1, 1, 1), (2, 64, 10, 7, 2, 1, 1), (1, 32, 12, 12, 1, 2, 2), (2, 48, 8, 9, 1, 1, 1),
    (3, 32, 5, 4, 1, 0, 1), (2, 64, 7, 7, 3, 2, 1), (1, 32, 3, 3, 1, 1, 1), (2, 16, 6, 6, 1, 1, 1),
    (2, 32, 6, 20, 2, 0, 2)], ids=str)
def test_depthwise_channels_last_matches_torch(case):
    N, C, H, W, s, p, d = case
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((C, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(C).astype(np.float32)
    res = []
    for lib in (tp, torch):
        X = lib.from_numpy(x.copy()).contiguous(memory_format=lib.channels_last).requires_grad_()
        Wt, B = lib.from_numpy(w.copy()).requires_grad_(), lib.from_numpy(b.copy()).requires_grad_()
        y = lib.nn.functional.conv2d(X, Wt, B, stride=s, padding=p, dilation=d, groups=C)
        gy = lib.from_numpy(np.cos(np.arange(int(np.prod(tuple(y.shape))), dtype=np.float32)).reshape(tuple(y.shape)))
        gx, gw, gb = lib.autograd.grad(y, [X, Wt, B], gy.contiguous(memory_format=lib.channels_last))
        res.append((y, gx, gw, gb))
    for name, a, ref in zip(('out', 'gx', 'gw', 'gb'), *res):
        assert tuple(a.shape) == tuple(ref.shape)
        if name in ('out', 'gx'):
            assert tuple(a.stride()) == tuple(ref.stride()), name
        assert _rel_err(a, ref) < 1e-5, (name, _rel_err(a, ref))


# max pooling's interior columns in vector blocks (Note [Max pooling by columns]): values and
# indices must equal PyTorch's for any window geometry, with ties (small integers), NaN and -inf
@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_max_pool2d_values_and_indices_random_geometry(dtype):
    rng = np.random.default_rng(11)
    cases = 0
    while cases < 150:
        H, W = (int(v) for v in rng.integers(1, 40, 2))
        k = tuple(int(v) for v in rng.integers(1, 5, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        d = tuple(int(v) for v in rng.integers(1, 3, 2))
        p = (int(rng.integers(0, k[0] // 2 + 1)), int(rng.integers(0, k[1] // 2 + 1)))
        ceil = bool(rng.integers(0, 2))
        if H + 2 * p[0] < d[0] * (k[0] - 1) + 1 or W + 2 * p[1] < d[1] * (k[1] - 1) + 1:
            continue
        x = rng.integers(-3, 3, (2, 3, H, W)).astype(dtype)
        m = rng.random(x.shape)
        x[m < 0.03] = np.nan
        x[(m >= 0.03) & (m < 0.06)] = -np.inf
        ref, ref_i = torch.nn.functional.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil, return_indices=True)
        out, out_i = tp.nn.functional.max_pool2d(tp.from_numpy(x), k, s, p, d, ceil, return_indices=True)
        np.testing.assert_array_equal(out.numpy(), ref.numpy(), err_msg=str((x.shape, k, s, p, d, ceil)))
        np.testing.assert_array_equal(out_i.numpy(), ref_i.numpy(), err_msg=str((x.shape, k, s, p, d, ceil)))
        cases += 1
