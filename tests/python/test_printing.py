"""Tests for tensorplay._tensor_str: tensor text must match PyTorch's repr.

Each case builds a torch tensor; the expected text is ``repr(torch_tensor)``
with ``torch.`` replaced by ``tensorplay.``.  ``test_repr_matches_torch`` runs
the renderer on a thin adapter around the torch tensor, so it works before
tensorplay's C++ core exists.  ``test_real_tensorplay_repr`` re-runs the same
cases on real tensorplay tensors once ``tensorplay.tensor`` is available.
"""

import contextlib
import importlib.util
import math
import pathlib
import random

import pytest
import torch

_MODULE_PATH = (pathlib.Path(__file__).resolve().parents[2]
                / "python" / "tensorplay" / "_tensor_str.py")
_spec = importlib.util.spec_from_file_location("_tp_tensor_str_under_test", _MODULE_PATH)
ts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ts)


# ---------------------------------------------------------------------------
# Adapter: a torch tensor seen through tensorplay's Tensor interface
# ---------------------------------------------------------------------------

class _Dtype:
    def __init__(self, torch_dtype, prefix):
        self._name = str(torch_dtype).replace("torch.", prefix)
        self.is_floating_point = torch_dtype.is_floating_point

    def __str__(self):
        return self._name


class _Device:
    def __init__(self, text):
        self._text = text
        self.type = text.split(":")[0]

    def __str__(self):
        return self._text


class TorchAdapter:
    """Wraps a torch tensor, exposing only what the renderer may use."""

    def __init__(self, tensor, device=None, dtype_prefix="tensorplay."):
        self._t = tensor
        self.shape = tuple(tensor.shape)
        self.dtype = _Dtype(tensor.dtype, dtype_prefix)
        self.device = _Device(device or str(tensor.device))
        self.requires_grad = tensor.requires_grad
        self.grad_fn = tensor.grad_fn

    def dim(self):
        return self._t.dim()

    def numel(self):
        return self._t.numel()

    def tolist(self):
        return self._t.tolist()


# ---------------------------------------------------------------------------
# Cases: (id, tensor factory, print options, default float dtype)
# ---------------------------------------------------------------------------

def _seeded(fn):
    def make():
        torch.manual_seed(0)
        return fn()
    return make


def _grad(fn):
    def make():
        x = torch.tensor([1.5, -2.25, 3.0], requires_grad=True)
        return fn(x)
    make.history = fn  # rebuilt on a tensorplay leaf by test_real_tensorplay_repr
    return make


nan, inf = math.nan, math.inf
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]

CASES = []
for _dt in DTYPES:
    _n = str(_dt).split(".")[-1]
    CASES += [
        (f"1d-{_n}", lambda d=_dt: torch.tensor([0, 1, 2, 5, 7, 100]).to(d), {}, None),
        (f"2d-{_n}", lambda d=_dt: torch.arange(12).reshape(3, 4).to(d), {}, None),
        (f"0d-{_n}", lambda d=_dt: torch.tensor(3).to(d), {}, None),
        (f"empty-{_n}", lambda d=_dt: torch.tensor([], dtype=d), {}, None),
        (f"empty2d-{_n}", lambda d=_dt: torch.zeros(0, 3, dtype=d), {}, None),
        (f"big-{_n}", lambda d=_dt: (torch.arange(3000) % 127).to(d), {}, None),
        (f"big3d-{_n}", lambda d=_dt: (torch.arange(2 * 30 * 40) % 11).reshape(2, 30, 40).to(d), {}, None),
    ]

CASES += [
    # scalars
    ("0d-frac", lambda: torch.tensor(3.5), {}, None),
    ("0d-negzero", lambda: torch.tensor(-0.0), {}, None),
    ("0d-nan", lambda: torch.tensor(nan), {}, None),
    ("0d-small", lambda: torch.tensor(1e-5), {}, None),
    ("0d-huge", lambda: torch.tensor(3e12), {}, None),
    ("0d-bool", lambda: torch.tensor(False), {}, None),
    # float styles
    ("floats", lambda: torch.tensor([1.5, -2.25, 3.125, 0.0]), {}, None),
    ("neg-ints", lambda: torch.tensor([-1.0, 2.0, -300.0]), {}, None),
    ("zeros", lambda: torch.zeros(4), {}, None),
    ("negzero", lambda: torch.tensor([-0.0, 0.0]), {}, None),
    ("neg-int64", lambda: torch.tensor([-5, 12, -1234567890123]), {}, None),
    ("sci-small", lambda: torch.tensor([1e-5, 1.0, 2.5]), {}, None),
    ("sci-large", lambda: torch.tensor([1e9, 1.5]), {}, None),
    ("sci-ratio", lambda: torch.tensor([0.5, 1000.5]), {}, None),
    ("sci-int-ratio", lambda: torch.tensor([1.0, 2000.0]), {}, None),
    ("int-ratio-ok", lambda: torch.tensor([1.0, 1000.0]), {}, None),
    ("sci-tiny", lambda: torch.tensor([1e-10, -3e-12]), {}, None),
    ("sci-f64", lambda: torch.tensor([1e-300, 1e300], dtype=torch.float64), {}, None),
    ("sci-2d", _seeded(lambda: torch.randn(3, 4) * torch.tensor([1e-6, 1.0, 1e3, 1e6])), {}, None),
    # nan / inf
    ("nan-inf-only", lambda: torch.tensor([nan, inf, -inf]), {}, None),
    ("nan-int-mix", lambda: torch.tensor([1.0, nan, -inf, 20.0]), {}, None),
    ("nan-frac-mix", lambda: torch.tensor([1.5, nan, -inf]), {}, None),
    ("nan-sci-mix", lambda: torch.tensor([1e-5, nan, inf, 0.0]), {}, None),
    ("nan-2d", lambda: torch.tensor([[nan, 1.25], [inf, -3.5]]), {}, None),
    ("nan-zero", lambda: torch.tensor([0.0, nan]), {}, None),
    ("nan-f16", lambda: torch.tensor([nan, 1.5, -inf], dtype=torch.float16), {}, None),
    # multi-dim and summarisation
    ("3d", _seeded(lambda: torch.randn(2, 3, 4)), {}, None),
    ("4d", _seeded(lambda: torch.randn(2, 2, 2, 3)), {}, None),
    ("big-1d-float", lambda: torch.arange(2000) / 7, {}, None),
    ("big-2d", _seeded(lambda: torch.randn(50, 50)), {}, None),
    ("big-2d-wide", _seeded(lambda: torch.randn(3, 400)), {}, None),
    ("big-3d", _seeded(lambda: torch.randn(10, 20, 30)), {}, None),
    ("big-4d", _seeded(lambda: torch.randn(5, 5, 5, 10)), {}, None),
    ("big-sci", _seeded(lambda: torch.randn(40, 40) * 1e-6), {}, None),
    ("big-nan", lambda: torch.cat([torch.full((1500,), nan), torch.arange(5.0)]), {}, None),
    ("empty-3d-f16", lambda: torch.zeros(2, 0, 3, dtype=torch.float16), {}, None),
    # line wrapping
    ("wrap-1d", _seeded(lambda: torch.randn(30)), {}, None),
    ("wrap-int", lambda: torch.arange(100), {}, None),
    ("wrap-2d", _seeded(lambda: torch.randn(2, 25)), {}, None),
    ("wrap-3d", _seeded(lambda: torch.randn(2, 2, 20) * 1000), {}, None),
    ("wrap-dtype-suffix", lambda: torch.arange(17, dtype=torch.int32) * 100, {}, None),
    ("wrap-bool", lambda: torch.arange(40) % 3 == 0, {}, None),
    # autograd
    ("requires-grad", lambda: torch.tensor([1.0, 2.0], requires_grad=True), {}, None),
    ("requires-grad-0d", lambda: torch.tensor(2.5, requires_grad=True), {}, None),
    ("grad-f64", lambda: torch.ones(2, dtype=torch.float64, requires_grad=True), {}, None),
    ("grad-fn-add", _grad(lambda x: x + 1), {}, None),
    ("grad-fn-mul", _grad(lambda x: x * 2), {}, None),
    ("grad-fn-sum", _grad(lambda x: x.sum()), {}, None),
    ("grad-fn-wrap", _grad(lambda x: (x.repeat(4) * 1e3).double()), {}, None),
    ("grad-empty", lambda: torch.zeros(0, 2, requires_grad=True), {}, None),
    # print options
    ("prec-2", _seeded(lambda: torch.randn(3, 3)), {"precision": 2}, None),
    ("prec-8", lambda: torch.tensor([1 / 3, 2 / 3], dtype=torch.float64), {"precision": 8}, None),
    ("prec-0", lambda: torch.tensor([1.25, 2.75]), {"precision": 0}, None),
    ("threshold-5", lambda: torch.arange(10.0), {"threshold": 5}, None),
    ("threshold-5-2d", lambda: torch.arange(64).reshape(8, 8), {"threshold": 5}, None),
    ("edgeitems-1", _seeded(lambda: torch.randn(20, 20, 20)), {"edgeitems": 1}, None),
    ("edgeitems-0-1d", lambda: torch.arange(2000), {"edgeitems": 0}, None),
    ("edgeitems-0-2d", lambda: torch.arange(2000.0).reshape(40, 50), {"edgeitems": 0}, None),
    ("edgeitems-0-small", lambda: torch.arange(5), {"edgeitems": 0}, None),
    ("linewidth-40", _seeded(lambda: torch.randn(3, 12)), {"linewidth": 40}, None),
    ("linewidth-200", _seeded(lambda: torch.randn(3, 30)), {"linewidth": 200}, None),
    ("linewidth-10", lambda: torch.arange(6, dtype=torch.int8), {"linewidth": 10}, None),
    ("profile-full", lambda: torch.arange(1500), {"profile": "full"}, None),
    ("profile-full-2d", lambda: torch.arange(1200.0).reshape(30, 40) / 3, {"profile": "full"}, None),
    ("profile-short", _seeded(lambda: torch.randn(100, 100)), {"profile": "short"}, None),
    ("profile-default", _seeded(lambda: torch.randn(3, 3)), {"profile": "default"}, None),
    ("profile-override", _seeded(lambda: torch.randn(3, 3)), {"profile": "short", "precision": 6}, None),
    ("sci-on", _seeded(lambda: torch.randn(2, 3)), {"sci_mode": True}, None),
    ("sci-on-ints", lambda: torch.tensor([1.0, 2.0, 30.0]), {"sci_mode": True}, None),
    ("sci-off", lambda: torch.tensor([1e-6, 1.0, 1e5]), {"sci_mode": False}, None),
    ("sci-off-int", lambda: torch.tensor([1.0, 1e9]), {"sci_mode": False}, None),
    ("sci-on-int64", lambda: torch.tensor([1, 2]), {"sci_mode": True}, None),
    ("sci-on-zeros", lambda: torch.tensor([0.0, -0.0, nan]), {"sci_mode": True}, None),
    ("sci-on-0d-zero", lambda: torch.tensor(0.0), {"sci_mode": True}, None),
    # default dtype = float64
    ("dflt64-f32", lambda: torch.tensor([1.5, 2.0], dtype=torch.float32), {}, torch.float64),
    ("dflt64-f64", lambda: torch.tensor([1.5, 2.0], dtype=torch.float64), {}, torch.float64),
    ("dflt64-empty-f64", lambda: torch.tensor([], dtype=torch.float64), {}, torch.float64),
    ("dflt64-empty-f32", lambda: torch.tensor([], dtype=torch.float32), {}, torch.float64),
]


@contextlib.contextmanager
def torch_settings(options, default_dtype):
    """Apply print options (and a default dtype) to torch for one case."""
    old_dtype = torch.get_default_dtype()
    if default_dtype is not None:
        torch.set_default_dtype(default_dtype)
    torch.set_printoptions(**options)
    try:
        yield
    finally:
        torch.set_printoptions(profile="default")
        torch.set_default_dtype(old_dtype)


def expected_repr(tensor):
    return repr(tensor).replace("torch.", "tensorplay.")


def _dtype_name(dtype):
    return str(dtype).split(".")[-1]


def adapter_repr(tensor, options, dtype_prefix="tensorplay."):
    """Render ``tensor`` through the adapter under the module's own options."""
    default_name = _dtype_name(torch.get_default_dtype())
    with ts.printoptions(**options):
        return ts.tensor_repr(TorchAdapter(tensor, dtype_prefix=dtype_prefix), default_name)


@pytest.mark.parametrize("prefix", ["tensorplay.", "torch."])
@pytest.mark.parametrize("case_id,make,options,default_dtype", CASES, ids=[c[0] for c in CASES])
def test_repr_matches_torch(case_id, make, options, default_dtype, prefix):
    """With the ``torch.`` prefix the output must equal torch's repr exactly;
    with ``tensorplay.`` it must equal it after the name substitution."""
    tensor = make()
    with torch_settings(options, default_dtype):
        expected = repr(tensor).replace("torch.", prefix)
        actual = adapter_repr(tensor, options, prefix)
    assert actual == expected, f"\nexpected:\n{expected}\nactual:\n{actual}"


def test_suffix_wrap_uses_actual_dtype_name_length():
    """The longer ``tensorplay.`` name can push a suffix onto its own line
    where torch's shorter name still fits (lines never exceed linewidth)."""
    tensor = torch.arange(20, dtype=torch.int16) * 100
    torch_text = repr(tensor)
    assert torch_text.endswith("1900], dtype=torch.int16)")
    assert adapter_repr(tensor, {}, "torch.") == torch_text
    expected = torch_text.replace(", dtype=torch.int16)", ",\n       dtype=tensorplay.int16)")
    assert adapter_repr(tensor, {}) == expected


def _random_case(rng):
    """A random tensor (shape, dtype, value spread, nan/inf) plus print options."""
    shape = [rng.choice([0, 1, 2, 3, 5, 13, 40]) for _ in range(rng.randint(0, 4))]
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    values = torch.randn(shape, generator=gen, dtype=torch.float64)
    values = values * 10 ** rng.uniform(-12, 12) if rng.random() < 0.4 else values
    values = values.round() if rng.random() < 0.3 else values
    if values.numel() and rng.random() < 0.3:
        flat = values.view(-1)
        flat[rng.randrange(flat.numel())] = rng.choice([nan, inf, -inf, 0.0])
    dtype = rng.choice(DTYPES)
    tensor = values.clamp(-100, 100).to(dtype) if not dtype.is_floating_point else values.to(dtype)
    choices = {"precision": [0, 2, 6], "threshold": [0, 10, 100], "edgeitems": [0, 1, 2],
               "linewidth": [1, 30, 120], "sci_mode": [True, False], "profile": ["short", "full"]}
    options = {k: rng.choice(v) for k, v in choices.items() if rng.random() < 0.2}
    return tensor, options


@pytest.mark.parametrize("seed", range(5))
def test_random_tensors_match_torch(seed):
    rng = random.Random(seed)
    for _ in range(100):
        tensor, options = _random_case(rng)
        with torch_settings(options, None):
            expected = repr(tensor)
            actual = adapter_repr(tensor, options, "torch.")
        assert actual == expected, f"{options}\nexpected:\n{expected}\nactual:\n{actual}"


@pytest.mark.parametrize("case_id", ["small", "wrap", "with-dtype", "with-grad"])
def test_device_suffix(case_id, monkeypatch):
    """Non-CPU tensors get ``device='cuda:0'``; torch (CPU-only here) is made to
    print a device suffix by pretending the default device is CUDA."""
    tensor = {
        "small": lambda: torch.tensor([1.0, 2.0]),
        "wrap": lambda: torch.arange(16) * 1000,
        "with-dtype": lambda: torch.tensor([[1, 2], [3, 4]], dtype=torch.int16),
        "with-grad": lambda: torch.ones(3, requires_grad=True) * 2,
    }[case_id]()
    monkeypatch.setattr(torch._C, "_get_default_device", lambda: "cuda")
    expected = expected_repr(tensor).replace("device='cpu'", "device='cuda:0'")
    assert "device='cuda:0'" in expected
    assert ts.tensor_repr(TorchAdapter(tensor, device="cuda:0")) == expected


def test_printoptions_api():
    base = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
    assert ts.get_printoptions() == base
    with ts.printoptions(precision=2, sci_mode=True):
        assert ts.get_printoptions() == dict(base, precision=2, sci_mode=True)
    assert ts.get_printoptions() == base
    try:
        ts.set_printoptions(profile="full")
        assert ts.get_printoptions()["threshold"] == math.inf
        ts.set_printoptions(profile="short")
        assert ts.get_printoptions() == dict(base, precision=2, edgeitems=2)
        ts.set_printoptions(sci_mode=False)
        ts.set_printoptions(precision=3)  # like torch, resets sci_mode to None
        assert ts.get_printoptions() == dict(base, precision=3, edgeitems=2)
        ts.set_printoptions(profile="no-such-profile")  # ignored, as in torch
        assert ts.get_printoptions() == dict(base, precision=3, edgeitems=2)
    finally:
        ts.set_printoptions(profile="default")
    assert ts.get_printoptions() == base


# ---------------------------------------------------------------------------
# Same cases on real tensorplay tensors (skipped until the core is built)
# ---------------------------------------------------------------------------

def _real_tensorplay():
    try:
        import tensorplay
    except ImportError:
        return None
    return tensorplay if hasattr(tensorplay, "tensor") else None


def _to_tensorplay(tp, tensor, make=None):
    dtype = getattr(tp, _dtype_name(tensor.dtype))
    if tensor.grad_fn is not None:  # the same ops on a tensorplay leaf
        return make.history(tp.tensor([1.5, -2.25, 3.0], requires_grad=True))
    result = tp.tensor(tensor.tolist(), dtype=dtype)
    if tensor.numel() == 0 and tuple(result.shape) != tuple(tensor.shape):
        result = result.reshape(tuple(tensor.shape))
    if tensor.requires_grad:
        result.requires_grad_(True)  # after reshape, so the result stays a leaf
    return result


@pytest.mark.parametrize("case_id,make,options,default_dtype", CASES, ids=[c[0] for c in CASES])
def test_real_tensorplay_repr(case_id, make, options, default_dtype):
    tp = _real_tensorplay()
    if tp is None:
        pytest.skip("tensorplay with tensorplay.tensor is not importable yet")
    tensor = make()
    real = _to_tensorplay(tp, tensor, make)
    set_opts = getattr(tp, "set_printoptions", None) or tp._tensor_str.set_printoptions
    old_tp_dtype = tp.get_default_dtype()
    with torch_settings(options, default_dtype):
        expected = expected_repr(tensor)
        if default_dtype is not None:
            tp.set_default_dtype(getattr(tp, _dtype_name(default_dtype)))
        set_opts(**options)
        try:
            actual = repr(real)
        finally:
            set_opts(profile="default")
            tp.set_default_dtype(old_tp_dtype)
    assert actual == expected, f"\nexpected:\n{expected}\nactual:\n{actual}"
