"""The autograd engine's behaviour against PyTorch: graph recording, backward/grad, hooks,
grad modes, saved-tensor checks, views and in-place writes, errors, threads, reentrancy."""
import threading

import numpy as np
import pytest
import torch

import tensorplay as tp

LIBS = [torch, tp]


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist(), dtype=np.float64)


def _same(a, b):
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-7)


def both(fn):
    """Runs fn(lib) for torch and tensorplay and checks their results agree."""
    r_torch, r_tp = fn(torch), fn(tp)
    if not isinstance(r_torch, (list, tuple)):
        r_torch, r_tp = [r_torch], [r_tp]
    assert len(r_torch) == len(r_tp)
    for a, b in zip(r_torch, r_tp):
        if isinstance(a, torch.Tensor) or a is None:
            _same(a, b)
        else:
            assert a == b, (a, b)


def leaf(lib, values):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


# ------------------------------------------------------------------ recording
def test_requires_grad_propagation_and_leaves():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        c = lib.tensor([3.0, 4.0], dtype=lib.float64)
        y = x * c
        z = c * 2
        return [y.requires_grad, z.requires_grad, x.is_leaf, y.is_leaf, z.is_leaf,
                y.grad_fn.name(), x.grad_fn is None, z.grad_fn is None]
    both(f)


def test_next_functions_and_accumulate_grad():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0])
        y = (x * 2).sum()
        mul = y.grad_fn.next_functions[0][0]
        assert mul.name() == 'MulBackward0'
        acc = mul.next_functions[0][0]
        assert acc.name().endswith('::autograd::AccumulateGrad')
        assert acc.variable.data_ptr() == x.data_ptr()
        assert mul.next_functions[1] == (None, 0)
        assert isinstance(y.grad_fn.metadata, dict)


def test_backward_accumulates_and_retain_graph():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    both(f)


def test_second_backward_through_freed_graph_raises():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward()
        with pytest.raises(RuntimeError, match='backward through the graph a second time'):
            y.backward()


def test_implicit_gradient_only_for_scalars():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0])
        with pytest.raises(RuntimeError, match='grad can be implicitly created only for scalar outputs'):
            (x * 2).backward()
        with pytest.raises(RuntimeError, match='does not require grad and does not have a grad_fn'):
            lib.ones(2).sum().backward()


def test_backward_with_gradient_and_inputs():
    def f(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        y = x * w
        y.backward(lib.tensor([1.0, -1.0], dtype=lib.float64), inputs=[w])
        return [x.grad, w.grad]
    both(f)


def test_autograd_grad_unused_and_materialize():
    def f(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        y = (x * 3).sum()
        with pytest.raises(RuntimeError, match='appears to not have been used in the graph'):
            lib.autograd.grad(y, [x, w], retain_graph=True)
        gx, gw = lib.autograd.grad(y, [x, w], retain_graph=True, allow_unused=True)
        mx, mw = lib.autograd.grad(y, [x, w], materialize_grads=True)
        return [gx, gw, mx, mw, x.grad]
    both(f)


def test_double_backward():
    def f(lib):
        x = leaf(lib, [0.5, -1.5, 2.0])
        y = (x.sin() * x * x).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        g2, = lib.autograd.grad((g * g).sum(), x, create_graph=True)
        g3, = lib.autograd.grad(g2.sum(), x)
        return [g, g2, g3]
    both(f)


def test_non_leaf_inputs_of_grad_and_backward():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * 3
        y = (h * h).sum()
        gh, = lib.autograd.grad(y, h, retain_graph=True)
        y.backward(inputs=[h])
        return [gh, h.grad, x.grad]
    both(f)


# ------------------------------------------------------------------ hooks
def test_tensor_hooks_change_the_gradient_and_remove():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * 2
        handle = h.register_hook(lambda g: g * 10)
        seen = []
        x.register_hook(lambda g: seen.append(g.sum().item()))
        (h * h).sum().backward(retain_graph=True)
        first = x.grad.clone()
        handle.remove()
        x.grad = None
        (h * h).sum().backward()
        return [first, x.grad, lib.tensor(seen, dtype=lib.float64)]
    both(f)


def test_retain_grad_and_post_accumulate_hook():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * x
        h.retain_grad()
        calls = []
        x.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.sum().item()))
        (h * 3).sum().backward()
        return [h.grad, h.retains_grad, lib.tensor(calls, dtype=lib.float64)]
    both(f)


def test_node_hooks():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        log = []
        y.grad_fn.register_prehook(lambda go: (go[0] * 3,))
        y.grad_fn.register_hook(lambda gi, go: log.append(len(gi)))
        y.sum().backward()
        return [x.grad, len(log)]
    both(f)


def test_hook_on_tensor_without_grad_raises():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(2).register_hook(lambda g: g)


# ------------------------------------------------------------------ grad modes
def test_no_grad_enable_grad_set_grad_enabled():
    for lib in LIBS:
        x = leaf(lib, [1.0])
        with lib.no_grad():
            assert not (x * 2).requires_grad
            with lib.enable_grad():
                assert (x * 2).requires_grad
        assert lib.is_grad_enabled()

        @lib.no_grad()
        def g():
            return x * 2
        assert not g().requires_grad
        with lib.set_grad_enabled(False):
            assert not lib.is_grad_enabled()
        assert lib.is_grad_enabled()
        lib.set_grad_enabled(False)
        assert not lib.is_grad_enabled()
        lib.set_grad_enabled(True)


def test_grad_mode_is_thread_local():
    def worker(out):
        out.append(tp.is_grad_enabled())
    with tp.no_grad():
        out = []
        t = threading.Thread(target=worker, args=(out,))
        t.start()
        t.join()
    assert out == [True]


def test_inference_mode():
    for lib in LIBS:
        x = leaf(lib, [1.0])
        with lib.inference_mode():
            y = x * 2
            z = lib.ones(2)
            assert lib.is_inference_mode_enabled() and not lib.is_grad_enabled()
        assert not y.requires_grad and lib.is_grad_enabled()
        assert z.is_inference() and z[0:1].is_inference() and not (z + 1).is_inference()
        assert not x.is_inference()
        with pytest.raises(RuntimeError, match='Inplace update to inference tensor outside InferenceMode'):
            z.add_(1)
        with pytest.raises(RuntimeError, match='Setting requires_grad=True on inference tensor'):
            z.requires_grad_()
        with pytest.raises(RuntimeError, match='Inference tensors cannot be saved for backward'):
            lib.ones(2, requires_grad=True) * z
        with lib.inference_mode():
            z.add_(1)  # fine inside the mode

        @lib.inference_mode()
        def f():
            return lib.ones(1)
        assert f().is_inference()


# ------------------------------------------------------------------ saved tensors, in place
def test_modified_saved_tensor_raises():
    for lib in LIBS:
        a = leaf(lib, [1.0, 2.0])
        b = a * 2
        c = b * b
        b.add_(1)
        with pytest.raises(RuntimeError, match='modified by an inplace operation'):
            c.sum().backward()


def test_inplace_on_leaf_and_views_of_leaves_raise():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0, 3.0])
        with pytest.raises(RuntimeError, match='leaf Variable that requires grad'):
            x.mul_(2)
        with pytest.raises(RuntimeError, match='view of a leaf Variable'):
            x[0:2].mul_(2)
        with lib.no_grad():
            x.mul_(2)  # fine without grad mode
        assert x.is_leaf


def test_inplace_on_views_rewrites_history():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0, 4.0])
        y = x * 2
        y[1:3].mul_(x[0:2])
        z = x.clone()
        u = z[:, None][1:]
        z[0] = 10.0
        (y.sum() + (u * u).sum()).backward()
        return [x.grad, y.grad_fn.name().rsplit('::', 1)[-1]]
    both(f)


def test_setitem_into_plain_tensor_records():
    def f(lib):
        w = leaf(lib, [5.0, 6.0])
        x = lib.zeros(4, dtype=lib.float64)
        x[1:3] = w * 3
        (x * lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64)).sum().backward()
        return [w.grad, x.requires_grad, x.is_leaf]
    both(f)


def test_out_with_requires_grad_raises():
    for lib in LIBS:
        x = leaf(lib, [1.0])
        with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
            lib.add(x, x, out=lib.empty(1, dtype=lib.float64))


def test_grad_setter_checks_and_detach():
    for lib in LIBS:
        x = leaf(lib, [1.0, 2.0])
        with pytest.raises(RuntimeError, match='same size'):
            x.grad = lib.ones(3, dtype=lib.float64)
        with pytest.raises(RuntimeError, match='dtype'):
            x.grad = lib.ones(2)
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.is_leaf
        y.detach_()
        assert not y.requires_grad and y.grad_fn is None
        with pytest.raises(RuntimeError, match='only change requires_grad flags of leaf'):
            (x * 2).requires_grad = False


def test_only_floating_tensors_require_grad():
    for lib in LIBS:
        with pytest.raises(RuntimeError, match='floating point'):
            lib.ones(2, dtype=lib.int64).requires_grad_()


# ------------------------------------------------------------------ anomaly mode
def test_detect_anomaly_reports_nan():
    for lib in LIBS:
        x = leaf(lib, [0.0, 1.0])
        with lib.autograd.detect_anomaly():
            y = (x.sqrt() * 0).sum()  # sqrt's gradient at 0 is inf * 0 = nan
            with pytest.raises(RuntimeError, match='returned nan values'):
                y.backward()


# ------------------------------------------------------------------ threads, reentrancy
def test_independent_graphs_from_threads():
    errors, results = [], {}

    def worker(i):
        try:
            x = tp.tensor([float(i), 1.0], requires_grad=True)
            for _ in range(50):
                x.grad = None
                (x * x * i).sum().backward()
            results[i] = x.grad.tolist()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {i: [2.0 * i * i, 2.0 * i] for i in range(4)}


def test_reentrant_backward_inside_hook():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0])
        inner = []

        def hook(g):
            with lib.enable_grad():  # hooks run in the backward's grad mode (off)
                (w * w).sum().backward()  # a backward of its own, inside this one
            inner.append(w.grad.clone())
            return g
        y = x * 2
        y.register_hook(hook)
        y.sum().backward()
        return [x.grad, inner[0]]
    both(f)


# ------------------------------------------------------------------ gradcheck
def test_gradcheck_and_gradgradcheck():
    x = tp.tensor([[0.3, -0.7], [1.1, 0.2]], dtype=tp.float64, requires_grad=True)
    w = tp.tensor([0.5, -1.0], dtype=tp.float64, requires_grad=True)
    fn = lambda a, b: (a * b).tanh().sum(0)  # noqa: E731
    assert tp.autograd.gradcheck(fn, (x, w))
    assert tp.autograd.gradcheck(fn, (x, w), fast_mode=True)
    assert tp.autograd.gradgradcheck(fn, (x, w))


def test_gradcheck_catches_a_wrong_gradient():
    x = tp.tensor([0.3, 0.9], dtype=tp.float64, requires_grad=True)

    def wrong(a):
        y = a * 2
        if y.requires_grad:  # gradcheck's finite differences run without grad
            y.register_hook(lambda g: g * 1.5)  # corrupts the gradient
        return y
    with pytest.raises(RuntimeError, match='Jacobian mismatch'):
        tp.autograd.gradcheck(wrong, (x,))
    assert not tp.autograd.gradcheck(wrong, (x,), raise_exception=False)


@pytest.mark.parametrize("case", ["transposed_leaf", "linear_weight", "channels_last", "overlapping",
                                  "mm_column_major_mat1", "accumulated", "create_graph"])
def test_leaf_gradient_keeps_the_leaf_layout(case):
    # Note [Gradient layout]: .grad has the leaf's strides (contiguous for overlapping leaves)
    def run(lib):
        base = lib.arange(24, dtype=lib.float32).reshape(4, 6) / 10
        if case == "transposed_leaf":
            p = base.t().requires_grad_()
            (p * p).sum().backward()
        elif case == "linear_weight":
            p = base.clone().requires_grad_()
            lib.nn.functional.linear(lib.ones(5, 6), p).pow(2).sum().backward()
        elif case == "channels_last":
            p = base.reshape(1, 4, 2, 3).contiguous(memory_format=lib.channels_last).requires_grad_()
            (p.sin() * lib.ones(1, 4, 2, 3)).sum().backward()
        elif case == "overlapping":
            p = base[0].expand(3, 6).requires_grad_()
            (p * lib.arange(18.).reshape(3, 6)).sum().backward()
        elif case == "mm_column_major_mat1":
            p = base.t().requires_grad_()
            lib.mm(p, lib.ones(4, 2)).pow(2).sum().backward()
        elif case == "accumulated":
            p = base.t().requires_grad_()
            (p * 2).sum().backward()
            (p @ lib.ones(4, 2)).sum().backward()
        else:
            p = base.t().requires_grad_()
            (g,) = lib.autograd.grad(lib.mm(lib.ones(2, 6), p).pow(2).sum(), p, create_graph=True)
            p.grad = None
            g.sum().backward()
        return p.grad
    a, b = run(torch), run(tp)
    assert tuple(b.stride()) == tuple(a.stride())
    np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)


def test_accumulate_grad_post_hook_runs_after_accumulation():
    # as PyTorch: an AccumulateGrad node's post hook gets no grad_inputs and the incoming
    # gradient, after .grad was written
    for lib in (tp, torch):
        x = lib.ones(3, requires_grad=True)
        acc = x.view_as(x).grad_fn.next_functions[0][0]
        seen = []
        acc.register_prehook(lambda go: seen.append('pre'))
        acc.register_hook(lambda gi, go: seen.append(('post', len(gi), go[0].tolist(),
                                                      x.grad is not None)))
        (x * 2).sum().backward()
        assert seen == ['pre', ('post', 0, [2.0, 2.0, 2.0], True)], (lib.__name__, seen)
