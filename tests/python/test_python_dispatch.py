"""Python dispatch: TorchDispatchMode and __torch_dispatch__ subclasses, against PyTorch."""
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

import tensorplay as tp
from tensorplay.utils._python_dispatch import (TorchDispatchMode, _get_current_dispatch_mode,
                                               _get_current_dispatch_mode_stack)


def _tmap(f, x):
    if isinstance(x, (list, tuple)):
        return type(x)(_tmap(f, y) for y in x)
    if isinstance(x, dict):
        return {k: _tmap(f, v) for k, v in x.items()}
    return f(x)


def _logging_mode(lib, base):
    class Log(base):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.calls.append((str(func), [type(a).__name__ for a in args], sorted(kwargs)))
            return func(*args, **kwargs)
    return Log()


def _inputs(lib):
    return (lib.tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], requires_grad=True),
            lib.tensor([[0.5, 1.0], [2.0, -1.0], [1.5, 0.0]]))


def _run_program(lib, x, w):
    y = lib.add(x, x, alpha=2)
    z = (y * 3).sum()
    v = x.view(3, 2).t()
    m = lib.mm(x, w)
    return [y, z, v, m]


def test_mode_sees_the_ops_pytorch_sees():
    mode, tmode = _logging_mode(tp, TorchDispatchMode), _logging_mode(torch, TorchMode)
    x, w = _inputs(tp)
    tx, tw = _inputs(torch)
    with mode:
        outs = _run_program(tp, x, w)
    with tmode:
        touts = _run_program(torch, tx, tw)
    assert mode.calls == tmode.calls
    for a, b in zip(outs, touts):
        assert a.tolist() == b.tolist() and a.requires_grad == b.requires_grad
    assert outs[0].grad_fn.name() == touts[0].grad_fn.name()  # autograd ran above the mode


def test_mode_sees_backward_and_gradients_match():
    mode = _logging_mode(tp, TorchDispatchMode)
    x = tp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with mode:
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    names = [c[0] for c in mode.calls]
    assert names[:2] == ['aten.mul.Tensor', 'aten.sum.default'] and 'aten.mul.Tensor' in names[2:]


def test_modes_nest_and_the_stack_is_visible():
    seen = []

    class Tag(TorchDispatchMode):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((self.name, str(func), _get_current_dispatch_mode()))
            return func(*args, **(kwargs or {}))

    outer, inner = Tag('outer'), Tag('inner')
    assert _get_current_dispatch_mode() is None
    with outer:
        with inner:
            assert _get_current_dispatch_mode() is inner
            assert _get_current_dispatch_mode_stack() == [outer, inner]
            tp.ones(2).neg()
    # the innermost first; while it runs it is off the stack, its calls reach the outer one
    assert [(n, f) for n, f, _ in seen] == [('inner', 'aten.ones.default'), ('outer', 'aten.ones.default'),
                                           ('inner', 'aten.neg.default'), ('outer', 'aten.neg.default')]
    assert seen[0][2] is outer and seen[1][2] is None
    assert _get_current_dispatch_mode_stack() == []


def test_mode_can_replace_results():
    class Zeros(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return out.zero_() if func is tp.ops.aten.exp.default else out
    with Zeros():
        r = tp.tensor([1.0, 2.0]).exp()
    assert r.tolist() == [0.0, 0.0]


def test_a_raising_mode_leaves_the_dispatch_state_intact():
    class Boom(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise ValueError('boom')

    x = tp.tensor([1.0, 2.0], requires_grad=True)
    before = (tp._C._len_torch_dispatch_stack(), repr(tp._C._dispatch_tls_local_exclude_set()),
              repr(tp._C._dispatch_tls_local_include_set()))
    with pytest.raises(ValueError, match='boom'):
        with Boom():
            x * 2
    after = (tp._C._len_torch_dispatch_stack(), repr(tp._C._dispatch_tls_local_exclude_set()),
             repr(tp._C._dispatch_tls_local_include_set()))
    assert before == after
    y = x * 2  # autograd and plain dispatch still work
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and y.grad_fn is not None


def test_excluding_the_python_key_bypasses_modes():
    mode = _logging_mode(tp, TorchDispatchMode)
    with mode:
        with tp._C._ExcludeDispatchKeyGuard(tp._C.DispatchKeySet(tp._C.DispatchKey.Python)):
            tp.ones(2) + 1
        tp.ones(1)
    assert [c[0] for c in mode.calls] == ['aten.ones.default']


class LoggingTensor(tp.Tensor):
    log = []

    @staticmethod
    def __new__(cls, elem):
        r = tp.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                             device=elem.device, requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(e):
            return e.elem if isinstance(e, LoggingTensor) else e

        def wrap(e):
            return LoggingTensor(e) if isinstance(e, tp.Tensor) and not isinstance(e, LoggingTensor) else e
        cls.log.append(str(func))
        return _tmap(wrap, func(*_tmap(unwrap, args), **_tmap(unwrap, kwargs or {})))


class TorchLoggingTensor(torch.Tensor):
    @staticmethod
    def __new__(cls, elem):
        r = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                                device=elem.device, requires_grad=elem.requires_grad)
        r.elem = elem
        return r

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(e):
            return e.elem if isinstance(e, TorchLoggingTensor) else e

        def wrap(e):
            return TorchLoggingTensor(e) if isinstance(e, torch.Tensor) and not isinstance(e, TorchLoggingTensor) else e
        return _tmap(wrap, func(*_tmap(unwrap, args), **_tmap(unwrap, kwargs or {})))


def test_wrapper_subclass_through_linear_forward_and_backward():
    torch.manual_seed(0)
    w, b, x = torch.randn(2, 3), torch.randn(2), torch.randn(4, 3)
    results = []
    for lib, Wrap in ((tp, LoggingTensor), (torch, TorchLoggingTensor)):
        lin = lib.nn.Linear(3, 2)
        lin.weight = lib.nn.Parameter(Wrap(lib.tensor(w.tolist())), requires_grad=True)
        lin.bias = lib.nn.Parameter(Wrap(lib.tensor(b.tolist())), requires_grad=True)
        xi = Wrap(lib.tensor(x.tolist()))
        y = lin(xi)
        assert type(y) is Wrap and y.grad_fn is not None
        y.sum().backward()
        assert type(lin.weight.grad) is Wrap
        # PyTorch seeds backward with ones_like(y) (a Wrap, so the bias gradient is one too);
        # ours seeds with a plain ones tensor (no ones_like op yet): the values agree
        bias_grad = getattr(lin.bias.grad, 'elem', lin.bias.grad)
        results.append([y.elem.tolist(), lin.weight.grad.elem.tolist(), bias_grad.tolist()])
    for a, e in zip(*results):
        assert torch.allclose(torch.tensor(a), torch.tensor(e))
    assert 'aten.addmm.default' in LoggingTensor.log and 'aten.mm.default' in LoggingTensor.log


def test_subclass_keeps_type_and_attributes_through_cpp():
    t = LoggingTensor(tp.arange(6.0).reshape(2, 3))
    t.note = 'kept'
    u = t.t()  # the op runs in __torch_dispatch__, the args arrive as LoggingTensors
    assert type(u) is LoggingTensor and u.elem.shape == (3, 2)
    seen = []

    class Peek(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((types, type(args[0]), getattr(args[0], 'note', None)))
            return func(*args, **(kwargs or {}))
    with Peek():
        t.neg()
    assert seen[0] == ((LoggingTensor,), LoggingTensor, 'kept')


def test_all_handlers_not_implemented_raises_typeerror():
    class Refuses(tp.Tensor):
        @staticmethod
        def __new__(cls, elem):
            return tp.Tensor._make_wrapper_subclass(cls, elem.size(), dtype=elem.dtype)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    with pytest.raises(TypeError, match='Multiple dispatch failed'):
        Refuses(tp.ones(2)).neg()


def test_as_subclass_and_make_subclass():
    class Plain(tp.Tensor):
        pass
    x = tp.tensor([1.0, 2.0], requires_grad=True)
    p = x.as_subclass(Plain)
    assert type(p) is Plain and p.grad_fn is not None and p.tolist() == [1.0, 2.0]
    q = tp.Tensor._make_subclass(Plain, tp.ones(2))
    assert type(q) is Plain and not q.requires_grad
    assert tp.Tensor(2, 3).shape == (2, 3) and tp.Tensor([1, 2]).tolist() == [1.0, 2.0]


def test_backend_key_boxed_fallback():
    """A boxed kernel registered at a backend key serves every op lacking a kernel there
    (Note [Boxed fallbacks]); without it the call names the op and the key."""
    x = tp.empty(5, device='meta')
    with pytest.raises(NotImplementedError, match='nonzero: no Meta kernel'):
        tp.nonzero(x)
    seen = []

    def fallback(func, args, kwargs):
        seen.append((str(func), [tuple(a.shape) for a in args if isinstance(a, tp.Tensor)]))
        return tp.empty(2, 1, dtype=tp.int64, device='meta')
    tp._C._set_fallback(tp._C.DispatchKey.Meta, fallback)
    try:
        assert tp._C._has_fallback(tp._C.DispatchKey.Meta)
        r = tp.nonzero(x)
        assert r.shape == (2, 1) and r.device.type == 'meta'
        assert (x + 1).shape == (5,)  # ops with a Meta kernel keep it
    finally:
        tp._C._set_fallback(tp._C.DispatchKey.Meta, None)
    assert len(seen) == 1 and seen[0][0].endswith('nonzero.default') and seen[0][1] == [(5,)]
    assert not tp._C._has_fallback(tp._C.DispatchKey.Meta)
    with pytest.raises(RuntimeError, match='modes'):
        tp._C._set_fallback(tp._C.DispatchKey.Python, fallback)
