"""tp.utils.checkpoint (checkpoint, reentrant and not; checkpoint_sequential), against
PyTorch running the same code with the same weights and seeds."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

REENTRANT = pytest.mark.parametrize("reentrant", [True, False], ids=["reentrant", "nonreentrant"])


def _np(t):
    return np.asarray(t.detach().tolist())


def _model(lib):
    """Linear-ReLU-Dropout-Linear-Tanh with weights from one NumPy seed (same in both)."""
    rs = np.random.RandomState(0)
    m = lib.nn.Sequential(lib.nn.Linear(6, 12), lib.nn.ReLU(), lib.nn.Dropout(0.5),
                          lib.nn.Linear(12, 4), lib.nn.Tanh())
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.from_numpy(rs.randn(*p.shape).astype(np.float32)))
    return m


def _input(lib):
    x = np.random.RandomState(1).randn(5, 6).astype(np.float32)
    return lib.from_numpy(x).requires_grad_(True)


def _grads(lib, run):
    """Seeds, runs ``run(model, x)``, backprops its sum: (x.grad, first weight's grad)."""
    m, x = _model(lib), _input(lib)
    lib.manual_seed(7)
    run(lib, m, x).sum().backward()
    return _np(x.grad), _np(m[0].weight.grad)


@REENTRANT
def test_dropout_grads_equal_uncheckpointed_and_torch(reentrant):
    def plain(lib, m, x):
        return m(x)

    def ckpt(lib, m, x):
        return lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant)

    ref = _grads(tp, plain)
    got = _grads(tp, ckpt)
    want = _grads(torch, ckpt)
    for r, g, w in zip(ref, got, want):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@REENTRANT
def test_without_preserved_rng_state_the_rerun_draws_new_masks(reentrant):
    def run(lib, m, x):
        return lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant,
                                               preserve_rng_state=False)
    ref = _grads(tp, lambda lib, m, x: m(x))
    got = _grads(tp, run)
    assert not np.allclose(got[1], ref[1])
    np.testing.assert_allclose(got[1], _grads(torch, run)[1], rtol=1e-4, atol=1e-5)


def _block(x):
    h = x.sin()
    return (h.cos() * h.exp()).tanh()


@pytest.mark.parametrize("mode", ["plain", "reentrant", "nonreentrant"])
def test_saved_tensors_are_not_kept(mode):
    """An outer saved_tensors_hooks sees every tensor the graph keeps: without
    checkpointing the block's intermediates, with it only the block's input."""
    def count(lib):
        packed = []
        x = lib.ones(4, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                    lambda t: t):
            if mode == "plain":
                y = _block(x)
            else:
                y = lib.utils.checkpoint.checkpoint(_block, x,
                                                    use_reentrant=mode == "reentrant")
        y.sum().backward()
        return len(packed), _np(x.grad)
    (n, g), (n_ref, g_ref) = count(tp), count(torch)
    assert n == n_ref
    assert (n == 1) == (mode != "plain")
    np.testing.assert_allclose(g, g_ref, rtol=1e-5)


def test_nested_checkpoints_and_autograd_grad():
    def run(lib):
        ck = lib.utils.checkpoint.checkpoint

        def inner(x):
            return (x * 3).sin()

        def outer(x):
            return ck(inner, x.tanh(), use_reentrant=False).exp() * x

        x = lib.from_numpy(np.linspace(-1, 1, 6)).requires_grad_(True)
        y = ck(outer, x, use_reentrant=False).sum()
        g, = lib.autograd.grad(y, x)
        return _np(g), _np(y)
    for a, b in zip(run(tp), run(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_kwargs_non_tensor_outputs_and_retain_graph():
    def fn(x, k, *, scale=1.0):
        return x.sin() * scale * k, k, None

    def run(lib):
        ck = lib.utils.checkpoint.checkpoint
        x = lib.from_numpy(np.arange(4.0)).requires_grad_(True)
        out, k, none = ck(fn, x, 2, scale=3.0, use_reentrant=False)
        assert (k, none) == (2, None)
        out.sum().backward(retain_graph=True)
        out.sum().backward()                # a second rerun fills the holders again
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: scale$"):
            ck(fn, x, 2, scale=3.0, use_reentrant=True)
        out, k, _ = ck(fn, x, 2, use_reentrant=True)
        out.sum().backward()
        return _np(x.grad)
    np.testing.assert_allclose(run(tp), run(torch), rtol=1e-10)


def test_checkpoint_sequential():
    def run(lib, segments, reentrant):
        m, x = _model(lib), _input(lib)
        lib.manual_seed(3)
        y = lib.utils.checkpoint.checkpoint_sequential(m, segments, x,
                                                       use_reentrant=reentrant)
        y.sum().backward()
        return _np(y), _np(x.grad), _np(m[3].weight.grad)
    for segments, reentrant in [(2, False), (3, True), (5, False)]:
        for a, b in zip(run(tp, segments, reentrant), run(torch, segments, reentrant)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
        tp.utils.checkpoint.checkpoint_sequential([tp.sin], 1, tp.ones(1),
                                                  use_reentrant=False, foo=1)


def _messages(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [str(x.message) for x in w]


def test_use_reentrant_not_passed_warns_and_means_true():
    for lib in (tp, torch):
        x = lib.ones(2, requires_grad=True)
        msgs = _messages(lambda: lib.utils.checkpoint.checkpoint(lib.sin, x))
        assert msgs[0].startswith("torch.utils.checkpoint: the use_reentrant parameter "
                                  "should be passed explicitly.")
        # True: keyword arguments are refused
        with pytest.raises(ValueError, match="Unexpected keyword"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.utils.checkpoint.checkpoint(lambda t, s: t * s, x, s=2)
        msgs = _messages(lambda: lib.utils.checkpoint.checkpoint_sequential([lib.sin], 1, x))
        assert msgs[0].startswith("torch.utils.checkpoint.checkpoint_sequential: the "
                                  "use_reentrant parameter should be passed explicitly.")


def _error(lib, fn):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("torch.utils", "").replace("torch.", "tensorplay.")
    return None


@pytest.mark.parametrize("case", ["context_fn_reentrant", "debug_reentrant", "determinism",
                                  "grad_reentrant", "no_output_grad", "fewer_saved",
                                  "metadata"])
def test_errors_as_pytorch(case):
    def run(lib):
        ck = lib.utils.checkpoint.checkpoint
        x = lib.ones(4, requires_grad=True)
        if case == "context_fn_reentrant":
            ck(lib.sin, x, use_reentrant=True, context_fn=lambda: (None, None))
        elif case == "debug_reentrant":
            ck(lib.sin, x, use_reentrant=True, debug=True)
        elif case == "determinism":
            ck(lib.sin, x, use_reentrant=False, determinism_check="shape")
        elif case == "grad_reentrant":
            lib.autograd.grad(ck(lib.sin, x, use_reentrant=True).sum(), x)
        elif case == "no_output_grad":
            ck(lambda t: t.detach() * 2, x, use_reentrant=True).sum().backward()
        else:
            calls = []

            def changing(t):
                calls.append(1)
                if len(calls) == 1:
                    return t.exp().sin()
                return t.exp() if case == "fewer_saved" else t[:2].exp().sin()
            ck(changing, x, use_reentrant=False).sum().backward()
    got, want = _error(tp, run), _error(torch, run)
    assert want is not None and got is not None
    assert got[0] == want[0]
    assert got[1].split("\nTip:")[0] == want[1].split("\nTip:")[0]


def test_debug_mode_lists_the_ops():
    calls = []

    def changing(t):
        calls.append(1)
        return t.exp().sin() if len(calls) == 1 else t.exp()
    x = tp.ones(3, requires_grad=True)
    y = tp.utils.checkpoint.checkpoint(changing, x, use_reentrant=False, debug=True)
    with pytest.raises(tp.utils.checkpoint.CheckpointError) as e:
        y.sum().backward()
    msg = str(e.value)
    assert "Operations executed during the original forward" in msg
    assert "aten.sin.default" in msg.split("Operations executed during recomputation")[0]


def test_no_grad_and_no_input_requiring_grad():
    for lib in (tp, torch):
        x = lib.ones(3)
        msgs = _messages(lambda: lib.utils.checkpoint.checkpoint(lib.sin, x, use_reentrant=True))
        assert msgs == ["None of the inputs have requires_grad=True. Gradients will be None"]
        with lib.no_grad():
            y = lib.utils.checkpoint.checkpoint(lib.sin, x.requires_grad_(), use_reentrant=False)
        assert not y.requires_grad


@pytest.mark.skipif(not tp.cuda.is_available(), reason="needs a GPU")
@REENTRANT
def test_cuda_dropout_rng_state_restored(reentrant):
    m = _model(tp).cuda()
    x = _input(tp).detach().cuda().requires_grad_(True)
    tp.cuda.manual_seed(5)
    m(x).sum().backward()
    ref = _np(x.grad.cpu()), _np(m[0].weight.grad.cpu())
    x.grad = None
    m.zero_grad()
    tp.cuda.manual_seed(5)
    tp.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant).sum().backward()
    np.testing.assert_allclose(_np(x.grad.cpu()), ref[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(m[0].weight.grad.cpu()), ref[1], rtol=1e-5, atol=1e-6)
