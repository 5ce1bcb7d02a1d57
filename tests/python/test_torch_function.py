"""__torch_function__ and tp.overrides, each case run against PyTorch with the same code."""
import pytest
import torch
import torch.overrides

import tensorplay as tp
import tensorplay.overrides

LIBS = [pytest.param(tp, id='tensorplay'), pytest.param(torch, id='torch')]


def _ov(lib):
    return tp.overrides if lib is tp else torch.overrides


def _name(func):
    return getattr(func, '__name__', repr(func))


def _logging_mode(lib):
    class Log(_ov(lib).TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append((_name(func), [t.__name__ for t in types]))
            return func(*args, **(kwargs or {}))
    return Log()


def _subclasses(lib):
    class Sub(lib.Tensor):
        pass

    class SubSub(Sub):
        pass
    return Sub, SubSub


@pytest.mark.parametrize('lib', LIBS)
def test_default_torch_function_keeps_the_subclass(lib):
    Sub, _ = _subclasses(lib)
    x = lib.ones(2, 3).as_subclass(Sub)
    y = lib.ones(2, 3)
    results = [lib.add(x, 1), x + y, y * x, x.sum(), x.t(), lib.nn.functional.relu(x), x[0],
               lib.cat([y, x]), lib.linalg.norm(x), x.split(1)[0], lib.unbind(x)[1]]
    assert all(type(r) is Sub for r in results), [type(r).__name__ for r in results]
    assert type(x.shape) is not Sub and x.shape == (2, 3) and x.dim() == 2
    g = lib.ones(2, 3).as_subclass(Sub).requires_grad_()
    (g * 2).sum().backward()
    assert type(g.grad) is lib.Tensor  # grad is in the no-wrap set


@pytest.mark.parametrize('lib', LIBS)
def test_handler_sees_public_function_types_args_and_kwargs(lib):
    seen = []

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func, types, len(args), sorted(kwargs or {})))
            return 'handled'

    x = lib.ones(2).as_subclass(Sub)
    assert lib.add(x, 2, alpha=3) == 'handled'
    assert x.mul(2) == 'handled'
    assert x + 1 == 'handled'
    assert lib.nn.functional.linear(lib.ones(1, 2), x) == 'handled'
    assert x.shape == 'handled'
    assert seen[0] == (lib.add, (Sub,), 2, ['alpha'])
    assert seen[1][0] == lib.Tensor.mul and seen[1][2] == 2
    assert seen[3][0] is lib.nn.functional.linear
    assert seen[4][0] == lib.Tensor.shape.__get__ and seen[4][2] == 1


@pytest.mark.parametrize('lib', LIBS)
def test_subclass_priority_and_not_implemented(lib):
    order = []

    def make(name, base, answer):
        def tf(cls, func, types, args=(), kwargs=None):
            order.append(name)
            return answer
        return type(name, (base,), {'__torch_function__': classmethod(tf)})
    A = make('A', lib.Tensor, NotImplemented)
    B = make('B', A, 'B')
    a, b = lib.ones(1).as_subclass(A), lib.ones(1).as_subclass(B)
    assert lib.add(a, b) == 'B' and order == ['B']  # the subclass first, though it comes second
    order.clear()
    C = make('C', lib.Tensor, NotImplemented)
    c = lib.ones(1).as_subclass(C)
    with pytest.raises(TypeError, match="(?s)Multiple dispatch failed for .*add.*NotImplemented.*C"):
        lib.add(c, a)
    assert order == ['C', 'A']  # left to right among unrelated types


@pytest.mark.parametrize('lib', LIBS)
def test_disabled_impl_parameter_and_duck_types(lib):
    class Quiet(lib.Tensor):
        __torch_function__ = lib._C._disabled_torch_function_impl
    q = lib.ones(2).as_subclass(Quiet)
    assert type(q + 1) is lib.Tensor
    p = lib.nn.Parameter(lib.ones(2))
    assert type(p * 2) is lib.Tensor and not _ov(lib).has_torch_function((p,))

    class Duck:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return ('duck', _name(func))
    assert lib.add(Duck(), lib.ones(1)) == ('duck', 'add')
    assert lib.cat([lib.ones(1), Duck()]) == ('duck', 'cat')
    ov = _ov(lib)
    assert ov.is_tensor_like(Duck()) and ov.is_tensor_like(lib.ones(1)) and not ov.is_tensor_like(1)
    assert ov.has_torch_function((lib.ones(1), Duck())) and not ov.has_torch_function((lib.ones(1), 2))
    assert ov.has_torch_function_unary(Duck()) and ov.has_torch_function_variadic(1, Duck())


@pytest.mark.parametrize('lib', LIBS)
def test_handle_torch_function_for_a_python_function(lib):
    ov = _ov(lib)

    def my_op(x, scale=1.0):
        if ov.has_torch_function_unary(x):
            return ov.handle_torch_function(my_op, (x,), x, scale=scale)
        return x * scale

    class Sub(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return (func is my_op, kwargs)
    assert my_op(lib.ones(1).as_subclass(Sub), scale=2.0) == (True, {'scale': 2.0})
    assert my_op(lib.ones(1), 3.0).tolist() == [3.0]


@pytest.mark.parametrize('lib', LIBS)
def test_mode_sees_functions_methods_properties_and_factories(lib):
    Sub, _ = _subclasses(lib)
    mode = _logging_mode(lib)
    with mode:
        x = lib.zeros(2)
        x.add(1)
        lib.nn.functional.gelu(x)
        s = lib.ones(1).as_subclass(Sub)
        s.shape
        s.requires_grad = False
        s + 1
    names = [n for n, _ in mode.calls]
    assert names[:4] == ['zeros', 'add', 'gelu', 'ones']
    assert names[4:6] == ['__get__', '__set__'] and mode.calls[6][1] == ['Sub']
    assert 'as_subclass' not in names


@pytest.mark.parametrize('lib', LIBS)
def test_modes_nest_and_survive_exceptions(lib):
    ov = _ov(lib)
    log = []

    def named(tag, fail=False):
        class M(ov.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                log.append((tag, _name(func)))
                if fail:
                    raise ValueError('boom')
                return func(*args, **(kwargs or {}))
        return M()
    with named('outer'), named('inner'):
        lib.ones(1).neg()
    assert log == [('inner', 'ones'), ('outer', 'ones'), ('inner', 'neg'), ('outer', 'neg')]
    with named('outer'):
        with pytest.raises(ValueError):
            with named('bad', fail=True):
                lib.ones(1)
        assert lib._C._len_torch_function_stack() == 1
    assert lib._C._len_torch_function_stack() == 0
    assert lib._C._is_torch_function_enabled()


@pytest.mark.parametrize('lib', LIBS)
def test_disable_guards(lib):
    Sub, _ = _subclasses(lib)
    s = lib.ones(1).as_subclass(Sub)
    mode = _logging_mode(lib)
    with mode:
        with lib._C.DisableTorchFunctionSubclass():
            r = s + 1
        with lib._C.DisableTorchFunction():
            lib.ones(1)
    assert type(r) is lib.Tensor
    assert [n for n, _ in mode.calls] == ['__add__' if lib is tp else 'add']
    assert lib._C._is_torch_function_enabled()


def test_overridable_functions_and_metadata():
    funcs = tp.overrides.get_overridable_functions()
    assert tp.add in funcs[tp] and tp.Tensor.add in funcs[tp.Tensor]
    assert tp.nn.functional.linear in funcs[tp.nn.functional] and tp.Tensor.shape in funcs[tp.Tensor]
    assert tp.manual_seed in tp.overrides.get_ignored_functions()
    assert tp.add.__name__ == 'add' and tp.add.__module__ == 'tensorplay'
    assert tp.Tensor.add.__qualname__ == 'Tensor.add' and tp.add.__doc__
    import pickle
    assert pickle.loads(pickle.dumps(tp.add)) is tp.add
    assert pickle.loads(pickle.dumps(tp.nn.functional.relu)) is tp.nn.functional.relu


def test_subclass_results_through_a_module():
    class Sub(tp.Tensor):
        pass
    lin = tp.nn.Linear(3, 2)
    y = lin(tp.ones(4, 3).as_subclass(Sub))
    assert type(y) is Sub and y.grad_fn is not None
    y.sum().backward()
    assert type(lin.weight.grad) is tp.Tensor and lin.weight.grad.shape == (2, 3)
