"""GradScaler (python/tensorplay/amp/grad_scaler.py) against torch.amp.GradScaler("cpu"):
the same training runs (skipped steps, backoff, growth), the per-optimizer stage errors,
new_scale checks, state_dict / pickling, disabled pass-through, nested scale(); GPU tests
(skipped without one) for device="cuda" with float32 and float16 gradients."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay.amp.grad_scaler import GradScaler, OptState
from tensorplay.cuda.amp import GradScaler as CudaGradScaler

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")

RNG = np.random.default_rng(0)
W1, B1 = RNG.standard_normal((16, 8)).astype(np.float32) * 0.3, RNG.standard_normal(16).astype(np.float32) * 0.1
W2, B2 = RNG.standard_normal((1, 16)).astype(np.float32) * 0.3, RNG.standard_normal(1).astype(np.float32) * 0.1
X = RNG.standard_normal((20, 4, 8)).astype(np.float32)
Y = RNG.standard_normal((20, 4, 1)).astype(np.float32)


def _model(lib, device="cpu"):
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.Tanh(), lib.nn.Linear(16, 1))
    with lib.no_grad():
        for p, v in zip(model.parameters(), (W1, B1, W2, B2)):
            p.copy_(lib.tensor(v))
    return model.to(device)


def _train(lib, opt_cls, opt_kwargs, bad_steps, scaler_kwargs, unscale_first=False, device="cpu"):
    """Per step: the parameters, the scale, the growth tracker and step()'s return value;
    ``bad_steps`` maps a step to the value (inf/NaN) planted in a gradient after backward."""
    model = _model(lib, device)
    opt = opt_cls(model.parameters(), **opt_kwargs)
    scaler = (lib.amp.GradScaler if lib is torch else GradScaler)(device, **scaler_kwargs)
    history = []
    for k in range(len(X)):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(lib.tensor(X[k], device=device)), lib.tensor(Y[k], device=device))
        scaler.scale(loss).backward()
        if k in bad_steps:
            with lib.no_grad():
                model[0].weight.grad[3, 2] = bad_steps[k]
        if unscale_first:
            scaler.unscale_(opt)
        ret = scaler.step(opt)
        scaler.update()
        history.append(([p.detach().cpu().numpy().copy() for p in model.parameters()], scaler.get_scale(),
                         scaler.state_dict()["_growth_tracker"], ret))
    return history


OPTIMIZERS = [
    (torch.optim.SGD, tp.optim.SGD, dict(lr=0.05, momentum=0.9)),
    (torch.optim.Adam, tp.optim.Adam, dict(lr=0.01)),
    (torch.optim.Adam, tp.optim.Adam, dict(lr=0.01, fused=True)),
    (torch.optim.AdamW, tp.optim.AdamW, dict(lr=0.01, weight_decay=0.1, foreach=False)),
]


@pytest.mark.parametrize("unscale_first", [False, True])
@pytest.mark.parametrize("torch_opt,tp_opt,kwargs", OPTIMIZERS)
def test_training_matches_torch(torch_opt, tp_opt, kwargs, unscale_first):
    bad = {2: float("inf"), 3: float("nan"), 11: -float("inf")}
    scaler_kwargs = dict(init_scale=2.0**12, growth_interval=3)
    want = _train(torch, torch_opt, kwargs, bad, scaler_kwargs, unscale_first)
    got = _train(tp, tp_opt, kwargs, bad, scaler_kwargs, unscale_first)
    for k, ((wp, ws, wt, _), (gp, gs, gt, _)) in enumerate(zip(want, got)):
        assert (gs, gt) == (ws, wt), f"step {k}"
        for a, b in zip(gp, wp):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"step {k}")
    scales = [s for _, s, _, _ in got]
    # the schedule exercised: backoff at each bad step, growth after 3 clean steps
    assert scales[:7] == [2.0**12, 2.0**12, 2.0**11, 2.0**10, 2.0**10, 2.0**10, 2.0**11]
    assert scales[11] == scales[10] / 2
    # skipped steps leave the parameters unchanged
    for k in bad:
        for a, b in zip(got[k][0], got[k - 1][0]):
            np.testing.assert_array_equal(a, b)


def test_step_returns_optimizer_result_or_none():
    got = _train(tp, tp.optim.SGD, dict(lr=0.05), {1: float("inf")}, {})
    assert got[1][3] is None
    model = _model(tp)
    opt = tp.optim.LBFGS(model.parameters())
    scaler = GradScaler("cpu")
    scaler.scale(model(tp.tensor(X[0])).sum()).backward()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)


def test_two_optimizers_share_the_scaler():
    """An inf in one optimizer's gradients skips only that optimizer's step; the update
    backs off once for the iteration."""
    got = []
    for lib, cls in ((torch, torch.amp.GradScaler), (tp, GradScaler)):
        model = _model(lib)
        opt_a = lib.optim.SGD(model[0].parameters(), lr=0.1)
        opt_b = lib.optim.Adam(model[2].parameters(), lr=0.01)
        scaler = cls("cpu", init_scale=2.0**8, growth_interval=2)
        trace = []
        for k in range(6):
            opt_a.zero_grad()
            opt_b.zero_grad()
            loss = lib.nn.functional.mse_loss(model(lib.tensor(X[k])), lib.tensor(Y[k]))
            scaler.scale(loss).backward()
            if k in (1, 4):
                with lib.no_grad():
                    model[2].bias.grad[0] = float("inf")
            scaler.step(opt_a)
            scaler.step(opt_b)
            scaler.update()
            trace.append((scaler.get_scale(), [p.detach().numpy().copy() for p in model.parameters()]))
        got.append(trace)
    for (ws, wp), (gs, gp) in zip(*got):
        assert gs == ws
        for a, b in zip(gp, wp):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert [s for s, _ in got[1]] == [2.0**8, 2.0**7, 2.0**7, 2.0**8, 2.0**7, 2.0**7]
    assert not np.array_equal(got[1][1][1][0], got[1][0][1][0])  # opt_a stepped at step 1
    np.testing.assert_array_equal(got[1][1][1][2], got[1][0][1][2])  # opt_b did not


def test_odd_factors_round_as_torch():
    """Backoff/growth products in float64 rounded to float32, growth refused on overflow."""
    for lib, cls in ((torch, torch.amp.GradScaler), (tp, GradScaler)):
        results = []
        for init, growth, backoff, bad in ((3.0, 1.1, 0.3, False), (3.0, 1.7, 0.3, True),
                                           (3.4028234663852886e38, 1.0000001, 0.5, False)):
            scaler = cls("cpu", init_scale=init, growth_factor=growth, backoff_factor=backoff, growth_interval=1)
            p = lib.nn.Parameter(lib.ones(3))
            opt = lib.optim.SGD([p], lr=0.1)
            scaler.scale(p.sum()).backward()
            if bad:
                p.grad[0] = float("nan")
            scaler.step(opt)
            scaler.update()
            results.append((scaler.get_scale(), scaler.state_dict()["_growth_tracker"]))
        if lib is torch:
            want = results
    assert results == want
    assert results[2] == (3.4028234663852886e38, 0)


def _one_backward(device="cpu", dtype=tp.float32, **kwargs):
    p = tp.nn.Parameter(tp.ones(4, dtype=dtype, device=device))
    opt = tp.optim.SGD([p], lr=0.1, **kwargs)
    scaler = GradScaler(device)
    scaler.scale((p * 2).sum()).backward()
    return p, opt, scaler


def test_stage_errors():
    p, opt, scaler = _one_backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this optimizer since "
                                           r"the last update\(\)\.$"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\)\.$"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the last update\(\)\.$"):
        scaler.step(opt)
    scaler.update()
    assert scaler._per_optimizer_states[id(opt)]["stage"] is OptState.READY


def test_step_without_unscale_unscales():
    p, opt, scaler = _one_backward()
    assert p.grad.tolist() == [2.0**17] * 4
    scaler.step(opt)
    assert p.grad.tolist() == [2.0] * 4
    assert p.tolist() == pytest.approx([0.8] * 4)
    assert scaler._per_optimizer_states[id(opt)]["stage"] is OptState.STEPPED


def test_errors_before_scale_and_without_grads():
    scaler = GradScaler("cpu")
    opt = tp.optim.SGD([tp.nn.Parameter(tp.ones(2))], lr=0.1)
    fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
    for call, name in ((lambda: scaler.unscale_(opt), "unscale_"), (lambda: scaler.step(opt), "step"),
                       (scaler.update, "update")):
        with pytest.raises(AssertionError) as e:
            call()
        assert str(e.value) == f"Attempted {name} but _scale is None.  " + fix
    scaler.scale(tp.ones(()))
    with pytest.raises(AssertionError, match="^No inf checks were recorded for this optimizer.$"):
        scaler.step(opt)
    with pytest.raises(AssertionError, match="^No inf checks were recorded prior to update.$"):
        scaler.update()
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        GradScaler("cpu", backoff_factor=1.0)


def test_fp16_grads():
    """float16 gradients raise in unscale_ (PyTorch's message); fused optimizers take them,
    unscaled through float32 as torch's kernel (checked with a scale that is no power of 2)."""
    p, opt, scaler = _one_backward(dtype=tp.float16)
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        scaler.unscale_(opt)
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        scaler.step(opt)
    grads = (RNG.standard_normal(300) * 50).astype(np.float16)
    got = []
    for lib, cls in ((torch, torch.amp.GradScaler), (tp, GradScaler)):
        scaler = cls("cpu")
        p = lib.nn.Parameter(lib.zeros(300, dtype=lib.float16))
        opt = lib.optim.SGD([p], lr=1.0, fused=True)
        scaler.scale(p.sum()).backward()
        scaler.update(new_scale=3.0)
        p.grad = lib.tensor(grads)
        scaler.step(opt)
        got.append((p.grad.float().numpy(), p.detach().float().numpy()))
    # torch 2.13's CPU fused SGD leaves most float16 parameters unchanged (its bug): compare
    # the unscaled gradients with torch's, the parameters with the SGD rule
    np.testing.assert_array_equal(got[1][0], got[0][0])
    np.testing.assert_array_equal(got[1][1], -got[1][0])
    assert np.any(got[1][0] != grads * np.float16(1 / 3.0))  # not the float16 product


def test_unscale_numerics_match_torch():
    """Scale 3 (inexact reciprocal), float64/float32/bfloat16 gradients, found_inf per dtype."""
    values = RNG.standard_normal(50)
    for dtype in ("float64", "float32", "bfloat16"):
        results = []
        for lib, cls in ((torch, torch.amp.GradScaler), (tp, GradScaler)):
            dt = getattr(lib, dtype)
            scaler = cls("cpu")
            p = lib.nn.Parameter(lib.zeros(50, dtype=dt))
            q = lib.nn.Parameter(lib.zeros(3, dtype=lib.float32))
            opt = lib.optim.SGD([p, q], lr=1.0)
            scaler.scale(p.sum()).backward()
            scaler.update(new_scale=3.0)
            p.grad = lib.tensor(values, dtype=dt)
            q.grad = lib.tensor([1.0, float("inf"), 2.0])
            scaler.unscale_(opt)
            found = {str(d): v.item() for d, v in scaler._found_inf_per_device(opt).items()}
            results.append((p.grad.double().numpy(), q.grad.numpy(), found))
        np.testing.assert_array_equal(results[1][0], results[0][0])
        np.testing.assert_array_equal(results[1][1], results[0][1])
        assert results[1][2] == results[0][2] == {"cpu": 1.0}
        if dtype == "float64":  # times the float32-rounded inverse, not divided by 3
            assert np.any(results[1][0] != values / 3)


def test_update_new_scale():
    _, _, scaler = _one_backward()
    tracker = scaler._growth_tracker
    tracker.fill_(5)
    scaler.update(new_scale=8.0)
    assert scaler.get_scale() == 8.0 and scaler._get_growth_tracker() == 5
    src = tp.tensor(4.0)
    scaler.update(src)
    src.fill_(1.0)
    assert scaler.get_scale() == 4.0
    with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the broadcast shape \[1\]"):
        scaler.update(tp.tensor([2.0]))  # passes the checks, then fails in copy_ as in PyTorch
    reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
              "torch.FloatTensor with requires_grad=False.")
    for bad in (tp.tensor([1.0, 2.0]), tp.tensor(2.0, requires_grad=True)):
        with pytest.raises(AssertionError) as e:
            scaler.update(bad)
        assert str(e.value) == reason
    with pytest.raises(AttributeError):
        scaler.update(2)  # an int is no float: treated as a tensor, as in PyTorch


def test_state_dict_round_trip_and_pickle():
    got = []
    for lib, cls in ((torch, torch.amp.GradScaler), (tp, GradScaler)):
        hist = _train(lib, lib.optim.SGD, dict(lr=0.05), {}, dict(init_scale=2.0**10, growth_interval=4))
        scaler = cls("cpu", init_scale=2.0**10, growth_interval=4)
        assert scaler.state_dict() == {"scale": 2.0**10, "growth_factor": 2.0, "backoff_factor": 0.5,
                                       "growth_interval": 4, "_growth_tracker": 0}
        got.append(hist[-1][1:3])
    assert got[0] == got[1]

    src = GradScaler("cpu", init_scale=2.0**10, growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
    src.scale(tp.ones(()))
    src._growth_tracker.fill_(5)
    state = src.state_dict()
    assert state == {"scale": 1024.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                     "_growth_tracker": 5}
    dst = GradScaler("cpu")
    dst.load_state_dict(state)
    assert dst.state_dict() == state and dst._scale is None
    dst.scale(tp.ones(()))
    assert dst._scale.dtype == tp.float32 and dst._growth_tracker.dtype == tp.int32
    assert dst._scale.shape == () and dst._growth_tracker.item() == 5
    live = GradScaler("cpu")
    live.scale(tp.ones(()))
    live.load_state_dict(state)
    assert live._scale.item() == 1024.0 and live._growth_tracker.item() == 5
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved "
                                           "from a disabled instance of GradScaler."):
        live.load_state_dict({})

    copy = pickle.loads(pickle.dumps(src))
    assert copy.state_dict() == state and copy._scale is None
    p, opt, scaler = _one_backward()
    scaler.unscale_(opt)
    with pytest.raises(AssertionError, match="may only be pickled at the beginning of an iteration"):
        pickle.dumps(scaler)
    scaler.step(opt)
    scaler.update()
    assert pickle.loads(pickle.dumps(scaler)).get_scale() == 2.0**16


def test_disabled_is_pass_through():
    scaler = GradScaler("cpu", enabled=False, growth_factor=0.5)  # no factor checks when disabled
    p, opt, _ = _one_backward()
    loss = tp.ones(2)
    assert scaler.scale(loss) is loss
    scaler.unscale_(opt)
    assert p.grad.tolist() == [2.0**17] * 4
    assert scaler.step(opt) is None and p.tolist() == pytest.approx([1 - 0.1 * 2.0**17] * 4)
    scaler.step(opt)  # no stage tracking
    scaler.update()
    scaler.load_state_dict({})
    assert (scaler.get_scale(), scaler.state_dict(), scaler.is_enabled(), scaler._get_growth_tracker()) == \
        (1.0, {}, False, 0)
    assert pickle.loads(pickle.dumps(scaler)).is_enabled() is False
    ref = torch.amp.GradScaler("cpu", enabled=False)
    for name in ("get_growth_factor", "get_backoff_factor", "get_growth_interval"):
        with pytest.raises(AttributeError):
            getattr(ref, name)()
        with pytest.raises(AttributeError):
            getattr(scaler, name)()


def test_scale_nested_outputs():
    scaler = GradScaler("cpu", init_scale=4.0)
    a, b = tp.ones(2), tp.full((3,), 2.0, dtype=tp.float64)
    out = scaler.scale([a, (b, [a]), ()])
    assert type(out) is list and type(out[1]) is tuple and type(out[1][1]) is list and out[2] == ()
    assert out[0].tolist() == [4.0, 4.0] and out[1][0].tolist() == [8.0] * 3 and out[1][0].dtype == tp.float64
    assert out[1][1][0].tolist() == [4.0, 4.0]
    lazy = scaler.scale(x for x in (a, b))
    assert not isinstance(lazy, (list, tuple)) and [t.tolist() for t in lazy] == [[4.0, 4.0], [8.0] * 3]
    half = scaler.scale(tp.full((2,), 0.5, dtype=tp.float16))
    assert half.dtype == tp.float16 and half.tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match="^outputs must be a Tensor or an iterable of Tensors$"):
        scaler.scale([a, 3.0])
    fresh = GradScaler("cpu")
    fresh.scale([a])
    assert fresh._scale.device == a.device and fresh.get_scale() == 2.0**16


def test_setters_and_cuda_fallback():
    scaler = GradScaler("cpu")
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(10)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 10)
    assert scaler.get_scale() == 2.0**16 and scaler.is_enabled()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        default = GradScaler()
        alias = CudaGradScaler(init_scale=8.0)
    assert isinstance(alias, GradScaler) and alias._device == "cuda"
    messages = [(x.category, str(x.message)) for x in w]
    assert (FutureWarning, "`tensorplay.cuda.amp.GradScaler(args...)` is deprecated. "
                           "Please use `tensorplay.amp.GradScaler('cuda', args...)` instead.") in messages
    if not HAS_GPU:
        assert not default.is_enabled() and not alias.is_enabled()
        assert messages.count((UserWarning, "tensorplay.cuda.amp.GradScaler is enabled, but CUDA is not "
                                            "available.  Disabling.")) == 2


def test_grad_scaler_kwarg_contract():
    """A custom optimizer whose step takes grad_scaler gets the scaler (with PyTorch's
    FutureWarning) and does its own unscaling."""
    class Custom(tp.optim.SGD):
        _step_supports_amp_scaling = True

        def step(self, closure=None, grad_scaler=None):
            self.seen = grad_scaler
            grad_scaler.unscale_(self)
            return "stepped"

    p = tp.nn.Parameter(tp.ones(2))
    opt = Custom([p], lr=0.1)
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale(p.sum()).backward()
    with pytest.warns(FutureWarning, match="GradScaler is going to stop passing itself"):
        assert scaler.step(opt) == "stepped"
    assert opt.seen is scaler and p.grad.tolist() == [1.0, 1.0]
    scaler.update()
    assert scaler.get_scale() == 4.0


@gpu
@pytest.mark.parametrize("fused", [False, True])
def test_cuda_training_matches_cpu(fused):
    bad = {2: float("inf"), 7: float("nan")}
    kwargs = dict(lr=0.01, fused=fused)
    scaler_kwargs = dict(init_scale=2.0**12, growth_interval=3)
    want = _train(tp, tp.optim.Adam, kwargs, bad, scaler_kwargs, device="cpu")
    got = _train(tp, tp.optim.Adam, kwargs, bad, scaler_kwargs, device="cuda")
    for k, ((wp, ws, wt, _), (gp, gs, gt, _)) in enumerate(zip(want, got)):
        assert (gs, gt) == (ws, wt), f"step {k}"
        for a, b in zip(gp, wp):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=f"step {k}")


@gpu
def test_cuda_state_lives_on_gpu_and_fp16_grads():
    p, opt, scaler = _one_backward("cuda", dtype=tp.float16, fused=True)
    assert scaler._scale.device.type == "cuda" and scaler._growth_tracker.device.type == "cuda"
    assert scaler._scale.dtype == tp.float32 and scaler._growth_tracker.dtype == tp.int32
    scaler.update(new_scale=3.0)
    grads = (RNG.standard_normal(4) * 50).astype(np.float16)
    p.grad = tp.tensor(grads, device="cuda")
    scaler.step(opt)
    scaler.update()
    want = (1.0 - 0.1 * (grads.astype(np.float32) * np.float32(1 / 3.0)).astype(np.float16).astype(np.float32))
    np.testing.assert_allclose(p.detach().cpu().float().numpy(), want, rtol=2e-3)
    assert scaler.get_scale() == 3.0 and scaler._get_growth_tracker() == 1
    p.grad = tp.tensor([1.0, float("inf"), 0.0, 0.0], dtype=tp.float16, device="cuda")
    before = p.detach().cpu().float().numpy()
    assert scaler.step(opt) is None
    scaler.update()
    np.testing.assert_array_equal(p.detach().cpu().float().numpy(), before)
    assert scaler.get_scale() == 1.5 and scaler._get_growth_tracker() == 0
    q, opt16, _ = _one_backward("cuda", dtype=tp.float16)
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        scaler.unscale_(opt16)


@gpu
def test_cuda_scale_mixed_devices():
    scaler = GradScaler("cuda", init_scale=4.0)
    out = scaler.scale([tp.ones(2, device="cuda"), tp.ones(2)])
    assert out[0].device.type == "cuda" and out[1].device.type == "cpu"
    assert out[0].tolist() == out[1].tolist() == [4.0, 4.0]
    p = tp.nn.Parameter(tp.ones(2, device="cuda"))
    opt = tp.optim.SGD([p], lr=0.1)
    scaler.scale(p.sum()).backward()
    scaler.update(new_scale=tp.tensor(2.0, device="cuda"))
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        scaler.update(new_scale=tp.tensor(2.0))
    scaler.step(opt)
    assert p.grad.tolist() == [2.0, 2.0]
