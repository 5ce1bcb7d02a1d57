"""tp.autograd.forward_ad: dual levels, make_dual / unpack_dual, views and in-place ops,
custom Functions' jvp, and PyTorch's errors. Each case runs on both libraries."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _t(lib, data):
    return lib.from_numpy(np.asarray(data, dtype=np.float64).copy())


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist())


def _both(fn):
    ours, ref = fn(tp), fn(torch)
    return ours, ref


def _same(ours, ref):
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref):
            _same(a, b)
    elif ref is None:
        assert ours is None
    elif isinstance(ref, torch.Tensor):
        np.testing.assert_allclose(_np(ours), _np(ref), rtol=1e-10, atol=1e-12)
    else:
        assert ours == ref


def _errors(fn):
    out = []
    for lib in (tp, torch):
        with pytest.raises(Exception) as e:
            fn(lib)
        out.append((type(e.value), str(e.value).replace("torch", "tensorplay")))
    assert out[0] == out[1], out


def test_chain_of_ops():
    def run(lib):
        fw = lib.autograd.forward_ad
        x = _t(lib, [0.5, -1.0, 2.0])
        with fw.dual_level():
            d = fw.make_dual(x, _t(lib, [1.0, 2.0, 3.0]))
            y = (lib.tanh(d * 1.5 + 0.2).exp() / (d * d + 1)).sum()
            p, t = fw.unpack_dual(y)
        return p, t
    _same(*_both(run))


def test_unpack_dual_named_tuple_and_plain_tensor():
    for lib in (tp, torch):
        fw = lib.autograd.forward_ad
        x = _t(lib, [1.0, 2.0])
        with fw.dual_level():
            d = fw.make_dual(x, _t(lib, [3.0, 4.0]))
            u = fw.unpack_dual(d)
            assert u.primal is u[0] and u.tangent is u[1]
            assert _np(u.primal).tolist() == [1.0, 2.0] and _np(u.tangent).tolist() == [3.0, 4.0]
            assert fw.unpack_dual(u.primal).tangent is None
            assert fw.unpack_dual(x).tangent is None
            assert type(u).__name__ == "UnpackedDualTensor"
            y = d * 2
        assert fw.unpack_dual(y).tangent is None  # the level is gone


def test_dual_is_a_view_of_the_primal():
    for lib in (tp, torch):
        fw = lib.autograd.forward_ad
        x = _t(lib, [1.0, 2.0])
        with fw.dual_level():
            d = fw.make_dual(x, _t(lib, [1.0, 1.0]))
            with lib.no_grad():
                d.mul_(3)
        assert _np(x).tolist() == [3.0, 6.0]


def test_tangents_do_not_survive_their_level():
    for lib in (tp, torch):
        fw = lib.autograd.forward_ad
        x = _t(lib, [1.0])
        with fw.dual_level():
            d = fw.make_dual(x, _t(lib, [1.0]))
        with fw.dual_level():
            assert fw.unpack_dual(d).tangent is None
            assert fw.unpack_dual(d * 2).tangent is None


def test_views_and_inplace():
    def run(lib):
        fw = lib.autograd.forward_ad
        base = _t(lib, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        with fw.dual_level():
            d = fw.make_dual(base, _t(lib, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
            v = d[1]            # view: tangent is the base tangent's row
            t_row = fw.unpack_dual(v).tangent
            v.mul_(v)           # in place on the view: the base's tangent changes too
            t_base = fw.unpack_dual(d).tangent
            w = d.t().reshape(-1)
            t_w = fw.unpack_dual(w).tangent
            # A plain tensor gets a tangent through an in-place write of a dual into its view.
            z = lib.zeros(2, 3, dtype=lib.float64)
            z[0].copy_(d[0] * 2)
            t_z = fw.unpack_dual(z).tangent
            q = lib.ones(3, dtype=lib.float64)
            q.mul_(d[0])
            t_q = fw.unpack_dual(q).tangent
        return t_row, t_base, t_w, t_z, t_q
    _same(*_both(run))


def test_noncontiguous_primal():
    def run(lib):
        fw = lib.autograd.forward_ad
        x = _t(lib, np.arange(12.0).reshape(3, 4)).t()
        with fw.dual_level():
            d = fw.make_dual(x, _t(lib, np.ones((4, 3))))
            y = (d[::2] * d[::2]).sum(0)
            return fw.unpack_dual(y).tangent, fw.unpack_dual(d.diagonal()).tangent
    _same(*_both(run))


def test_errors_match_pytorch():
    def outside(lib):
        lib.autograd.forward_ad.make_dual(_t(lib, [1.0]), _t(lib, [1.0]))

    def wrong_size(lib):
        with lib.autograd.forward_ad.dual_level():
            lib.autograd.forward_ad.make_dual(_t(lib, [1.0, 2.0, 3.0]), _t(lib, [1.0, 2.0]))

    def nested(lib):
        with lib.autograd.forward_ad.dual_level():
            lib.autograd.forward_ad.enter_dual_level()

    def twice(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(_t(lib, [1.0]), _t(lib, [1.0]))
            fw.make_dual(d, _t(lib, [1.0]))

    def integer(lib):
        with lib.autograd.forward_ad.dual_level():
            lib.autograd.forward_ad.make_dual(lib.ones(2, dtype=lib.int64), lib.ones(2, dtype=lib.int64))

    def bad_exit(lib):
        lib.autograd.forward_ad.exit_dual_level(level=0)

    for fn in (outside, wrong_size, nested, twice, integer, bad_exit):
        _errors(fn)


def test_nested_error_leaves_no_level_behind():
    fw = tp.autograd.forward_ad
    with pytest.raises(RuntimeError):
        with fw.dual_level():
            fw.enter_dual_level()
    with fw.dual_level():  # usable again
        assert fw.unpack_dual(fw.make_dual(tp.ones(1), tp.ones(1)) * 2).tangent.tolist() == [2.0]


def test_op_without_derivative_raises_not_implemented():
    op = next(o for o in ("floor_divide",) if hasattr(tp, o))
    fw = tp.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(tp.ones(2, dtype=tp.float64), tp.ones(2, dtype=tp.float64))
        with pytest.raises(NotImplementedError, match="forward AD"):
            getattr(tp, op)(d, d)


def test_forward_and_reverse_together():
    """Tangents are differentiable in reverse mode (forward-over-reverse's building block)."""
    def run(lib):
        fw = lib.autograd.forward_ad
        x = _t(lib, [0.3, 0.7]).requires_grad_(True)
        with fw.dual_level():
            d = fw.make_dual(x, _t(lib, [1.0, -1.0]))
            y = (d.sin() * d).sum()
            p, t = fw.unpack_dual(y)
        gp, = lib.autograd.grad(p, x, retain_graph=True)
        gt, = lib.autograd.grad(t, x)
        return p, t, gp, gt
    _same(*_both(run))


@pytest.mark.parametrize('fn', ['tanh', 'exp', 'sigmoid', 'sqrt', 'sin'])
def test_forward_over_reverse_of_ops_saving_their_output(fn):
    """A double backward under a dual level reads the saved output's tangent (tanh's
    1 - result^2): outputs saved for backward keep their tangent, as in PyTorch."""
    def run(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(_t(lib, [0.3, 0.7]).requires_grad_(True), _t(lib, [1.0, 2.0]))
            g, = lib.autograd.grad(getattr(x, fn)().sum(), x, create_graph=True)
            p, t = fw.unpack_dual(g)
        assert t is not None
        return p.detach(), t.detach()
    _same(*_both(run))


def test_custom_function_jvp():
    def run(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.save_for_forward(x)
                ctx.k = k
                return x ** 3 * k

            @staticmethod
            def backward(ctx, g):
                raise AssertionError("not called")

            @staticmethod
            def jvp(ctx, x_t, k_t):
                x, = ctx.saved_for_forward
                return 3 * x * x * x_t * ctx.k
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(_t(lib, [1.0, 2.0]), _t(lib, [1.0, 0.5]))
            y = Cube.apply(d, 2.0)
            return fw.unpack_dual(y)
    _same(*_both(run))


def test_custom_function_without_jvp_raises():
    for lib in (tp, torch):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x

            @staticmethod
            def backward(ctx, g):
                return g
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(_t(lib, [1.0]), _t(lib, [1.0]))
            with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
                Sq.apply(d)
