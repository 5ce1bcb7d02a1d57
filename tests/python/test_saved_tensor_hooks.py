"""tp.autograd.graph.saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks,
against PyTorch running the same code."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _t(lib, data, requires_grad=True):
    return lib.from_numpy(np.asarray(data, dtype=np.float64)).requires_grad_(requires_grad)


def _np(t):
    return np.asarray(t.detach().tolist())


def _square(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x
    return Square


def _run_logged(lib, build):
    calls = []

    def pack(t):
        calls.append(("pack", tuple(t.shape)))
        return t

    def unpack(t):
        calls.append("unpack")
        return t
    x = _t(lib, [0.5, 1.5, -1.0])
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = build(lib, x)
    after_forward = list(calls)
    y.sum().backward()
    return after_forward, calls, _np(x.grad)


@pytest.mark.parametrize("build", [
    lambda lib, x: x.exp() * x,           # a saved output and saved inputs
    lambda lib, x: lib.tanh(x).sum(0),     # a saved output
    lambda lib, x: _square(lib).apply(x),  # a custom Function's save_for_backward
])
def test_pack_at_save_unpack_at_backward(build):
    ours, ref = _run_logged(tp, build), _run_logged(torch, build)
    assert ours[0] == ref[0]
    assert ours[1] == ref[1]
    np.testing.assert_allclose(ours[2], ref[2])


def test_unpacked_value_is_what_backward_uses():
    def run(lib):
        x = _t(lib, [1.0, 2.0])
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 0):
            y = x.exp()
        y.sum().backward()
        return _np(x.grad)
    np.testing.assert_array_equal(run(tp), run(torch))


def test_hooks_skip_the_version_check_as_in_pytorch():
    def run(lib):
        x = _t(lib, [1.0, 2.0])
        a = x * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = a * a
        with lib.no_grad():
            a.add_(1)
        y.sum().backward()
        return _np(x.grad)
    np.testing.assert_array_equal(run(tp), run(torch))


def test_packed_copy_keeps_history_for_create_graph():
    def run(lib):
        x = _t(lib, [0.3, -0.7])
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = (x * 1).exp() * x
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return _np(g), _np(gg)
    for a, b in zip(run(tp), run(torch)):
        np.testing.assert_allclose(a, b)


def test_nested_hooks_innermost_wins():
    for lib in (tp, torch):
        log = []
        x = _t(lib, [1.0])
        with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t):
            with lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t,
                                                        lambda t: t):
                y = x.exp()
            z = x.sin()
        (y + z).backward()
        assert log == ["inner", "outer"]


def test_unpack_must_return_a_tensor():
    errors = []
    for lib in (tp, torch):
        x = _t(lib, [1.0])
        with lib.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda t: t):
            y = x * x
        with pytest.raises(TypeError) as e:
            y.backward()
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_save_on_cpu():
    def run(lib):
        x = _t(lib, [0.5, 2.0])
        with lib.autograd.graph.save_on_cpu():
            y = (x * x).sin()
        y.sum().backward()
        return _np(x.grad)
    np.testing.assert_allclose(run(tp), run(torch))


def test_disable_saved_tensors_hooks():
    for lib in (tp, torch):
        g = lib.autograd.graph
        with g.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again after exit
            pass
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with g.disable_saved_tensors_hooks("no hooks here"):
                    pass


def test_packed_objects_are_released_with_the_graph():
    import weakref

    class Box:
        pass
    refs = []

    def pack(t):
        b = Box()
        refs.append(weakref.ref(b))
        return b
    x = _t(tp, [1.0])
    with tp.autograd.graph.saved_tensors_hooks(pack, lambda b: x):
        y = x.exp()
    assert len(refs) == 1 and refs[0]() is not None
    del y
    assert refs[0]() is None
