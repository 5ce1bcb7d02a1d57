"""tp.autograd.functional against torch.autograd.functional: values, result structure,
create_graph, strict and the errors, on the same functions."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _t(lib, data, requires_grad=False):
    return lib.from_numpy(np.asarray(data, dtype=np.float64).copy()).requires_grad_(requires_grad)


def _same(ours, ref):
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(ref), (ours, ref)
        for a, b in zip(ours, ref):
            _same(a, b)
    else:
        assert isinstance(ours, tp.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(ref.shape), (tuple(ours.shape), tuple(ref.shape))
        assert ours.requires_grad == ref.requires_grad
        np.testing.assert_allclose(np.asarray(ours.detach().tolist()), ref.detach().numpy(),
                                   rtol=1e-9, atol=1e-12)


def _errors(fn):
    out = []
    for lib in (tp, torch):
        with pytest.raises(Exception) as e:
            fn(lib)
        out.append((type(e.value), str(e.value).replace("torch", "tensorplay")))
    assert out[0] == out[1], out


def f_single(lib):
    return lambda x: (x.sin() * x).sum(0) if x.dim() > 1 else x.sin() * x


def f_multi(lib):
    return lambda x, y: (x * y.exp(), (x * x).sum() + y.sum())


def f_scalar(lib):
    return lambda x, y: (x.sin() * y * y).sum() + (x * x * x).sum()


X = [[0.3, -1.2], [0.7, 2.0]]
Y = [0.5, -0.25]


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp(create_graph):
    def run(lib):
        F = lib.autograd.functional
        x, y = _t(lib, X[0], True), _t(lib, Y, True)
        a = F.vjp(f_single(lib), x, _t(lib, [1.0, 2.0]), create_graph=create_graph)
        b = F.vjp(f_multi(lib), (x, y), (_t(lib, [1.0, -1.0]), _t(lib, 2.0)),
                  create_graph=create_graph)
        c = F.vjp(lambda v: (v * v).sum(), x, create_graph=create_graph)
        return a, b, c
    _same(*(run(tp), run(torch)))


@pytest.mark.parametrize("create_graph", [False, True])
def test_jvp(create_graph):
    def run(lib):
        F = lib.autograd.functional
        x, y = _t(lib, X[0], True), _t(lib, Y, True)
        a = F.jvp(f_single(lib), x, _t(lib, [1.0, 2.0]), create_graph=create_graph)
        b = F.jvp(f_multi(lib), (x, y), (_t(lib, [1.0, -1.0]), _t(lib, [0.5, 2.0])),
                  create_graph=create_graph)
        c = F.jvp(lambda v: v.exp(), _t(lib, [0.5]), create_graph=create_graph)
        return a, b, c
    _same(*(run(tp), run(torch)))


@pytest.mark.parametrize("strategy,vectorize", [("reverse-mode", False), ("reverse-mode", True),
                                                ("forward-mode", True)])
def test_jacobian(strategy, vectorize):
    def run(lib):
        F = lib.autograd.functional
        x, y = _t(lib, X[0]), _t(lib, Y)
        a = F.jacobian(f_single(lib), x, strategy=strategy, vectorize=vectorize)
        b = F.jacobian(f_multi(lib), (x, y), strategy=strategy, vectorize=vectorize)
        c = F.jacobian(f_single(lib), _t(lib, X), strategy=strategy, vectorize=vectorize)
        d = F.jacobian(lambda v: (v * 2, v.sum()), x, strategy=strategy, vectorize=vectorize)
        return a, b, c, d
    _same(*(run(tp), run(torch)))


def test_jacobian_create_graph():
    def run(lib):
        x = _t(lib, X[0], True)
        j = lib.autograd.functional.jacobian(f_single(lib), x, create_graph=True)
        g, = lib.autograd.grad(j.sum(), x)
        return j, g
    _same(*(run(tp), run(torch)))


@pytest.mark.parametrize("outer", ["reverse-mode", "forward-mode"])
def test_hessian(outer):
    def run(lib):
        F = lib.autograd.functional
        x, y = _t(lib, X[0]), _t(lib, Y)
        vec = outer == "forward-mode"
        a = F.hessian(lambda v: (v.sin() * v).sum(), x, vectorize=vec, outer_jacobian_strategy=outer)
        b = F.hessian(f_scalar(lib), (x, y), vectorize=vec, outer_jacobian_strategy=outer)
        return a, b
    _same(*(run(tp), run(torch)))


@pytest.mark.parametrize("fn", ["vhp", "hvp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_vhp_hvp(fn, create_graph):
    def run(lib):
        F = getattr(lib.autograd.functional, fn)
        x, y = _t(lib, X[0], True), _t(lib, Y, True)
        a = F(lambda v: (v.sin() * v).sum(), x, _t(lib, [1.0, -2.0]), create_graph=create_graph)
        b = F(f_scalar(lib), (x, y), (_t(lib, [1.0, 0.5]), _t(lib, [2.0, -1.0])),
              create_graph=create_graph)
        return a, b
    _same(*(run(tp), run(torch)))


def test_strict_mode():
    def independent(lib, fn):
        F = lib.autograd.functional
        x, y = _t(lib, X[0]), _t(lib, Y)
        if fn == "vjp":
            return F.vjp(lambda a, b: a * 2, (x, y), _t(lib, [1.0, 1.0]), strict=True)
        if fn == "jacobian":
            return F.jacobian(lambda a, b: a * 2, (x, y), strict=True)
        if fn == "constant":
            return F.vjp(lambda a: lib.ones(2, dtype=lib.float64), x, _t(lib, [1.0, 1.0]), strict=True)
        if fn == "hessian":
            return F.hessian(lambda a: a.sum(), x, strict=True)
        if fn == "vhp":
            return F.vhp(lambda a: (a * 3).sum(), x, _t(lib, [1.0, 1.0]), strict=True)
        if fn == "jvp":
            return F.jvp(lambda a, b: (a * 2, lib.ones(2, dtype=lib.float64)), (x, y),
                         (_t(lib, [1.0, 1.0]), _t(lib, [1.0, 1.0])), strict=True)
    for fn in ("vjp", "jacobian", "constant", "hessian", "vhp", "jvp"):
        _errors(lambda lib: independent(lib, fn))
    # Without strict, the same calls give zeros.
    _same(independent_non_strict(tp), independent_non_strict(torch))


def independent_non_strict(lib):
    F = lib.autograd.functional
    x, y = _t(lib, X[0]), _t(lib, Y)
    return (F.vjp(lambda a, b: a * 2, (x, y), _t(lib, [1.0, 1.0])),
            F.jacobian(lambda a, b: a * 2, (x, y)),
            F.hessian(lambda a: a.sum(), x))


def test_errors():
    F = "autograd.functional"

    def call(lib, name, *args, **kwargs):
        fn = lib
        for part in (F + "." + name).split("."):
            fn = getattr(fn, part)
        return fn(*args, **kwargs)
    cases = [
        lambda lib: call(lib, "vjp", lambda a: a * 2, [1.0]),
        lambda lib: call(lib, "vjp", lambda a: a * 2, (_t(lib, [1.0]), 3)),
        lambda lib: call(lib, "vjp", lambda a: a * 2, _t(lib, [1.0, 2.0])),
        lambda lib: call(lib, "vjp", lambda a: a * 2, _t(lib, [1.0, 2.0]), _t(lib, [1.0])),
        lambda lib: call(lib, "vjp", lambda a: (a, a), _t(lib, [1.0, 2.0]), (_t(lib, [1.0, 2.0]),)),
        lambda lib: call(lib, "vjp", lambda a: 3, _t(lib, [1.0])),
        lambda lib: call(lib, "jvp", lambda a: a * 2, _t(lib, [1.0, 2.0])),
        lambda lib: call(lib, "jvp", lambda a: a * 2, _t(lib, [1.0, 2.0]), _t(lib, [1.0, 2.0, 3.0])),
        lambda lib: call(lib, "jacobian", lambda a: a, _t(lib, [1.0]), strategy="sideways"),
        lambda lib: call(lib, "jacobian", lambda a: a, _t(lib, [1.0]), strategy="forward-mode"),
        lambda lib: call(lib, "jacobian", lambda a: a, _t(lib, [1.0]), strategy="forward-mode",
                         vectorize=True, create_graph=True),
        lambda lib: call(lib, "jacobian", lambda a: a, _t(lib, [1.0]), vectorize=True, strict=True),
        lambda lib: call(lib, "hessian", lambda a: a * 2, _t(lib, [1.0, 2.0])),
        lambda lib: call(lib, "hessian", lambda a: (a.sum(), a.sum()), _t(lib, [1.0, 2.0])),
        lambda lib: call(lib, "vhp", lambda a: a * 2, _t(lib, [1.0, 2.0]), _t(lib, [1.0, 2.0])),
        lambda lib: call(lib, "hvp", lambda a: a.sum(), _t(lib, [1.0, 2.0])),
    ]
    for case in cases:
        _errors(case)
