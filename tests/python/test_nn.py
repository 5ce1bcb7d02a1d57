"""tp.nn against torch.nn: seeded initialisation bit for bit, then outputs and gradients
with identical weights; the Module system's behaviour; losses; dropout masks; init."""
import copy

import numpy as np
import pytest
import torch

import tensorplay as tp

tnn, pnn = torch.nn, tp.nn
tF, pF = torch.nn.functional, tp.nn.functional


def np_of(t):
    t = t.detach()
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return (t.to(tp.float32) if t.dtype == tp.bfloat16 else t).numpy()


def to_tp(t):
    return tp.from_numpy(t.detach().numpy().copy())


def copy_weights(tm, pm):
    """Loads torch module tm's state into tp module pm (through NumPy)."""
    pm.load_state_dict({k: to_tp(v) for k, v in tm.state_dict().items()})


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np_of(a), np_of(b), rtol=rtol, atol=atol)


def assert_bits(a, b):
    x, y = np_of(a), np_of(b)
    assert x.shape == y.shape and x.dtype == y.dtype
    assert np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8))


def build_both(name, args, kwargs, seed=0):
    torch.manual_seed(seed)
    tm = getattr(tnn, name)(*args, **kwargs)
    tp.manual_seed(seed)
    pm = getattr(pnn, name)(*args, **kwargs)
    return tm, pm


# ---------------------------------------------------------------- layers with parameters
LAYERS = [
    ("Linear", (5, 3), {}, [(4, 5)]),
    ("Linear", (5, 3), {"bias": False}, [(2, 7, 5)]),
    ("Bilinear", (4, 3, 2), {}, [(6, 4), (6, 3)]),
    ("Embedding", (10, 4), {}, "idx"),
    ("Embedding", (10, 4), {"padding_idx": 2}, "idx"),
    ("PReLU", (), {}, [(3, 4)]),
    ("PReLU", (4,), {"init": 0.1}, [(2, 4, 3)]),
    ("LayerNorm", (6,), {}, [(3, 6)]),
    ("LayerNorm", ((2, 3),), {"elementwise_affine": False}, [(4, 2, 3)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("BatchNorm1d", (4,), {}, [(8, 4)]),
    ("BatchNorm1d", (4,), {"momentum": None}, [(8, 4, 3)]),
    ("BatchNorm2d", (3,), {}, [(4, 3, 5, 5)]),
    ("BatchNorm2d", (3,), {"affine": False, "track_running_stats": False}, [(4, 3, 2, 2)]),
    ("BatchNorm2d", (3,), {"bias": False}, [(4, 3, 2, 2)]),
    ("GroupNorm", (2, 4), {"bias": False}, [(3, 4, 5)]),
    ("InstanceNorm1d", (3,), {}, [(2, 3, 7)]),
    ("InstanceNorm2d", (3,), {"affine": True}, [(2, 3, 4, 4)]),
    ("RMSNorm", (6,), {}, [(3, 6)]),
    ("RMSNorm", (6,), {"eps": 1e-3}, [(3, 6)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 4, 4)]),
    ("MultiheadAttention", (8, 2), {}, [(5, 3, 8), (6, 3, 8), (6, 3, 8)]),
    ("Conv1d", (4, 6, 3), {}, [(2, 4, 9)]),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, [(2, 4, 11)]),
    ("Conv1d", (4, 6, 4), {"padding": "same", "padding_mode": "reflect"}, [(2, 4, 9)]),
    ("Conv2d", (3, 4, 3), {}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "bias": False}, [(2, 3, 8, 7)]),
    ("Conv2d", (4, 4, 3), {"groups": 4, "padding": 1}, [(2, 4, 6, 6)]),
    ("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2}, [(1, 3, 7, 7)]),
    ("Conv2d", (3, 4, 3), {"padding": "valid"}, [(1, 3, 7, 7)]),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "circular"}, [(1, 3, 6, 5)]),
    ("Conv2d", (3, 4, 3), {"padding": 2, "padding_mode": "replicate"}, [(1, 3, 6, 5)]),
    ("Conv2d", (3, 4, 1), {}, [(2, 3, 5, 5)]),
    ("Conv3d", (2, 3, 2), {"padding": 1}, [(1, 2, 4, 5, 4)]),
    ("ConvTranspose1d", (4, 3, 3), {"stride": 2}, [(2, 4, 5)]),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1}, [(1, 4, 4, 5)]),
    ("ConvTranspose2d", (4, 4, 3), {"groups": 2, "dilation": 2}, [(1, 4, 4, 4)]),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2}, [(1, 2, 3, 3, 3)]),
    ("MultiheadAttention", (8, 2), {"batch_first": True, "bias": False}, [(3, 5, 8), (3, 6, 8), (3, 6, 8)]),
]


@pytest.mark.parametrize("name, args, kwargs, inputs", LAYERS)
def test_layer_matches_torch(name, args, kwargs, inputs):
    tm, pm = build_both(name, args, kwargs)
    assert repr(tm) == repr(pm)
    # seeded initialisation is PyTorch's, bit for bit
    tsd, psd = tm.state_dict(), pm.state_dict()
    assert list(tsd) == list(psd)
    for k in tsd:
        assert_bits(tsd[k], psd[k])
    rng = np.random.default_rng(1)
    if inputs == "idx":
        idx = rng.integers(0, 10, (3, 5))
        tx, px = [torch.from_numpy(idx)], [tp.from_numpy(idx)]
    else:
        arrs = [rng.standard_normal(s).astype(np.float32) for s in inputs]
        tx = [torch.from_numpy(a).requires_grad_() for a in arrs]
        px = [tp.from_numpy(a.copy()).requires_grad_() for a in arrs]
    tout, pout = tm(*tx), pm(*px)
    if isinstance(tout, tuple):
        tout, pout = tout[0], pout[0]
    assert_close(tout, pout, rtol=1e-4, atol=1e-5)
    g = rng.standard_normal(tuple(tout.shape)).astype(np.float32)
    tout.backward(torch.from_numpy(g))
    pout.backward(tp.from_numpy(g))
    for (n, tparam), (_, pparam) in zip(tm.named_parameters(), pm.named_parameters()):
        assert_close(tparam.grad, pparam.grad, rtol=1e-4, atol=1e-5)
    for a, b in zip(tx, px):
        if a.requires_grad:
            assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    # running statistics move the same way
    for (n, tb), (_, pb) in zip(tm.named_buffers(), pm.named_buffers()):
        assert_close(tb, pb, rtol=1e-5, atol=1e-6)


ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("SELU", ()),
    ("CELU", (1.3,)), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()),
    ("Softplus", (2.0, 3.0)), ("Softsign", ()), ("Tanh", ()), ("Tanhshrink", ()), ("Sigmoid", ()),
    ("LogSigmoid", ()), ("Hardsigmoid", ()), ("Hardtanh", (-0.5, 0.8)), ("Hardswish", ()),
    ("Hardshrink", (0.4,)), ("Softshrink", (0.3,)), ("Threshold", (0.1, -2.0)), ("GLU", ()),
    ("Softmax", (1,)), ("LogSoftmax", (1,)), ("Softmin", (0,)), ("Softmax2d", ()),
    ("MaxPool1d", (3,)), ("MaxPool1d", (3, 2, 1, 1, False, True)),
    ("MaxPool2d", (2,)), ("MaxPool2d", (3, 2, 1)), ("MaxPool2d", ((2, 3), 1, 0, 2, False, True)),
    ("MaxPool3d", (2,)), ("AvgPool1d", (3, 2, 1)), ("AvgPool2d", (3, 2, 1, True, False)),
    ("AvgPool2d", (2, 1, 0, False, True, 3)), ("AvgPool3d", (2,)),
    ("AdaptiveAvgPool1d", (4,)), ("AdaptiveAvgPool2d", ((3, 2),)), ("AdaptiveAvgPool3d", (2,)),
    ("AdaptiveMaxPool1d", (3,)), ("AdaptiveMaxPool2d", ((2, 3),)), ("LPPool2d", (2, 2)),
    ("Upsample", (None, 2, "bilinear")),
    ("Identity", ()), ("Flatten", ()), ("Unflatten", (1, (2, 3))), ("PixelShuffle", (2,)),
    ("PixelUnshuffle", (2,)), ("ChannelShuffle", (2,)),
]


@pytest.mark.parametrize("name, args", ACTIVATIONS)
def test_parameterless_layer_matches_torch(name, args):
    shape = {"PixelShuffle": (2, 8, 3, 3), "PixelUnshuffle": (2, 2, 4, 6), "Unflatten": (3, 6),
             "ChannelShuffle": (2, 4, 3, 3), "Softmax2d": (2, 3, 4, 4)}.get(name, (4, 6))
    if "Pool1d" in name:
        shape = (2, 3, 11)
    elif "Pool2d" in name or name == "Upsample":
        shape = (2, 3, 9, 8)
    elif "Pool3d" in name:
        shape = (1, 2, 6, 5, 4)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32) * 3
    tm, pm = build_both(name, args, {})
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    tout, pout = tm(tx), pm(px)
    assert_close(tout, pout, rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(3).standard_normal(tuple(tout.shape)).astype(np.float32)
    tout.backward(torch.from_numpy(g))
    pout.backward(tp.from_numpy(g))
    assert_close(tx.grad, px.grad, rtol=1e-5, atol=1e-6)
    assert repr(pm) == repr(tm)


# ---------------------------------------------------------------- losses
def _loss_inputs(kind, rng):
    x = rng.standard_normal((6, 5)).astype(np.float32)
    if kind == "class":
        t = rng.integers(0, 5, (6,))
        t[2] = -100
        return x, t
    if kind == "prob":
        return x, rng.random((6, 5)).astype(np.float32)
    if kind == "binary":
        return 1 / (1 + np.exp(-x)), (rng.random((6, 5)) > 0.5).astype(np.float32)
    if kind == "sign":
        return x, np.sign(rng.standard_normal((6, 5))).astype(np.float32)
    return x, rng.standard_normal((6, 5)).astype(np.float32)


LOSSES = [
    ("L1Loss", {}, "real"), ("MSELoss", {}, "real"), ("SmoothL1Loss", {"beta": 0.5}, "real"),
    ("HuberLoss", {"delta": 0.7}, "real"), ("SoftMarginLoss", {}, "sign"),
    ("NLLLoss", {}, "class"), ("NLLLoss", {"weight": "w"}, "class"),
    ("CrossEntropyLoss", {}, "class"), ("CrossEntropyLoss", {"weight": "w"}, "class"),
    ("CrossEntropyLoss", {"label_smoothing": 0.1}, "class"),
    ("CrossEntropyLoss", {"weight": "w", "label_smoothing": 0.2}, "class"),
    ("CrossEntropyLoss", {}, "prob"), ("CrossEntropyLoss", {"label_smoothing": 0.3}, "prob"),
    ("BCELoss", {}, "binary"), ("BCELoss", {"weight": "w5"}, "binary"),
    ("BCEWithLogitsLoss", {}, "prob"), ("BCEWithLogitsLoss", {"pos_weight": "w5"}, "prob"),
    ("KLDivLoss", {}, "prob"), ("KLDivLoss", {"log_target": True}, "real"),
    ("MultiLabelSoftMarginLoss", {}, "prob"), ("HingeEmbeddingLoss", {"margin": 0.5}, "sign"),
    ("PoissonNLLLoss", {}, "prob"), ("PoissonNLLLoss", {"log_input": False, "full": True}, "prob"),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name, kwargs, kind", LOSSES)
def test_loss_matches_torch(name, kwargs, kind, reduction):
    rng = np.random.default_rng(4)
    x, t = _loss_inputs(kind, rng)
    if name == "PoissonNLLLoss" and not kwargs.get("log_input", True):
        x = np.abs(x) + 0.1
    if name == "KLDivLoss" and kind == "prob":
        x = np.log(np.abs(x) + 0.1).astype(np.float32)
    w = rng.random(5).astype(np.float32) + 0.5
    tk, pk = dict(kwargs), dict(kwargs)
    for k, v in kwargs.items():
        if v in ("w", "w5"):
            tk[k], pk[k] = torch.from_numpy(w), tp.from_numpy(w.copy())
    tl = getattr(tnn, name)(reduction=reduction, **tk)
    pl = getattr(pnn, name)(reduction=reduction, **pk)
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    tout, pout = tl(tx, torch.from_numpy(t)), pl(px, tp.from_numpy(t.copy()))
    assert_close(tout, pout, rtol=1e-5, atol=1e-6)
    tout.sum().backward()
    pout.sum().backward()
    assert_close(tx.grad, px.grad, rtol=1e-4, atol=1e-6)


def test_pairwise_losses_match_torch():
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal((4, 6)).astype(np.float32) for _ in range(3))
    y = np.array([1, -1, 1, -1], dtype=np.float32)
    cases = [("CosineEmbeddingLoss", {"margin": 0.2}, (a, b, y)),
             ("MarginRankingLoss", {"margin": 0.1}, (a[:, 0], b[:, 0], y)),
             ("TripletMarginLoss", {"margin": 0.5, "swap": True}, (a, b, c)),
             ("TripletMarginWithDistanceLoss", {}, (a, b, c))]
    for name, kw, arrs in cases:
        grads = [v is not y for v in arrs]  # labels take no gradient
        tx = [torch.from_numpy(v).requires_grad_(g) for v, g in zip(arrs, grads)]
        px = [tp.from_numpy(v.copy()).requires_grad_(g) for v, g in zip(arrs, grads)]
        tout, pout = getattr(tnn, name)(**kw)(*tx), getattr(pnn, name)(**kw)(*px)
        assert_close(tout, pout)
        tout.backward()
        pout.backward()
        for u, v in zip(tx, px):
            if u.requires_grad:
                assert_close(u.grad, v.grad, rtol=1e-4, atol=1e-6)


def test_margin_losses_match_torch():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    tgt = np.array([1, 0, 4, 2])
    ml = np.array([[3, 0, -1, 1, 2], [1, -1, 0, 0, 0], [0, 1, 2, 3, 4], [4, 2, -1, 0, 0]])
    for tl, pl, t in [(tnn.MultiMarginLoss(), pnn.MultiMarginLoss(), tgt),
                      (tnn.MultiMarginLoss(p=2, margin=0.5), pnn.MultiMarginLoss(p=2, margin=0.5), tgt),
                      (tnn.MultiLabelMarginLoss(), pnn.MultiLabelMarginLoss(), ml)]:
        tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
        tout, pout = tl(tx, torch.from_numpy(t)), pl(px, tp.from_numpy(t.copy()))
        assert_close(tout, pout)
        tout.backward()
        pout.backward()
        assert_close(tx.grad, px.grad, rtol=1e-4, atol=1e-6)


def test_gaussian_nll_matches_torch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    t = rng.standard_normal((4, 3)).astype(np.float32)
    v = (rng.random((4, 3)) + 0.1).astype(np.float32)
    for full in (False, True):
        tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
        tv, pv = torch.from_numpy(v).requires_grad_(), tp.from_numpy(v.copy()).requires_grad_()
        tout = tnn.GaussianNLLLoss(full=full)(tx, torch.from_numpy(t), tv)
        pout = pnn.GaussianNLLLoss(full=full)(px, tp.from_numpy(t.copy()), pv)
        assert_close(tout, pout)
        tout.backward()
        pout.backward()
        assert_close(tx.grad, px.grad)
        assert_close(tv.grad, pv.grad)


def test_loss_errors():
    x = tp.randn(3, 5)
    with pytest.raises(ValueError, match="Expected input batch_size"):
        pF.cross_entropy(x, tp.tensor([1, 2]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        pF.nll_loss(x, tp.tensor([1, 7, 2]))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        pF.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="must be the same as input size"):
        pF.binary_cross_entropy_with_logits(x, tp.zeros(3))


# ---------------------------------------------------------------- dropout and init draws
@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_dropout_masks_are_pytorchs(p):
    x = np.random.default_rng(8).standard_normal((7, 9)).astype(np.float32)
    for tf, pf in [(tF.dropout, pF.dropout), (tF.alpha_dropout, pF.alpha_dropout)]:
        torch.manual_seed(3)
        tp.manual_seed(3)
        a = tf(torch.from_numpy(x), p, True)
        b = pf(tp.from_numpy(x.copy()), p, True)
        assert_close(a, b, rtol=1e-6, atol=1e-7)
    x4 = np.random.default_rng(9).standard_normal((2, 3, 4, 5)).astype(np.float32)
    for tf, pf in [(tF.dropout2d, pF.dropout2d), (tF.feature_alpha_dropout, pF.feature_alpha_dropout)]:
        torch.manual_seed(4)
        tp.manual_seed(4)
        assert_close(tf(torch.from_numpy(x4), p, True), pf(tp.from_numpy(x4.copy()), p, True),
                     rtol=1e-6, atol=1e-7)
    # a channels-last input draws its mask in memory order, as PyTorch does
    tx = torch.from_numpy(x4).to(memory_format=torch.channels_last)
    px = tp.from_numpy(np.ascontiguousarray(x4.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    torch.manual_seed(5)
    tp.manual_seed(5)
    assert_close(tF.dropout(tx, p), pF.dropout(px, p), rtol=1e-6, atol=1e-7)
    torch.manual_seed(5)
    tp.manual_seed(5)
    m_t, m_p = tnn.Dropout(p), pnn.Dropout(p)
    assert_close(m_t(torch.from_numpy(x)), m_p(tp.from_numpy(x.copy())))
    m_t.eval(), m_p.eval()
    assert_close(m_t(torch.from_numpy(x)), m_p(tp.from_numpy(x.copy())))


INITS = [
    ("uniform_", (-0.3, 0.7)), ("normal_", (0.1, 2.0)), ("trunc_normal_", (0.0, 1.0, -1.5, 1.0)),
    ("trunc_normal_", (0.5, 1.0, 0.0, 0.3)),
    ("constant_", (0.25,)), ("ones_", ()), ("zeros_", ()), ("eye_", ()),
    ("xavier_uniform_", (1.5,)), ("xavier_normal_", ()), ("kaiming_uniform_", ()),
    ("kaiming_normal_", (0.1, "fan_out", "leaky_relu")), ("orthogonal_", (2.0,)),
    ("sparse_", (0.3,)),
]


@pytest.mark.parametrize("name, args", INITS)
def test_init_draws_are_pytorchs(name, args):
    for shape in [(6, 4), (3, 8)]:
        torch.manual_seed(11)
        tp.manual_seed(11)
        a = getattr(torch.nn.init, name)(torch.empty(shape), *args)
        b = getattr(tp.nn.init, name)(tp.empty(shape), *args)
        if name == "orthogonal_":  # QR: each library's LAPACK rounds its own way
            assert_close(a, b, rtol=1e-5, atol=1e-6)
        else:
            assert_bits(a, b)
        assert np.array_equal(torch.get_rng_state().numpy(), tp.get_rng_state().numpy())
    torch.manual_seed(1)
    tp.manual_seed(1)
    assert_bits(torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), 2),
                tp.nn.init.dirac_(tp.empty(4, 2, 3, 3), 2))


def test_calculate_gain():
    for nl, param in [("linear", None), ("tanh", None), ("relu", None), ("leaky_relu", 0.2),
                      ("leaky_relu", None), ("selu", None), ("conv2d", None)]:
        assert tp.nn.init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        tp.nn.init.calculate_gain("foo")


# ---------------------------------------------------------------- the Module system
class Net(pnn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = pnn.Linear(4, 3)
        self.act = pnn.ReLU()
        self.block = pnn.Sequential(pnn.Linear(3, 3), pnn.Tanh())
        self.register_buffer("step", tp.zeros(()))
        self.register_buffer("scratch", tp.ones(2), persistent=False)
        self.scale = pnn.Parameter(tp.ones(()))

    def forward(self, x):
        return self.block(self.act(self.fc1(x))) * self.scale


class TNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = tnn.Linear(4, 3)
        self.act = tnn.ReLU()
        self.block = tnn.Sequential(tnn.Linear(3, 3), tnn.Tanh())
        self.register_buffer("step", torch.zeros(()))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
        self.scale = tnn.Parameter(torch.ones(()))

    def forward(self, x):
        return self.block(self.act(self.fc1(x))) * self.scale


def test_module_traversal_matches_torch():
    torch.manual_seed(0)
    t = TNet()
    tp.manual_seed(0)
    p = Net()
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in p.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in p.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in p.named_children()] == [n for n, _ in t.named_children()]
    assert [n for n, _ in p.named_parameters(prefix="m", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="m", recurse=False)]
    assert list(p.state_dict()) == list(t.state_dict())
    assert repr(p).replace("Net", "TNet") == repr(t)
    for (n, a), (_, b) in zip(t.state_dict().items(), p.state_dict().items()):
        assert_bits(a, b)
    # shared submodules and parameters are reported once (unless remove_duplicate=False)
    shared = pnn.Linear(2, 2)
    s = pnn.Sequential(shared, shared)
    assert len(list(s.parameters())) == 2 and len(list(s.named_modules())) == 2
    assert len(list(s.named_modules(remove_duplicate=False))) == 3
    assert s.get_submodule("0") is shared and s.get_parameter("1.weight") is shared.weight


def test_state_dict_round_trips_with_torch():
    torch.manual_seed(1)
    t = TNet()
    p = Net()
    p.load_state_dict({k: to_tp(v) for k, v in t.state_dict().items()})
    t2 = TNet()
    t2.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in p.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    assert_close(t(torch.from_numpy(x)), p(tp.from_numpy(x)))
    assert_close(t2(torch.from_numpy(x)), p(tp.from_numpy(x)))


def test_load_state_dict_errors_and_flags():
    p = Net()
    sd = p.state_dict()
    del sd["fc1.bias"]
    sd["extra"] = tp.zeros(1)
    with pytest.raises(RuntimeError) as e:
        p.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for Net:\n\tMissing key(s) in '
                            'state_dict: "fc1.bias". \n\tUnexpected key(s) in state_dict: "extra". ')
    r = p.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["fc1.bias"] and r.unexpected_keys == ["extra"]
    bad = p.state_dict()
    bad["fc1.weight"] = tp.zeros(2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param with "
                       r"shape torch.Size\(\[2, 2\]\) from checkpoint, the shape in current model "
                       r"is torch.Size\(\[3, 4\]\)."):
        p.load_state_dict(bad)
    w = p.fc1.weight
    new = {k: v.clone() + 1 for k, v in p.state_dict().items()}
    p.load_state_dict(new)
    assert p.fc1.weight is w  # copied in place
    p.load_state_dict(new, assign=True)
    assert p.fc1.weight is not w and isinstance(p.fc1.weight, pnn.Parameter)


def test_attribute_registration_rules():
    m = pnn.Module()
    m.w = pnn.Parameter(tp.ones(2))
    m.sub = pnn.Linear(1, 1)
    m.register_buffer("b", tp.zeros(1))
    m.plain = 3
    assert set(m._parameters) == {"w"} and set(m._modules) == {"sub"} and set(m._buffers) == {"b"}
    with pytest.raises(TypeError, match="cannot assign 'tensorplay.Tensor' as parameter 'w'"):
        m.w = tp.ones(2)
    m.w = None
    assert m.w is None and "w" in m._parameters
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", tp.zeros(1))
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope
    del m.sub
    assert "sub" not in m._modules
    with pytest.raises(TypeError, match="cannot assign 'tensorplay.Tensor' object to parameter 'q'"):
        m.register_parameter("q", tp.ones(1))
    class Early(pnn.Module):
        def __init__(self):
            self.w = pnn.Parameter(tp.ones(1))
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()


def test_train_eval_requires_grad_zero_grad_apply():
    m = Net()
    assert m.training and m.block[0].training
    m.eval()
    assert not m.training and not m.block[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m(tp.randn(2, 4)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum().item()) == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Tanh", "Sequential", "Net"]


def test_to_double_and_back_keeps_parameter_objects():
    m = Net()
    w = m.fc1.weight
    m.double()
    assert m.fc1.weight is w and w.dtype == tp.float64 and m.step.dtype == tp.float64
    m.to(tp.float32)
    assert w.dtype == tp.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        m.to(tp.int64)
    m.half().float()
    assert m(tp.randn(2, 4)).dtype == tp.float32


def test_data_assignment_follows_torch():
    for lib in (tp, torch):
        a = lib.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="must be floating point or complex dtype"):
            a.data = lib.zeros(3, dtype=lib.int64)
        a.data = lib.ones(3, dtype=lib.float64)  # shape and dtype may change
        assert a.requires_grad and a.dtype == lib.float64 and tuple(a.shape) == (3,)
        b = lib.zeros(2)
        b.data = lib.arange(3)  # no grad: any dtype
        assert b.dtype == lib.int64 and b.tolist() == [0, 1, 2]


def test_data_assignment_gives_a_leaf_a_new_accumulator():
    # a graph made before the swap keeps the old accumulator; a new one matches the new dtype
    got = {}
    for lib in (tp, torch):
        p = lib.nn.Parameter(lib.ones(3))
        old = (p * 2).sum()
        p.data = p.data.double()
        (p * 3).sum().backward()
        first = (p.grad.dtype, p.grad.tolist())
        old.backward()
        got[lib] = (str(first[0]).split(".")[-1], first[1], p.grad.tolist())
    assert got[tp] == got[torch] == ("float64", [3.0] * 3, [5.0] * 3)


def test_forward_hooks():
    m = pnn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(("post", out.shape)) or out + 1)
    h3 = m.register_forward_pre_hook(lambda mod, args, kw: calls.append(("kw", kw)), with_kwargs=True)
    out = m(tp.ones(1, 2))
    assert_close(out, m.bias.detach().reshape(1, 2) + 1)
    assert calls == [("kw", {}), ("post", tp.Size([1, 2]))]
    for h in (h1, h2, h3):
        h.remove()
    assert_close(m(tp.zeros(1, 2)), m.bias.detach().reshape(1, 2))
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out), always_call=True)
    with pytest.raises(RuntimeError):
        m(tp.ones(3))  # wrong shape: the forward raises, the hook still runs
    assert seen == [None]


def test_containers():
    s = pnn.Sequential(pnn.Linear(2, 3), pnn.ReLU(), pnn.Linear(3, 1))
    assert len(s) == 3 and isinstance(s[1], pnn.ReLU) and isinstance(s[-1], pnn.Linear)
    assert isinstance(s[:2], pnn.Sequential) and len(s[:2]) == 2
    s.append(pnn.Sigmoid())
    s.insert(0, pnn.Identity())
    assert [type(m).__name__ for m in s] == ["Identity", "Linear", "ReLU", "Linear", "Sigmoid"]
    del s[0]
    assert list(s._modules) == ["0", "1", "2", "3"]
    ml = pnn.ModuleList([pnn.Linear(1, 1) for _ in range(3)])
    ml.append(pnn.Tanh())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6 and isinstance(ml[1:], pnn.ModuleList)
    md = pnn.ModuleDict({"a": pnn.ReLU(), "b": pnn.Linear(1, 2)})
    assert list(md.keys()) == ["a", "b"] and "b" in md and len(list(md.parameters())) == 2
    pl = pnn.ParameterList([pnn.Parameter(tp.ones(2)), tp.zeros(3)])
    assert isinstance(pl[1], pnn.Parameter) and len(list(pl.parameters())) == 2
    pd = pnn.ParameterDict({"x": tp.ones(1)})
    pd["y"] = pnn.Parameter(tp.zeros(2))
    assert list(pd.keys()) == ["x", "y"] and len(list(pd.parameters())) == 2
    torch.manual_seed(0)
    tl = tnn.ModuleList([tnn.Linear(2, 2) for _ in range(3)] + [tnn.ReLU()])
    pl2 = pnn.ModuleList([pnn.Linear(2, 2) for _ in range(3)] + [pnn.ReLU()])
    assert repr(pl2) == repr(tl)


def test_lazy_linear_materialises_on_first_call():
    torch.manual_seed(2)
    t = tnn.LazyLinear(3)
    tp.manual_seed(2)
    p = pnn.LazyLinear(3)
    assert isinstance(p.weight, pnn.UninitializedParameter)
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    assert_close(t(torch.from_numpy(x)), p(tp.from_numpy(x)))
    assert type(p) is pnn.Linear and p.in_features == 5 and tuple(p.weight.shape) == (3, 5)
    assert_bits(t.weight, p.weight)


def test_deepcopy_module_and_parameter_repr():
    m = Net()
    m2 = copy.deepcopy(m)
    assert m2.fc1.weight is not m.fc1.weight and isinstance(m2.fc1.weight, pnn.Parameter)
    assert_bits(m2.fc1.weight, m.fc1.weight)
    p = pnn.Parameter(tp.ones(2))
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1.], requires_grad=True)")


def test_clip_grad_and_vector_conversion():
    torch.manual_seed(0)
    t = TNet()
    p = Net()
    p.load_state_dict({k: to_tp(v) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    t(torch.from_numpy(x)).sum().backward()
    p(tp.from_numpy(x)).sum().backward()
    for norm in (2.0, 1.0, float("inf")):
        tn = torch.nn.utils.clip_grad_norm_(t.parameters(), 0.1, norm)
        pn_ = tp.nn.utils.clip_grad_norm_(p.parameters(), 0.1, norm)
        assert_close(tn, pn_)
    torch.nn.utils.clip_grad_value_(t.parameters(), 0.01)
    tp.nn.utils.clip_grad_value_(p.parameters(), 0.01)
    for a, b in zip(t.parameters(), p.parameters()):
        assert_close(a.grad, b.grad)
    v = tp.nn.utils.parameters_to_vector(p.parameters())
    assert_close(torch.nn.utils.parameters_to_vector(t.parameters()), v)
    tp.nn.utils.vector_to_parameters(v * 0 + 2, p.parameters())
    assert float(p.fc1.weight.sum().item()) == 2 * 12


# ---------------------------------------------------------------- functional extras
def test_functional_extras_match_torch():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    tx, px = torch.from_numpy(x), tp.from_numpy(x)
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert_close(tF.pad(tx, (1, 2, 2, 1), mode=mode), pF.pad(px, (1, 2, 2, 1), mode=mode))
    assert_close(tF.pad(tx, (1, -1), value=3.0), pF.pad(px, (1, -1), value=3.0))
    assert_close(tF.normalize(tx, dim=2), pF.normalize(px, dim=2))
    assert_close(tF.cosine_similarity(tx, tx * 2 + 1, dim=1), pF.cosine_similarity(px, px * 2 + 1, dim=1))
    assert_close(tF.pairwise_distance(tx[0], tx[1]), pF.pairwise_distance(px[0], px[1]))
    assert_close(tF.pdist(tx[0]), pF.pdist(px[0]))
    idx = np.array([0, 3, 1])
    assert np.array_equal(tF.one_hot(torch.from_numpy(idx), 5).numpy(), pF.one_hot(tp.from_numpy(idx), 5).numpy())
    q, k, v = (rng.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    for causal in (False, True):
        assert_close(tF.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), is_causal=causal),
                     pF.scaled_dot_product_attention(*map(tp.from_numpy, (q, k, v)), is_causal=causal),
                     rtol=1e-5, atol=1e-6)
    mask = rng.random((4, 4)) > 0.3
    np.fill_diagonal(mask, True)
    assert_close(tF.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), attn_mask=torch.from_numpy(mask)),
                 pF.scaled_dot_product_attention(*map(tp.from_numpy, (q, k, v)), attn_mask=tp.from_numpy(mask)),
                 rtol=1e-5, atol=1e-6)
    for dt in ("float64",):
        assert pF.softmax(px, 1, dtype=getattr(tp, dt)).dtype == getattr(tp, dt)
    torch.manual_seed(0)
    tp.manual_seed(0)
    assert_close(tF.gumbel_softmax(tx, tau=0.5), pF.gumbel_softmax(px, tau=0.5), rtol=1e-5, atol=1e-6)


def test_embedding_bag_matches_torch():
    torch.manual_seed(0)
    t = tnn.EmbeddingBag(10, 3, mode="sum")
    tp.manual_seed(0)
    p = pnn.EmbeddingBag(10, 3, mode="sum")
    assert_bits(t.weight, p.weight)
    inp = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offs = np.array([0, 4])
    for mode in ("sum", "mean", "max"):
        t.mode = p.mode = mode
        assert_close(t(torch.from_numpy(inp), torch.from_numpy(offs)), p(tp.from_numpy(inp), tp.from_numpy(offs)))



EB_INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7, 7, 3, 3])
EB_OFFSETS = np.array([0, 4, 4, 6, 10, 10])  # two empty bags


def _bag_call(lib, w, psw, mode, padding_idx, last, two_d, **kw):
    F = tF if lib is torch else pF
    if two_d:
        inp, offs = lib.from_numpy(EB_INDICES[:12].reshape(3, 4).copy()), None
        psw = psw if psw is None else psw[:12].reshape(3, 4)
    else:
        offs = np.append(EB_OFFSETS, EB_INDICES.size) if last else EB_OFFSETS
        inp, offs = lib.from_numpy(EB_INDICES.copy()), lib.from_numpy(offs.copy())
    return F.embedding_bag(inp, w, offs, mode=mode, per_sample_weights=psw, padding_idx=padding_idx,
                           include_last_offset=last and not two_d, **kw)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3, -1])
@pytest.mark.parametrize("layout", ["offsets", "last_offset", "2d"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_embedding_bag_values_and_gradients_match_torch(mode, padding_idx, layout, dtype):
    rng = np.random.default_rng(11)
    w = rng.standard_normal((10, 5)).astype(dtype)
    psw = rng.standard_normal(EB_INDICES.size).astype(dtype) if mode == "sum" else None
    results = []
    for lib in (torch, tp):
        lw = lib.from_numpy(w.copy()).requires_grad_()
        lp = None if psw is None else lib.from_numpy(psw.copy()).requires_grad_()
        out = _bag_call(lib, lw, lp, mode, padding_idx, layout == "last_offset", layout == "2d")
        cot = lib.from_numpy(rng.standard_normal(tuple(out.shape)).astype(dtype)) if lib is torch else \
            tp.from_numpy(results[0][1].numpy())
        grads = lib.autograd.grad(out, [lw] + ([lp] if lp is not None else []), cot)
        results.append((out, cot, grads))
    (t_out, _, t_grads), (p_out, _, p_grads) = results
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert_close(p_out, t_out, rtol=tol, atol=tol)
    for a, b in zip(p_grads, t_grads):
        assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    rng = np.random.default_rng(12)
    w = tp.from_numpy(rng.standard_normal((10, 3))).requires_grad_()
    psw = tp.from_numpy(rng.standard_normal(EB_INDICES.size)).requires_grad_() if mode == "sum" else None
    inputs = (w,) if psw is None else (w, psw)
    assert tp.autograd.gradcheck(lambda *a: _bag_call(tp, a[0], a[1] if len(a) > 1 else None, mode, 3, True, False),
                                 inputs)


def test_embedding_bag_max_keeps_first_winner_and_nan_only_first():
    w = np.array([[1.0, 2.0], [3.0, np.nan], [np.nan, 0.0], [3.0, 2.0], [0.0, 5.0]])
    inp, offs = np.array([0, 1, 2, 3, 2, 0]), np.array([0, 4])
    outs = []
    for lib in (torch, tp):
        lw = lib.from_numpy(w.copy()).requires_grad_()
        out = (tF if lib is torch else pF).embedding_bag(lib.from_numpy(inp), lw, lib.from_numpy(offs), mode="max")
        outs.append((out, lib.autograd.grad(out.sum(), [lw])[0]))
    np.testing.assert_array_equal(np_of(outs[1][0]), np_of(outs[0][0]))
    np.testing.assert_array_equal(np_of(outs[1][1]), np_of(outs[0][1]))


def test_embedding_bag_scale_grad_by_freq():
    """Each index's gradient divided by its count over the input (the documented rule; PyTorch's
    embedding_bag divides by another index's count when a smaller index repeats, so the
    reference is embedding's scale_grad_by_freq summed per bag)."""
    rng = np.random.default_rng(13)
    w = rng.standard_normal((10, 4))
    tw = torch.from_numpy(w.copy()).requires_grad_()
    rows = tF.embedding(torch.from_numpy(EB_INDICES), tw, scale_grad_by_freq=True)
    bounds = list(EB_OFFSETS) + [EB_INDICES.size]
    cot = rng.standard_normal((len(EB_OFFSETS), 4))
    for mode in ("sum", "mean"):
        pieces = [rows[a:b].sum(0) if mode == "sum" or a == b else rows[a:b].mean(0) for a, b in zip(bounds, bounds[1:])]
        expect = torch.autograd.grad(torch.stack(pieces), [tw], torch.from_numpy(cot), retain_graph=True)[0]
        pw = tp.from_numpy(w.copy()).requires_grad_()
        out = pF.embedding_bag(tp.from_numpy(EB_INDICES), pw, tp.from_numpy(EB_OFFSETS), mode=mode,
                               scale_grad_by_freq=True)
        assert_close(tp.autograd.grad(out, [pw], tp.from_numpy(cot))[0], expect, rtol=1e-12, atol=1e-12)
    # where every repeated index is the largest one, PyTorch's embedding_bag agrees
    inp, offs = np.array([0, 4, 2, 9, 9, 9]), np.array([0, 3])
    grads = []
    for lib in (torch, tp):
        lw = lib.from_numpy(w.copy()).requires_grad_()
        out = (tF if lib is torch else pF).embedding_bag(lib.from_numpy(inp), lw, lib.from_numpy(offs), mode="mean",
                                                         scale_grad_by_freq=True)
        grads.append(lib.autograd.grad(out, [lw], lib.from_numpy(cot[:2].copy()))[0])
    assert_close(grads[1], grads[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_embedding_bag_max_norm_renormalises_rows_in_place(norm_type):
    rng = np.random.default_rng(14)
    w = (rng.standard_normal((10, 4)) * 2).astype(np.float32)
    tw, pw = torch.from_numpy(w.copy()).requires_grad_(), tp.from_numpy(w.copy()).requires_grad_()
    t_out = tF.embedding_bag(torch.from_numpy(EB_INDICES), tw, torch.from_numpy(EB_OFFSETS), max_norm=1.5,
                             norm_type=norm_type)
    p_out = pF.embedding_bag(tp.from_numpy(EB_INDICES), pw, tp.from_numpy(EB_OFFSETS), max_norm=1.5,
                             norm_type=norm_type)
    assert_close(p_out, t_out)
    assert_close(pw, tw)  # rows read were scaled in place, the others untouched
    assert not np.allclose(np_of(pw), w)
    assert_close(tp.autograd.grad(p_out.sum(), [pw])[0], torch.autograd.grad(t_out.sum(), [tw])[0])
    # F.embedding shares the renormalisation
    tw2, pw2 = torch.from_numpy(w.copy()), tp.from_numpy(w.copy())
    assert_close(pF.embedding(tp.tensor([[1, 2], [2, 8]]), pw2, max_norm=1.0, norm_type=norm_type),
                 tF.embedding(torch.tensor([[1, 2], [2, 8]]), tw2, max_norm=1.0, norm_type=norm_type))
    assert_close(pw2, tw2)


def test_embedding_renorm_errors_match_torch():
    for args in [((10,), [1, 2]), ((5, 3), [1, 7]), ((5, 3), [1.0, 2.0])]:
        shape, idx = args
        with pytest.raises(Exception) as expected:
            torch.embedding_renorm_(torch.ones(shape), torch.tensor(idx), 1.0, 2.0)
        with pytest.raises(type(expected.value), match="embedding_renorm_"):
            tp.embedding_renorm_(tp.ones(shape), tp.tensor(idx), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tp.embedding_renorm_(tp.ones((5, 3), requires_grad=True), tp.tensor([1]), 1.0, 2.0)


def test_embedding_bag_sparse_and_double_backward_raise():
    w = tp.ones((10, 3), requires_grad=True)
    out = pF.embedding_bag(tp.from_numpy(EB_INDICES), w, tp.from_numpy(EB_OFFSETS), mode="sum", sparse=True)
    with pytest.raises(NotImplementedError, match="sparse"):
        out.sum().backward()
    psw = tp.ones(EB_INDICES.size, requires_grad=True)
    out = pF.embedding_bag(tp.from_numpy(EB_INDICES), w, tp.from_numpy(EB_OFFSETS), mode="sum", per_sample_weights=psw)
    gw, = tp.autograd.grad(out.sum(), [w], create_graph=True)
    with pytest.raises(NotImplementedError, match="_embedding_bag_backward"):
        tp.autograd.grad(gw.sum(), [psw])


EB_BAD = [
    (EB_INDICES, np.array([1, 4]), {}),                          # offsets[0] != 0
    (np.array([1, 10]), np.array([0]), {}),                      # index out of range
    (np.array([1, -1]), np.array([0]), {}),
    (EB_INDICES, np.array([0, 40]), {}),                         # offsets past the input
    (EB_INDICES, EB_OFFSETS, {"mode": "mean", "per_sample_weights": np.ones(EB_INDICES.size)}),
    (EB_INDICES, EB_OFFSETS, {"mode": "sum", "per_sample_weights": np.ones(3)}),
    (EB_INDICES, EB_OFFSETS, {"mode": "median"}),
    (EB_INDICES, EB_OFFSETS, {"mode": "max", "scale_grad_by_freq": True}),
    (EB_INDICES, EB_OFFSETS, {"padding_idx": 10}),
    (EB_INDICES, None, {}),                                      # 1-D input needs offsets
    (EB_INDICES[:12].reshape(3, 4), EB_OFFSETS, {}),             # 2-D input takes none
    (EB_INDICES[:12].reshape(3, 2, 2), None, {}),
    (EB_INDICES.astype(np.float32), EB_OFFSETS, {}),
    (EB_INDICES, np.array([], dtype=np.int64), {"include_last_offset": True}),
]


@pytest.mark.parametrize("inp, offs, kwargs", EB_BAD)
def test_embedding_bag_bad_input_raises_like_torch(inp, offs, kwargs):
    def call(lib):
        F = tF if lib is torch else pF
        kw = {k: lib.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return F.embedding_bag(lib.from_numpy(inp.copy()), lib.ones((10, 3), dtype=lib.float64),
                               None if offs is None else lib.from_numpy(offs.copy()), **kw)
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(type(expected.value)):
        call(tp)


def test_embedding_bag_module_matches_torch():
    for kwargs in ({"mode": "sum", "padding_idx": -2}, {"max_norm": 1.0, "norm_type": 3.0}, {"mode": "max"}):
        torch.manual_seed(1)
        t = tnn.EmbeddingBag(10, 3, **kwargs)
        tp.manual_seed(1)
        p = pnn.EmbeddingBag(10, 3, **kwargs)
        assert_bits(t.weight, p.weight)
        assert repr(p) == repr(t)
        assert_close(p(tp.from_numpy(EB_INDICES), tp.from_numpy(EB_OFFSETS)),
                     t(torch.from_numpy(EB_INDICES), torch.from_numpy(EB_OFFSETS)))
    w = np.random.default_rng(15).standard_normal((6, 2))
    t = tnn.EmbeddingBag.from_pretrained(torch.from_numpy(w), mode="sum", freeze=False, padding_idx=1)
    p = pnn.EmbeddingBag.from_pretrained(tp.from_numpy(w), mode="sum", freeze=False, padding_idx=1)
    assert p.weight.requires_grad and repr(p) == repr(t)
    inp = np.array([[0, 1, 5], [2, 2, 1]])
    assert_close(p(tp.from_numpy(inp)), t(torch.from_numpy(inp)))
    with pytest.raises(AssertionError):
        pnn.EmbeddingBag(10, 3, padding_idx=10)
    with pytest.raises(AssertionError):
        pnn.EmbeddingBag(10, 3, _weight=tp.ones((9, 3)))

# ---------------------------------------------------------------- recurrent layers
RNNS = [
    ("RNN", (5, 6), {}), ("RNN", (5, 6), {"nonlinearity": "relu", "num_layers": 2}),
    ("LSTM", (5, 6), {}), ("LSTM", (5, 6), {"num_layers": 2, "bidirectional": True}),
    ("LSTM", (5, 6), {"proj_size": 3, "batch_first": True}),
    ("GRU", (5, 6), {"num_layers": 2, "bias": False}), ("GRU", (5, 6), {"bidirectional": True}),
]


@pytest.mark.parametrize("name, args, kwargs", RNNS)
def test_recurrent_layers_match_torch(name, args, kwargs):
    tm, pm = build_both(name, args, kwargs, seed=3)
    for (k, a), (_, b) in zip(tm.state_dict().items(), pm.state_dict().items()):
        assert_bits(a, b)
    assert repr(tm) == repr(pm)
    rng = np.random.default_rng(0)
    shape = (3, 4, 5) if kwargs.get("batch_first") else (4, 3, 5)
    x = rng.standard_normal(shape).astype(np.float32)
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    tout, th = tm(tx)
    pout, ph = pm(px)
    assert_close(tout, pout, rtol=1e-4, atol=1e-5)
    if name == "LSTM":
        assert_close(th[0], ph[0], rtol=1e-4, atol=1e-5)
        assert_close(th[1], ph[1], rtol=1e-4, atol=1e-5)
        tloss, ploss = tout.sum() + th[1].sum(), pout.sum() + ph[1].sum()
    else:
        assert_close(th, ph, rtol=1e-4, atol=1e-5)
        tloss, ploss = tout.sum() + th.sum(), pout.sum() + ph.sum()
    tloss.backward()
    ploss.backward()
    assert_close(tx.grad, px.grad, rtol=1e-4, atol=1e-5)
    for (n, a), (_, b) in zip(tm.named_parameters(), pm.named_parameters()):
        assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["dropout", "unbatched", "hx", "no_bias", "float64", "hy_only",
                                  "batch_first_bidirectional"])
def test_fused_lstm_layers_match_torch(case):
    # the C++ time loop (_FusedLSTMLayer): outputs and gradients of input, state and weights
    kwargs = {"num_layers": 2}
    kwargs.update({"dropout": {"dropout": 0.3}, "no_bias": {"bias": False},
                   "batch_first_bidirectional": {"batch_first": True, "bidirectional": True}}
                  .get(case, {}))
    tm, pm = build_both("LSTM", (5, 8), kwargs, seed=4)
    dt = np.float64 if case == "float64" else np.float32
    if case == "float64":
        tm, pm = tm.double(), pm.double()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5) if case == "unbatched" else (6, 3, 5)).astype(dt)
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    targs, pargs = [tx], [px]
    if case == "hx":
        h = rng.standard_normal((2, 3, 8)).astype(dt)
        c = rng.standard_normal((2, 3, 8)).astype(dt)
        th = (torch.from_numpy(h).requires_grad_(), torch.from_numpy(c).requires_grad_())
        ph = (tp.from_numpy(h.copy()).requires_grad_(), tp.from_numpy(c.copy()).requires_grad_())
        targs.append(th)
        pargs.append(ph)
    torch.manual_seed(7)
    tp.manual_seed(7)
    tout, (thy, tcy) = tm(*targs)
    pout, (phy, pcy) = pm(*pargs)
    tol = dict(rtol=1e-9, atol=1e-10) if case == "float64" else dict(rtol=1e-4, atol=1e-5)
    for a, b in ((tout, pout), (thy, phy), (tcy, pcy)):
        assert tuple(a.shape) == tuple(b.shape)
        assert_close(a, b, **tol)
    w = rng.standard_normal(tuple(tout.shape)).astype(dt)
    if case == "hy_only":
        tloss, ploss = (thy * 2).sum() + tcy.sum(), (phy * 2).sum() + pcy.sum()
    else:
        tloss = (tout * torch.from_numpy(w)).sum() + thy.sum() - tcy.sum()
        ploss = (pout * tp.from_numpy(w)).sum() + phy.sum() - pcy.sum()
    tloss.backward()
    ploss.backward()
    assert_close(tx.grad, px.grad, **tol)
    if case == "hx":
        assert_close(targs[1][0].grad, pargs[1][0].grad, **tol)
        assert_close(targs[1][1].grad, pargs[1][1].grad, **tol)
    for (n, a), (_, b) in zip(tm.named_parameters(), pm.named_parameters()):
        assert_close(a.grad, b.grad, **tol)


def test_fused_lstm_double_backward_matches_torch():
    # create_graph through the fused layer differentiates the composed step ops
    tm, pm = build_both("LSTM", (3, 4), {"bidirectional": True}, seed=6)
    tm, pm = tm.double(), pm.double()
    x = np.random.default_rng(6).standard_normal((5, 2, 3))
    results = []
    for lib, m in ((torch, tm), (tp, pm)):
        xx = lib.from_numpy(x.copy()).requires_grad_()
        out, (h, c) = m(xx)
        (g,) = lib.autograd.grad((out.pow(2)).sum() + c.sum(), xx, create_graph=True)
        (g.pow(2).sum()).backward()
        results.append([xx.grad] + [p.grad for p in m.parameters()])
    for a, b in zip(*results):
        assert_close(a, b, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("reverse", [False, True])
def test_fused_lstm_layer_gradcheck(reverse):
    from tensorplay.nn.modules.rnn import _FusedLSTMLayer
    g = tp.Generator().manual_seed(3)
    args = [tp.randn(shape, dtype=tp.float64, generator=g).requires_grad_()
            for shape in ((4, 2, 12), (2, 3), (2, 3), (12, 3), (12,))]

    def layer(*a):
        return _FusedLSTMLayer.apply(*a, reverse)
    assert tp.autograd.gradcheck(layer, args)
    assert tp.autograd.gradgradcheck(layer, args)


def test_packed_sequences_through_lstm():
    tm, pm = build_both("LSTM", (3, 4), {"bidirectional": True}, seed=1)
    rng = np.random.default_rng(1)
    lengths = [2, 5, 3]
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in lengths]
    tpk = torch.nn.utils.rnn.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False)
    ppk = tp.nn.utils.rnn.pack_sequence([tp.from_numpy(s) for s in seqs], enforce_sorted=False)
    assert_close(tpk.data, ppk.data)
    assert tpk.batch_sizes.tolist() == ppk.batch_sizes.tolist()
    tout, (th, tc) = tm(tpk)
    pout, (ph, pc) = pm(ppk)
    assert_close(tout.data, pout.data, rtol=1e-4, atol=1e-5)
    assert_close(th, ph, rtol=1e-4, atol=1e-5)
    tpad, tl = torch.nn.utils.rnn.pad_packed_sequence(tout, batch_first=True)
    ppad, pl = tp.nn.utils.rnn.pad_packed_sequence(pout, batch_first=True)
    assert_close(tpad, ppad, rtol=1e-4, atol=1e-5)
    assert tl.tolist() == pl.tolist()


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(name):
    tm, pm = build_both(name, (4, 5), {}, seed=2)
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    tout, pout = tm(torch.from_numpy(x)), pm(tp.from_numpy(x))
    if name == "LSTMCell":
        tout, pout = tout[1], pout[1]
    assert_close(tout, pout, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- transformers
def test_transformer_matches_torch():
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16)
    tm, pm = build_both("Transformer", (), kw, seed=5)
    for (k, a), (_, b) in zip(tm.state_dict().items(), pm.state_dict().items()):
        assert_bits(a, b)
    tm.eval(), pm.eval()
    rng = np.random.default_rng(3)
    src = rng.standard_normal((6, 2, 8)).astype(np.float32)
    tgt = rng.standard_normal((5, 2, 8)).astype(np.float32)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    pmask = tp.nn.Transformer.generate_square_subsequent_mask(5)
    assert_close(mask, pmask)
    ts, tt = torch.from_numpy(src).requires_grad_(), torch.from_numpy(tgt)
    ps, pt = tp.from_numpy(src.copy()).requires_grad_(), tp.from_numpy(tgt.copy())
    tout = tm(ts, tt, tgt_mask=mask)
    pout = pm(ps, pt, tgt_mask=pmask)
    assert_close(tout, pout, rtol=1e-4, atol=1e-5)
    tout.sum().backward()
    pout.sum().backward()
    assert_close(ts.grad, ps.grad, rtol=1e-3, atol=1e-5)
    for (n, a), (_, b) in zip(tm.named_parameters(), pm.named_parameters()):
        assert_close(a.grad, b.grad, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_with_padding_mask(norm_first):
    tm, pm = build_both("TransformerEncoderLayer", (8, 2),
                        {"dim_feedforward": 12, "batch_first": True, "norm_first": norm_first,
                         "activation": "gelu"}, seed=6)
    tm.eval(), pm.eval()
    x = np.random.default_rng(4).standard_normal((3, 5, 8)).astype(np.float32)
    kpm = np.zeros((3, 5), dtype=bool)
    kpm[0, 3:] = True
    assert_close(tm(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(kpm)),
                 pm(tp.from_numpy(x), src_key_padding_mask=tp.from_numpy(kpm)), rtol=1e-4, atol=1e-5)


def test_functional_call_swaps_and_restores():
    m = pnn.Linear(3, 2)
    w = tp.zeros(2, 3, requires_grad=True)
    b = tp.ones(2)
    out = tp.func.functional_call(m, {"weight": w, "bias": b}, (tp.randn(4, 3),))
    assert out.tolist() == [[1.0, 1.0]] * 4
    out.sum().backward()
    assert w.grad is not None and m.weight.grad is None
    assert isinstance(m.weight, pnn.Parameter) and m.weight is not w
    with pytest.raises(RuntimeError, match="Missing key"):
        tp.nn.utils.stateless.functional_call(m, {"weight": w}, (tp.randn(1, 3),), strict=True)


@pytest.mark.parametrize("mode, shape, kw", [
    ("nearest", (2, 3, 5), {"size": 8}), ("nearest", (2, 3, 4, 5), {"scale_factor": 2}),
    ("nearest", (1, 2, 7, 5), {"size": (3, 4)}), ("nearest-exact", (1, 2, 7, 5), {"size": (3, 9)}),
    ("linear", (2, 3, 5), {"size": 9}), ("linear", (2, 3, 5), {"size": 9, "align_corners": True}),
    ("bilinear", (1, 2, 4, 5), {"scale_factor": 1.5}),
    ("bilinear", (1, 2, 6, 5), {"size": (3, 8), "align_corners": True}),
    ("bicubic", (1, 2, 4, 5), {"size": (7, 6)}),
    ("bicubic", (1, 2, 4, 5), {"size": (7, 3), "align_corners": True}),
    ("trilinear", (1, 1, 3, 4, 5), {"size": (5, 3, 6)}),
])
def test_interpolate_matches_torch(mode, shape, kw):
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    tout, pout = tF.interpolate(tx, mode=mode, **kw), pF.interpolate(px, mode=mode, **kw)
    assert_close(tout, pout, rtol=1e-5, atol=1e-5)
    g = np.random.default_rng(6).standard_normal(tuple(tout.shape)).astype(np.float32)
    tout.backward(torch.from_numpy(g))
    pout.backward(tp.from_numpy(g))
    assert_close(tx.grad, px.grad, rtol=1e-5, atol=1e-5)
    um_t = tnn.Upsample(mode=mode, **kw)
    um_p = pnn.Upsample(mode=mode, **kw)
    assert repr(um_t) == repr(um_p)


def test_full_backward_hooks_match_torch():
    seen = {}
    for lib in (torch, tp):
        lib.manual_seed(0)
        m = lib.nn.Linear(3, 2)
        log = []
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", np_of(go[0]))))
        m.register_full_backward_hook(
            lambda mod, gi, go: log.append(("full", np_of(gi[0]), np_of(go[0]))) or (gi[0] * 2,))
        x = lib.ones((4, 3), requires_grad=True)
        (m(x) * 3).sum().backward()
        seen[lib.__name__] = (log, np_of(x.grad))
    (tlog, tg), (plog, pg) = seen["torch"], seen["tensorplay"]
    assert [e[0] for e in tlog] == [e[0] for e in plog] == ["pre", "full"]
    for a, b in zip(tlog, plog):
        for u, v in zip(a[1:], b[1:]):
            np.testing.assert_allclose(u, v, rtol=1e-6)
    np.testing.assert_allclose(tg, pg, rtol=1e-6)


def test_parametrizations_match_torch():
    for make in (lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(4, 3)),
                 lambda lib: lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(4, 3), dim=1),
                 lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(5, 4)),
                 lambda lib: lib.nn.utils.weight_norm(lib.nn.Linear(4, 3))):
        torch.manual_seed(0)
        tm = make(torch)
        tp.manual_seed(0)
        pm = make(tp)
        assert type(pm).__name__ == type(tm).__name__
        assert list(pm.state_dict()) == list(tm.state_dict())
        for (k, a), (_, b) in zip(tm.state_dict().items(), pm.state_dict().items()):
            assert_close(a, b, rtol=1e-5, atol=1e-6)
        x = np.random.default_rng(0).standard_normal((2, tm.in_features)).astype(np.float32)
        tx, px = torch.from_numpy(x), tp.from_numpy(x)
        tout, pout = tm(tx), pm(px)
        assert_close(tout, pout, rtol=1e-5, atol=1e-6)
        tout.sum().backward()
        pout.sum().backward()
        for (n, a), (_, b) in zip(tm.named_parameters(), pm.named_parameters()):
            assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-5)
    m = tp.nn.utils.parametrize.register_parametrization(pnn.Linear(3, 3), "weight", _Symmetric())
    w = m.weight
    assert np.allclose(w.detach().numpy(), w.detach().numpy().T)
    tp.nn.utils.parametrize.remove_parametrizations(m, "weight")
    assert type(m) is pnn.Linear and isinstance(m.weight, pnn.Parameter)


@pytest.mark.parametrize("shape", [(5, 5), (6, 3), (3, 6), (2, 4, 3)])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_parametrization_matches_torch(shape, orthogonal_map, use_trivialization):
    # registration (incl. the random completion of a wide/tall base), the weight, its
    # gradient, the state_dict keys, and assigning a new orthogonal weight
    seen = []
    for lib in (torch, tp):
        lib.manual_seed(0)
        m = lib.nn.Module()
        m.register_parameter("weight", lib.nn.Parameter(lib.randn(shape, dtype=lib.float64)))
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=orthogonal_map,
                                                 use_trivialization=use_trivialization)
        w = m.weight
        coef = lib.arange(float(w.numel()), dtype=lib.float64).reshape(tuple(w.shape))
        (w * coef).sum().backward()
        new = None
        try:
            q = lib.linalg.qr(lib.randn(shape, dtype=lib.float64)).Q if shape[-2] >= shape[-1] \
                else lib.linalg.qr(lib.randn(shape, dtype=lib.float64).mT).Q.mT
            m.weight = q
            new = m.weight.detach()
        except NotImplementedError as e:
            new = str(e)
        seen.append((w.detach(), m.parametrizations.weight.original.grad, sorted(m.state_dict()),
                     new))
    (tw, tg, tk, tn), (pw, pg, pk, pn) = seen
    assert_close(tw, pw, rtol=1e-10, atol=1e-12)
    assert_close(tg, pg, rtol=1e-9, atol=1e-10)
    assert tk == pk
    if isinstance(tn, str):
        assert pn == tn
    else:
        assert_close(tn, pn, rtol=1e-9, atol=1e-10)
    q = pw if shape[-2] >= shape[-1] else pw.mT
    eye = np.eye(q.shape[-1])
    np.testing.assert_allclose((q.mT @ q).numpy(), np.broadcast_to(eye, tuple(q.shape[:-2]) + eye.shape),
                               atol=1e-10)


def test_orthogonal_parametrization_errors():
    for lib in (torch, tp):
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
            lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), "bias")
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
            lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), "w")
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="svd")


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (2, 6, 2), (3, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_geqrf_and_householder_product_match_torch(shape, dtype):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    ta, ttau = torch.geqrf(torch.from_numpy(x))
    pa, ptau = tp.geqrf(tp.from_numpy(x))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    assert_close(ta, pa, **tol)
    assert_close(ttau, ptau, **tol)
    tq = torch.linalg.householder_product(ta, ttau)
    pq = tp.linalg.householder_product(pa, ptau)
    assert_close(tq, pq, **tol)
    if dtype == "float64":  # differentiable in both arguments
        a = pa.clone().requires_grad_()
        t = ptau.clone().requires_grad_()
        assert tp.autograd.gradcheck(tp.linalg.householder_product, (a, t))


def test_householder_product_errors_match_torch():
    cases = [((3,), (1,)), ((2, 3), (2,)), ((4, 3), (4,)), ((4, 3), (2, 2))]
    for a_shape, tau_shape in cases:
        with pytest.raises(RuntimeError) as te:
            torch.linalg.householder_product(torch.randn(a_shape), torch.randn(tau_shape))
        with pytest.raises(RuntimeError) as pe:
            tp.linalg.householder_product(tp.randn(a_shape), tp.randn(tau_shape))
        assert str(pe.value) == str(te.value)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tp.geqrf(tp.randn(3))


class _Symmetric(pnn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("flat_targets", [False, True])
def test_ctc_loss_matches_torch(reduction, flat_targets):
    rng = np.random.default_rng(7)
    T, N, C = 12, 3, 5
    logits = rng.standard_normal((T, N, C)).astype(np.float32)
    tgt = np.array([[1, 2, 2, 3], [4, 4, 0, 0], [1, 3, 2, 0]])
    tgt[tgt == 0] = 1
    tl = np.array([4, 2, 3])
    il = np.array([12, 9, 6])
    t_in = torch.from_numpy(logits).log_softmax(2).detach().requires_grad_()
    p_in = tp.from_numpy(t_in.detach().numpy().copy()).requires_grad_()
    if flat_targets:
        flat = np.concatenate([tgt[i, :tl[i]] for i in range(N)])
        tt, pt = torch.from_numpy(flat), tp.from_numpy(flat)
    else:
        tt, pt = torch.from_numpy(tgt), tp.from_numpy(tgt)
    tl_ = tnn.CTCLoss(reduction=reduction)(t_in, tt, torch.from_numpy(il), torch.from_numpy(tl))
    pl_ = pnn.CTCLoss(reduction=reduction)(p_in, pt, tp.from_numpy(il), tp.from_numpy(tl))
    assert_close(tl_, pl_, rtol=1e-5, atol=1e-5)
    tl_.sum().backward()
    pl_.sum().backward()
    assert_close(t_in.grad, p_in.grad, rtol=1e-4, atol=1e-5)


def test_ctc_impossible_alignment_and_zero_infinity():
    lp = tp.full((2, 1, 3), -1.0986)
    for zi in (False, True):
        out = pF.ctc_loss(lp, tp.tensor([[1, 1]]), [2], [2], reduction="none", zero_infinity=zi)
        ref = tF.ctc_loss(torch.full((2, 1, 3), -1.0986), torch.tensor([[1, 1]]), [2], [2],
                          reduction="none", zero_infinity=zi)
        assert np_of(out).tolist() == np_of(ref).tolist()


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_grid_sample_match_torch(mode, padding_mode, align_corners):
    rng = np.random.default_rng(8)
    theta = (np.array([[[1.1, 0.2, 0.1], [-0.3, 0.9, -0.2]]] * 2) +
             rng.standard_normal((2, 2, 3)) * 0.3).astype(np.float32)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    tt, pt = torch.from_numpy(theta).requires_grad_(), tp.from_numpy(theta.copy()).requires_grad_()
    tg = tF.affine_grid(tt, (2, 3, 4, 7), align_corners=align_corners)
    pg = pF.affine_grid(pt, (2, 3, 4, 7), align_corners=align_corners)
    assert_close(tg, pg, rtol=1e-5, atol=1e-6)
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    tout = tF.grid_sample(tx, tg * 1.3, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    pout = pF.grid_sample(px, pg * 1.3, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    assert_close(tout, pout, rtol=1e-4, atol=1e-5)
    tout.sum().backward()
    pout.sum().backward()
    assert_close(tx.grad, px.grad, rtol=1e-4, atol=1e-5)
    if mode == "bilinear":
        assert_close(tt.grad, pt.grad, rtol=1e-3, atol=1e-4)


def test_lazy_batchnorm_materialises_like_torch():
    t, p = tnn.LazyBatchNorm1d(), pnn.LazyBatchNorm1d()
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    assert_close(t(torch.from_numpy(x)), p(tp.from_numpy(x)))
    assert type(p) is pnn.BatchNorm1d and p.num_features == 3
    assert_close(t.running_mean, p.running_mean)
    assert repr(t) == repr(p)


def test_fused_cross_entropy_matches_torch():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((9, 7)).astype(np.float32)
    t = rng.integers(0, 7, 9)
    t[[2, 5]] = -100
    for red in ("mean", "sum", "none"):
        tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
        tout = tF.cross_entropy(tx, torch.from_numpy(t), reduction=red)
        pout = pF.cross_entropy(px, tp.from_numpy(t), reduction=red)
        assert_close(tout, pout)
        tout.sum().backward()
        pout.sum().backward()
        assert_close(tx.grad, px.grad)
    # one sample (1-D logits) and double precision gradients, twice differentiable
    assert_close(tF.cross_entropy(torch.from_numpy(x[0]), torch.tensor(3)),
                 pF.cross_entropy(tp.from_numpy(x[0]), tp.tensor(3)))
    xd = tp.from_numpy(x.astype(np.float64)).requires_grad_()
    assert tp.autograd.gradcheck(lambda a: pF.cross_entropy(a, tp.from_numpy(t)), (xd,))
    assert tp.autograd.gradgradcheck(lambda a: pF.cross_entropy(a, tp.from_numpy(t)), (xd,))
    with pytest.raises(IndexError, match="Target 9 is out of bounds"):
        pF.cross_entropy(tp.from_numpy(x), tp.tensor([9] * 9))


def test_fold_unfold_and_max_unpool_match_torch():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    tx, px = torch.from_numpy(x).requires_grad_(), tp.from_numpy(x.copy()).requires_grad_()
    tu = tnn.Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=2)(tx)
    pu = pnn.Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=2)(px)
    assert_close(tu, pu)
    tf_ = tnn.Fold(output_size=(6, 5), kernel_size=(2, 3), padding=1, stride=2)(tu)
    pf_ = pnn.Fold(output_size=(6, 5), kernel_size=(2, 3), padding=1, stride=2)(pu)
    assert_close(tf_, pf_)
    tf_.sum().backward()
    pf_.sum().backward()
    assert_close(tx.grad, px.grad)
    tout, tidx = tnn.MaxPool2d(2, return_indices=True)(torch.from_numpy(x))
    pout, pidx = pnn.MaxPool2d(2, return_indices=True)(tp.from_numpy(x))
    assert np.array_equal(tidx.numpy(), pidx.numpy())
    assert_close(tnn.MaxUnpool2d(2)(tout, tidx, output_size=(6, 5)),
                 pnn.MaxUnpool2d(2)(pout, pidx, output_size=(6, 5)))
    x2 = torch.from_numpy(x[..., :4].copy())  # an even width: the default output size fits
    tout, tidx = tnn.MaxPool2d(2, return_indices=True)(x2)
    pout, pidx = pnn.MaxPool2d(2, return_indices=True)(tp.from_numpy(x2.numpy()))
    assert_close(tnn.MaxUnpool2d(2)(tout, tidx), pnn.MaxUnpool2d(2)(pout, pidx))


@pytest.mark.parametrize("x_dtype,w_dtype", [("bfloat16", "float32"), ("float32", "bfloat16"),
                                             ("float64", "float32"), ("float16", "float16")])
def test_rms_norm_result_has_the_input_dtype(x_dtype, w_dtype):
    # PyTorch computes in the input's opmath type, scales by the weight there, then casts back
    g = np.random.default_rng(0)
    xv, wv = g.standard_normal((3, 8)), g.standard_normal(8)
    xt, wt = torch.tensor(xv).to(getattr(torch, x_dtype)), torch.tensor(wv).to(getattr(torch, w_dtype))
    want = torch.nn.functional.rms_norm(xt, [8], wt, 1e-5)
    got = tp.nn.functional.rms_norm(tp.tensor(xt.double().numpy()).to(getattr(tp, x_dtype)), [8],
                                    tp.tensor(wt.double().numpy()).to(getattr(tp, w_dtype)), 1e-5)
    assert str(got.dtype).split(".")[-1] == x_dtype
    np.testing.assert_allclose(got.double().numpy(), want.double().numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("x_dtype", ["bfloat16", "float16"])
def test_layer_norm_mixed_dtypes_on_cpu(x_dtype):
    # PyTorch's CPU rule: a half-type input takes float32 weight and bias (statistics in
    # float32), nothing else of another dtype
    g = np.random.default_rng(1)
    xv, wv, bv = g.standard_normal((3, 8)), g.standard_normal(8), g.standard_normal(8)
    xt = torch.tensor(xv).to(getattr(torch, x_dtype))
    x = tp.tensor(xt.double().numpy()).to(getattr(tp, x_dtype))
    y, m, r = tp.native_layer_norm(x, [8], tp.tensor(wv, dtype=tp.float32), tp.tensor(bv, dtype=tp.float32), 1e-5)
    yt, mt, rt = torch.ops.aten.native_layer_norm(xt, [8], torch.tensor(wv, dtype=torch.float32),
                                                  torch.tensor(bv, dtype=torch.float32), 1e-5)
    assert [str(t.dtype).split(".")[-1] for t in (y, m, r)] == [str(t.dtype).split(".")[-1] for t in (yt, mt, rt)]
    np.testing.assert_allclose(y.double().numpy(), yt.double().numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(m.numpy(), mt.numpy(), rtol=1e-5, atol=1e-6)
    for w, b in [(tp.tensor(wv, dtype=tp.float64), None), (tp.tensor(wv, dtype=tp.float32), x[0]),
                 (x[0].to(tp.float16 if x_dtype == "bfloat16" else tp.bfloat16), None)]:
        with pytest.raises(RuntimeError, match=r"mixed dtype \(CPU\): expect parameter to have scalar type of Float"):
            tp.nn.functional.layer_norm(x, (8,), w, b)


def test_fused_backward_gradients_not_asked_for_are_none():
    # an undefined gradient in a tuple result comes back as None (it crashed on access)
    x, w, b, g = tp.randn(3, 8), tp.randn(8), tp.randn(8), tp.randn(3, 8)
    _, m, r = tp.native_layer_norm(x, [8], w, b, 1e-5)
    gx, gw, gb = tp.native_layer_norm_backward(g, x, [8], m, r, w, False, True, False)
    assert gx is None and gb is None and tuple(gw.shape) == (8,)
    xt = torch.tensor(x.numpy())
    _, mt, rt = torch.ops.aten.native_layer_norm(xt, [8], torch.tensor(w.numpy()), None, 1e-5)
    ref = torch.ops.aten.native_layer_norm_backward(torch.tensor(g.numpy()), xt, [8], mt, rt,
                                                    torch.tensor(w.numpy()), None, [False, True, False])
    assert ref[0] is None and ref[2] is None
    np.testing.assert_allclose(gw.numpy(), ref[1].numpy(), rtol=1e-5, atol=1e-5)
