"""autograd.Function against PyTorch: each case runs the same user code on both libraries
and compares values, gradients and errors."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _t(lib, data, requires_grad=False, dtype=None):
    arr = np.asarray(data, dtype=np.float64 if dtype is None else dtype)
    return lib.from_numpy(arr.copy()).requires_grad_(requires_grad)


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist())


def _both(fn):
    """Runs fn(lib) for tp and torch; returns both results."""
    return fn(tp), fn(torch)


def _check(ours, ref):
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref):
            _check(a, b)
    elif isinstance(ref, torch.Tensor):
        assert isinstance(ours, tp.Tensor)
        assert tuple(ours.shape) == tuple(ref.shape)
        assert str(ours.dtype).split('.')[-1] == str(ref.dtype).split('.')[-1]
        np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-6, atol=1e-8)
    else:
        assert ours == ref


def _errors(fn):
    """(type, message) raised by fn(tp) and by fn(torch); both must raise."""
    out = []
    for lib in (tp, torch):
        with pytest.raises(Exception) as e:
            fn(lib)
        out.append((type(e.value), str(e.value).replace("torch", "tensorplay")))
    return out


def square(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad
    return Square


def scaled(lib):
    """Non-tensor input, ctx attribute, two outputs of which one is an int."""
    class Scaled(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.k = k
            ctx.save_for_backward(x, y)
            return x * k + y, 7

        @staticmethod
        def backward(ctx, grad, grad_int):
            assert grad_int is None
            x, y = ctx.saved_tensors
            return grad * ctx.k, None, grad
    return Scaled


def test_square_values_and_grad():
    def run(lib):
        x = _t(lib, [1.0, -2.0, 3.0], True)
        y = square(lib).apply(x)
        y.sum().backward()
        return y, x.grad, y.requires_grad, y.grad_fn.name(), y.is_leaf
    ours, ref = _both(run)
    _check(ours[:3], ref[:3])
    assert ours[3] == "SquareBackward" == ref[3]
    assert ours[4] is False


def test_non_tensor_inputs_outputs_ctx_attributes():
    def run(lib):
        x, y = _t(lib, [1.0, 2.0], True), _t(lib, [3.0, 4.0], True)
        out, seven = scaled(lib).apply(x, 2.5, y)
        (out * out).sum().backward()
        return out, seven, x.grad, y.grad, out.grad_fn.k, out.grad_fn.needs_input_grad
    _check(*_both(run))


def test_needs_input_grad_and_next_functions():
    def run(lib):
        x, y = _t(lib, [1.0], True), _t(lib, [2.0])
        out, _ = scaled(lib).apply(x * 1, 3, y)
        nf = out.grad_fn.next_functions
        return out.grad_fn.needs_input_grad, len(nf), nf[0][0].name(), nf[0][1], nf[1][0]
    ours, ref = _both(run)
    assert ours[0] == ref[0] == (True, False, False)
    assert ours[1] == ref[1] == 2
    assert ours[2] == ref[2] == "MulBackward0"
    assert ours[3] == ref[3] and ours[4] is None and ref[4] is None


def test_ctx_is_grad_fn_and_metadata_and_hooks():
    for lib in (tp, torch):
        seen = {}

        class Id(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen['ctx'] = ctx
                return x * 1

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = _t(lib, [1.0, 2.0], True)
        y = Id.apply(x)
        assert y.grad_fn is seen['ctx']
        y.grad_fn.metadata['k'] = 1
        assert y.grad_fn.metadata == {'k': 1}
        calls = []
        h = y.grad_fn.register_hook(lambda gi, go: calls.append('post'))
        y.grad_fn.register_prehook(lambda go: calls.append('pre'))
        y.register_hook(lambda g: g * 2)
        y.sum().backward()
        assert calls == ['pre', 'post']
        assert _np(x.grad).tolist() == [6.0, 6.0]
        h.remove()


def test_setup_context_style_with_keywords_and_defaults():
    def run(lib):
        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(x, k=3.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, k = inputs
                ctx.k = k
                ctx.save_for_backward(x)

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * ctx.k, None
        x = _t(lib, [1.0, 2.0], True)
        a = Mul.apply(x, k=2.0)
        b = Mul.apply(x)
        (a + b).sum().backward()
        return a, b, x.grad
    _check(*_both(run))


def test_gradient_count_errors_match_pytorch():
    def make(lib, result):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return result(lib, g)
        return F

    cases = [lambda lib, g: (g, None, None, None),  # surplus Nones trimmed: fine
             lambda lib, g: (g, 1, 3),
             lambda lib, g: (g,),
             lambda lib, g: (g, lib.ones(1)),
             lambda lib, g: ("a", None),
             lambda lib, g: (g[:1], None)]
    for i, result in enumerate(cases):
        def run(lib):
            x = _t(lib, [1.0, 2.0], True)
            make(lib, result).apply(x, 2.0).sum().backward()
            return x.grad
        if i == 0:
            _check(*_both(run))
            continue
        (t1, m1), (t2, m2) = _errors(run)
        assert t1 is t2
        assert m1 == m2


def test_mark_dirty_inplace():
    def run(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2
        x = _t(lib, [1.0, 2.0], True)
        y = x.clone()
        z = Double.apply(y)
        name = y.grad_fn.name()
        (z * z).sum().backward()
        return z, x.grad, name, z._version
    _check(*_both(run))


def test_mark_dirty_errors():
    def leaf(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        Double.apply(_t(lib, [1.0], True))

    def not_returned(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        Bad.apply(_t(lib, [1.0], True).clone())
    for fn in (leaf, not_returned):
        (t1, m1), (t2, m2) = _errors(fn)
        assert t1 is t2 and m1 == m2


def test_returning_an_input_gives_an_alias():
    def run(lib):
        class Ident(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 5
        x = _t(lib, [1.0, 2.0], True)
        y = Ident.apply(x)
        same_memory = y.data_ptr() == x.data_ptr()
        y.sum().backward()
        return same_memory, y.grad_fn is not None, x.grad
    _check(*_both(run))


def test_mark_non_differentiable_and_materialize_grads():
    def run(lib, materialize):
        got = []

        class ND(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                idx = x.argmax()
                ctx.mark_non_differentiable(idx)
                return x * 2, idx, x * 3

            @staticmethod
            def backward(ctx, g, g_idx, g3):
                got.extend([g, g_idx, g3])
                return g * 2
        x = _t(lib, [1.0, 5.0, 2.0], True)
        a, idx, c = ND.apply(x)
        a.sum().backward()
        return [a.requires_grad, idx.requires_grad, c.requires_grad, x.grad] + got
    for materialize in (True, False):
        ours, ref = run(tp, materialize), run(torch, materialize)
        assert ours[:3] == ref[:3]
        _check(ours[3], ref[3])
        for a, b in zip(ours[4:], ref[4:]):
            assert (a is None) == (b is None)
            if b is not None:
                _check(a, b)


def test_no_grad_and_inputs_without_grad():
    for lib in (tp, torch):
        S = square(lib)
        x = _t(lib, [2.0], True)
        with lib.no_grad():
            y = S.apply(x)
        assert not y.requires_grad and y.grad_fn is None
        y = S.apply(_t(lib, [2.0]))
        assert not y.requires_grad and y.grad_fn is None


def test_saved_tensor_version_check():
    (t1, m1), (t2, m2) = _errors(lambda lib: _inplace_after_save(lib))
    assert t1 is t2 is RuntimeError
    assert "modified by an inplace operation" in m1 and "SquareBackward" not in m1


def _inplace_after_save(lib):
    x = _t(lib, [1.0, 2.0], True).clone()
    y = square(lib).apply(x)
    with lib.no_grad():
        x.add_(1)
    y.sum().backward()


def test_saved_tensors_freed_after_backward():
    def run(lib):
        x = _t(lib, [1.0], True)
        y = square(lib).apply(x)
        y.backward()
        y.grad_fn.saved_tensors
    (t1, m1), (t2, m2) = _errors(run)
    assert t1 is t2 and m1 == m2


def test_create_graph_double_backward_through_function():
    def run(lib):
        x = _t(lib, [1.5, -2.0], True)
        y = square(lib).apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    _check(*_both(run))


def test_view_and_non_leaf_inputs():
    def run(lib):
        base = _t(lib, [[1.0, 2.0], [3.0, 4.0]], True)
        v = (base * 2)[1]
        y = square(lib).apply(v)
        y.sum().backward()
        w = base.detach().clone().requires_grad_(True)
        z = square(lib).apply(w.t())
        z.sum().backward()
        return y, base.grad, w.grad
    _check(*_both(run))


def test_once_differentiable():
    def run(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g
        x, v = _t(lib, [3.0], True), _t(lib, [2.0], True)
        g, = lib.autograd.grad(Sq.apply(x), x, grad_outputs=v, create_graph=True)
        name = g.grad_fn.name()
        g2 = g.sum()
        return g, name, g2
    ours, ref = _both(run)
    _check(ours[0], ref[0])
    assert ours[1] == ref[1].replace("torch", "tensorplay") == "tensorplay::autograd::Error"
    (t1, m1), (t2, m2) = _errors(lambda lib: run(lib)[2].backward())
    assert t1 is t2 and m1 == m2


def test_gradcheck_through_function():
    S = square(tp)
    x = tp.from_numpy(np.array([0.3, -1.2, 2.0])).requires_grad_(True)
    assert tp.autograd.gradcheck(S.apply, (x,))
    assert tp.autograd.gradgradcheck(S.apply, (x,))
    k = tp.from_numpy(np.array([0.5, 1.0])).requires_grad_(True)
    y = tp.from_numpy(np.array([0.5, 1.0])).requires_grad_(True)
    assert tp.autograd.gradcheck(lambda a, b: scaled(tp).apply(a, 2.0, b)[0], (k, y))


def test_gradcheck_catches_a_wrong_backward():
    class Wrong(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g
    x = tp.from_numpy(np.array([0.3, 2.0])).requires_grad_(True)
    with pytest.raises(Exception):
        tp.autograd.gradcheck(Wrong.apply, (x,))


def test_inplace_and_nested_io_functions():
    class Add1(tp.autograd.function.InplaceFunction):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, g):
            return g
    assert Add1(inplace=True).inplace is True
    x = _t(tp, [1.0], True)
    Add1.apply(x).backward()
    assert _np(x.grad).tolist() == [1.0]

    class Mul(tp.autograd.function.NestedIOFunction):
        def forward_extended(self, a, b):
            self.save_for_backward(a, b)
            return a * b

        def backward_extended(self, g):
            a, b = self.saved_tensors
            return g * b, g * a
    a, b = _t(tp, [2.0], True), _t(tp, [5.0], True)
    Mul()(a, b).backward()
    assert _np(a.grad).tolist() == [5.0] and _np(b.grad).tolist() == [2.0]


def test_legacy_call_and_missing_methods():
    for lib in (tp, torch):
        class NoBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
        x = _t(lib, [1.0], True)
        with pytest.raises(NotImplementedError, match="You must implement either the backward"):
            NoBackward.apply(x).backward()
    (t1, m1), (t2, m2) = _errors(lambda lib: square(lib)()(_t(lib, [1.0], True)))
    assert t1 is t2 and m1 == m2


def test_backward_and_vjp_both_defined():
    def run(lib):
        class Both(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g
        Both.apply(_t(lib, [1.0], True)).backward()
    (t1, m1), (t2, m2) = _errors(run)
    assert t1 is t2 and m1 == m2


def test_save_for_backward_rejects_non_tensors():
    def run(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g
        Bad.apply(_t(lib, [1.0], True))
    (t1, m1), (t2, m2) = _errors(run)
    assert t1 is t2 and m1 == m2


def test_saved_output_keeps_its_history_without_a_cycle():
    def run(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y
        x = _t(lib, [0.5, 1.0], True)
        y = Exp.apply(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    _check(*_both(run))


def test_node_is_freed_with_its_outputs():
    import weakref
    x = _t(tp, [1.0, 2.0], True)
    for backward in (False, True):
        y = square(tp).apply(x)
        ref = weakref.ref(y.grad_fn)
        if backward:
            y.sum().backward()
        del y
        assert ref() is None


def _documented_examples(lib):
    """The Function examples of PyTorch's documentation ("Extending torch.autograd"),
    written against `lib`."""
    class LinearFunction(lib.autograd.Function):
        @staticmethod
        def forward(input, weight, bias):
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def setup_context(ctx, inputs, output):
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight, bias)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class MulConstant(lib.autograd.Function):
        @staticmethod
        def forward(tensor, constant):
            return tensor * constant

        @staticmethod
        def setup_context(ctx, inputs, output):
            tensor, constant = inputs
            ctx.constant = constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class MyCube(lib.autograd.Function):
        @staticmethod
        def forward(x):
            result = x ** 3
            dx = 3 * x ** 2
            return result, dx

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            result, dx = output
            ctx.save_for_backward(x, dx)

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            return grad_output * dx + grad_dx * 6 * x

    return LinearFunction, MulConstant, MyCube


def test_documented_examples_run_unchanged():
    def run(lib):
        Linear, MulConstant, MyCube = _documented_examples(lib)
        x = _t(lib, [[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], True)
        w = _t(lib, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], True)
        b = _t(lib, [0.01, -0.02], True)
        y = Linear.apply(x, w, b)
        z = MulConstant.apply(y, 2.5)
        c, dc = MyCube.apply(z)
        (c.sum() + dc.sum()).backward()
        gx, gw = lib.autograd.grad(MyCube.apply(x)[0].sum(), x, create_graph=True)[0], None
        return y, z, c, x.grad, w.grad, b.grad, gx
    _check(*_both(run))
    Linear, MulConstant, MyCube = _documented_examples(tp)
    args = tuple(tp.from_numpy(np.random.default_rng(0).standard_normal(s)).requires_grad_(True)
                 for s in ((3, 4), (2, 4), (2,)))
    assert tp.autograd.gradcheck(Linear.apply, args)
    assert tp.autograd.gradgradcheck(lambda a: MyCube.apply(a)[0], (args[2],))


def test_ctx_classes():
    for lib in (tp, torch):
        y = square(lib).apply(_t(lib, [1.0], True))
        assert isinstance(y.grad_fn, lib.autograd.function.FunctionCtx)
        assert isinstance(y.grad_fn, lib.autograd.function.BackwardCFunction)
        assert type(y.grad_fn).__name__ == "SquareBackward"
        assert type(y.grad_fn)._forward_cls.__name__ == "Square"


@pytest.mark.parametrize("returns", ["slice_view", "input_as_is", "view_of_view"])
def test_inplace_on_a_function_output_that_aliases_an_input_raises_as_torch(returns):
    messages = []
    for lib in (torch, tp):
        class Alias(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x[:2] if returns == "slice_view" else x

            @staticmethod
            def backward(ctx, g):
                return g if returns != "slice_view" else lib.cat([g, lib.zeros(2)])
        x = lib.ones(4, requires_grad=True)
        y = Alias.apply(x.clone())
        target = y[1:] if returns == "view_of_view" else y
        with pytest.raises(RuntimeError) as e:
            target.mul_(2)
        messages.append(str(e.value))
        with lib.no_grad():  # outside grad mode the write is allowed
            target.mul_(2)
        z = Alias.apply(x.clone()).clone()
        z.mul_(2)  # a clone of the output is free to change
    tail = messages[0].split(" is a view ")[1]  # a view of the view names its own view op
    assert messages[1].split(" is a view ")[1] == tail
    if returns != "view_of_view":
        assert messages[1].endswith(messages[0])


def test_jvp_reads_save_for_forward_through_saved_tensors():
    seen = []
    for lib in (torch, tp):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ctx.save_for_forward(w)
                ctx.save_for_backward(x)
                return x * w

            @staticmethod
            def jvp(ctx, tx, tw):
                (w,) = ctx.saved_tensors  # save_for_forward's tensors while jvp runs
                return tx * w

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors  # save_for_backward's afterwards
                return g, g * x
        fa = lib.autograd.forward_ad
        w = lib.tensor([2.0, 3.0])
        with fa.dual_level():
            x = fa.make_dual(lib.tensor([1.0, 1.0]), lib.tensor([1.0, -1.0]))
            seen.append(fa.unpack_dual(Scale.apply(x, w)).tangent.tolist())
        xx = lib.tensor([1.0, 4.0], requires_grad=True)
        ww = lib.tensor([2.0, 3.0], requires_grad=True)
        Scale.apply(xx, ww).sum().backward()
        seen.append(ww.grad.tolist())
    assert seen[0] == seen[2] == [2.0, -3.0] and seen[1] == seen[3] == [1.0, 4.0]


@pytest.mark.parametrize("mode", ["same", "inplace", "new"])
def test_jvp_of_an_inplace_function_must_change_the_tangent_in_place(mode):
    outcomes = []
    for lib in (torch, tp):
        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_forward(x)
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def jvp(ctx, t):
                (x,) = ctx.saved_tensors  # saved after the in-place write: no version error
                return {"same": t, "inplace": t.mul_(2), "new": t * 2}[mode]
        fa = lib.autograd.forward_ad
        try:
            with fa.dual_level():
                x = fa.make_dual(lib.ones(3), lib.ones(3)).clone()
                outcomes.append(fa.unpack_dual(AddOne.apply(x)).tangent.tolist())
        except RuntimeError as e:
            outcomes.append(str(e).split(": ", 1)[-1] if lib is tp else str(e))
    assert outcomes[0] == outcomes[1]

