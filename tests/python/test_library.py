"""tp.library against torch.library: custom ops, Library, fake kernels, autograd, autocast,
dispatch rules and opcheck. Each case defines the same op in both frameworks (namespaces
differ per test so that definitions do not collide) and compares what a user sees."""
import pickle
from typing import List, Optional, Sequence

import numpy as np
import pytest
import torch

import tensorplay as tp
from tensorplay._library.opcheck import OpCheckError
from tensorplay._subclasses.fake_tensor import DynamicOutputShapeException, FakeTensorMode
from tensorplay.utils._python_dispatch import TorchDispatchMode

_count = [0]


def _ns():
    _count[0] += 1
    return f'tplibtest{_count[0]}'


def both(make):
    """make(m, ns) defines an op with module m (torch or tensorplay); returns both results."""
    ns = _ns()
    return make(torch, ns), make(tp, ns)


# -- infer_schema --------------------------------------------------------------------------

def _annotated(m):
    T = m.Tensor

    def many(x: T, y: Optional[T], n: int, f: float, b: bool, s: str, l: Sequence[int],
             tl: List[T], d: m.dtype, dev: m.device, *, k: int = 3, o: Optional[int] = None,
             ff: float = 1.5, ss: str = 'hi', bb: bool = True) -> T: ...

    def mutating(x: T, out: T) -> None: ...

    def pair(x: T) -> tuple[T, T]: ...

    def listed(x: T) -> list[T]: ...

    def numbers(x: T, s: int = 2, dt: m.dtype = m.float32) -> int: ...

    def scalar(x: T, s: int | float | bool) -> float: ...
    return many, mutating, pair, listed, numbers, scalar


@pytest.mark.parametrize('mutates', [(), {'out'}, 'unknown'])
def test_infer_schema_matches_torch(mutates):
    for fa, fb in zip(_annotated(torch), _annotated(tp)):
        if mutates != () and fa.__name__ != 'mutating':
            continue
        assert tp.library.infer_schema(fb, mutates_args=mutates) == \
            torch.library.infer_schema(fa, mutates_args=mutates)
    f = _annotated(tp)[0]
    assert tp.library.infer_schema(f, mutates_args=(), op_name='mylib::many').startswith('mylib::many(')


def test_infer_schema_errors():
    def untyped(x, y: int) -> tp.Tensor: ...

    def no_return(x: tp.Tensor): ...

    def bad_type(x: tp.Tensor, y: dict) -> tp.Tensor: ...

    def varargs(x: tp.Tensor, *args) -> tp.Tensor: ...

    def bad_return(x: tp.Tensor) -> dict: ...
    for fn, words in ((untyped, 'Parameter x must have a type annotation'),
                      (no_return, 'No return type annotation'),
                      (bad_type, 'Parameter y has unsupported type'),
                      (varargs, 'positional-only args, varargs, or varkwargs'),
                      (bad_return, 'Return has unsupported type')):
        with pytest.raises(ValueError, match=words):
            tp.library.infer_schema(fn, mutates_args=())

    def f(x: tp.Tensor) -> tp.Tensor: ...
    with pytest.raises(ValueError, match="{'y'} in mutates_args were not found"):
        tp.library.infer_schema(f, mutates_args={'y'})


# -- custom_op -----------------------------------------------------------------------------

def _numpy_sin(m, ns):
    @m.library.custom_op(f'{ns}::numpy_sin', mutates_args=())
    def numpy_sin(x: m.Tensor, scale: float = 1.0) -> m.Tensor:
        return m.from_numpy(np.sin(x.detach().numpy()) * scale)

    @numpy_sin.register_fake
    def _(x, scale=1.0):
        return m.empty_like(x)

    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.save_for_backward(x)
        ctx.scale = scale

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos() * ctx.scale, None

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


def test_custom_op_eager_schema_handle():
    ts, ps = both(_numpy_sin)
    x = np.linspace(-2, 2, 7).astype(np.float32)
    np.testing.assert_allclose(ps(tp.tensor(x), 2.0).numpy(), ts(torch.tensor(x), 2.0).numpy())
    ns = ps._namespace
    h = getattr(tp.ops, ns).numpy_sin.default
    th = getattr(torch.ops, ts._namespace).numpy_sin.default
    assert str(h._schema).split('::')[1] == str(th._schema).split('::')[1]
    assert h.name() == f'{ns}::numpy_sin.default'
    assert getattr(tp.ops, ns).numpy_sin.overloads() == ['default']
    assert pickle.loads(pickle.dumps(h)) is h
    assert isinstance(h, type(tp.ops.aten.add.Tensor))
    assert repr(ps) == f'<CustomOpDef({ns}::numpy_sin)>'
    assert ps.__name__ == 'numpy_sin'
    # keyword binding and defaults, as any op handle
    np.testing.assert_allclose(h(tp.tensor(x), scale=3.0).numpy(), np.sin(x) * 3, rtol=1e-6)
    with tp.no_grad():
        assert ps(tp.tensor(x)).shape == (7,)
    with tp.inference_mode():
        assert ps(tp.tensor(x)).shape == (7,)


def test_custom_op_autograd_matches_torch():
    ts, ps = both(_numpy_sin)
    x = np.linspace(-2, 2, 5)
    tx, px = torch.tensor(x, requires_grad=True), tp.tensor(x, requires_grad=True)
    ty, py = ts(tx, 1.5), ps(px, 1.5)
    assert type(py.grad_fn).__name__ == type(ty.grad_fn).__name__.replace(ts._namespace, ps._namespace)
    ty.sum().backward()
    py.sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_no_autograd_formula_raises_on_backward():
    def make(m, ns):
        @m.library.custom_op(f'{ns}::plain', mutates_args=())
        def plain(x: m.Tensor) -> m.Tensor:
            return x * 2
        return plain
    ts, ps = both(make)
    ty, py = ts(torch.ones(2, requires_grad=True)), ps(tp.ones(2, requires_grad=True))
    assert py.requires_grad == ty.requires_grad
    with pytest.raises(RuntimeError) as te:
        ty.sum().backward()
    with pytest.raises(RuntimeError) as pe:
        py.sum().backward()
    assert str(pe.value) == str(te.value).replace(ts._namespace, ps._namespace)


def test_custom_op_meta_and_fake():
    ts, ps = both(_numpy_sin)
    y = ps(tp.empty(3, 4, device='meta'))
    assert y.device.type == 'meta' and y.shape == (3, 4)
    with FakeTensorMode() as mode:
        x = mode.from_tensor(tp.empty(2, 5, device='meta').to('meta'))
        y = ps(tp.empty(2, 5, device='cuda'))
        assert y.shape == (2, 5) and y.device.type == 'cuda'
        assert ps(x).shape == (2, 5)

    def make(m, ns):
        @m.library.custom_op(f'{ns}::nofake', mutates_args=())
        def nofake(x: m.Tensor) -> m.Tensor:
            return x + 1
        return nofake
    tn, pn = both(make)
    with pytest.raises(RuntimeError) as te:
        tn(torch.ones(2, device='meta'))
    with pytest.raises(RuntimeError) as pe:
        pn(tp.ones(2, device='meta'))
    assert str(pe.value).startswith(str(te.value).split('This is necessary')[0]
                                    .replace(tn._namespace, pn._namespace))


def test_device_from_all_tensors():
    _, ps = both(_numpy_sin)
    ns = ps._namespace

    @tp.library.custom_op(f'{ns}::axpy', mutates_args=())
    def axpy(a: tp.Tensor, x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        return a * x + y

    @axpy.register_fake
    def _(a, x, y):
        return tp.empty_like(x)
    meta = tp.ones(3, device='meta')
    # a 0-dim CPU tensor goes with any device; the first one does not decide it
    assert axpy(tp.tensor(2.0), meta, meta).device.type == 'meta'
    assert axpy(tp.tensor(2.0), tp.ones(3), tp.ones(3)).tolist() == [3., 3., 3.]
    with pytest.raises(RuntimeError, match='Expected all tensors to be on the same device, but '
                                           'found at least two devices, meta and cpu'):
        axpy(tp.tensor(2.0), meta, tp.ones(3))


def test_fake_kernel_dynamic_size():
    def make(m, ns):
        @m.library.custom_op(f'{ns}::nonzero_rows', mutates_args=())
        def nonzero_rows(x: m.Tensor) -> m.Tensor:
            return x[x.sum(1) != 0].clone()

        @nonzero_rows.register_fake
        def _(x):
            n = m.library.get_ctx().new_dynamic_size()
            return x.new_empty(n, x.shape[1])
        return nonzero_rows
    _, ps = both(make)
    x = tp.tensor([[0., 0.], [1., 2.]])
    assert ps(x).tolist() == [[1., 2.]]
    with pytest.raises(DynamicOutputShapeException):
        with FakeTensorMode():
            ps(tp.empty(3, 2))
    with pytest.raises(RuntimeError, match='get_ctx'):
        tp.library.get_ctx()


def test_dispatch_mode_sees_custom_op_like_torch():
    seen = {}

    def make(m, ns):
        @m.library.custom_op(f'{ns}::scale', mutates_args=())
        def scale(x: m.Tensor, k: int = 2, *, bias: float = 0.0) -> m.Tensor:
            return x * k + bias
        return scale

    ts, ps = both(make)
    for m, op, Mode in ((torch, ts, torch.utils._python_dispatch.TorchDispatchMode),
                        (tp, ps, TorchDispatchMode)):
        calls = seen[m.__name__] = []

        class Log(Mode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if op._namespace in str(func):
                    calls.append((str(func).split('.', 1)[1], len(args), dict(kwargs or {})))
                return func(*args, **(kwargs or {}))
        x = m.ones(2)
        with Log():
            op(x)
            op(x, 3)
            op(x, 2, bias=1.0)
    assert seen['tensorplay'] == seen['torch']


def test_wrapper_subclass_and_torch_dispatch_rule():
    _, ps = both(lambda m, ns: _numpy_sin(m, ns))
    handled = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    @tp.library.register_torch_dispatch(ps._opoverload, Mode)
    def _(mode, func, types, args, kwargs):
        handled.append(func)
        return args[0] * 10

    with Mode():
        y = ps(tp.ones(2))
    assert handled == [ps._opoverload] and y.tolist() == [10., 10.]


def test_register_kernel_devices_and_set_kernel_enabled():
    def make(m, ns):
        @m.library.custom_op(f'{ns}::f', mutates_args=())
        def f(x: m.Tensor) -> m.Tensor:
            return x + 1

        @f.register_kernel('cpu')
        def _(x):
            return x + 100
        return f
    ts, ps = both(make)
    for m, op in ((torch, ts), (tp, ps)):
        assert op(m.zeros(1)).tolist() == [100.]
        with op.set_kernel_enabled('cpu', False):
            assert op(m.zeros(1)).tolist() == [1.]
        assert op(m.zeros(1)).tolist() == [100.]

    def make_cuda_only(m, ns):
        @m.library.custom_op(f'{ns}::g', mutates_args=(), device_types='cuda')
        def g(x: m.Tensor) -> m.Tensor:
            return x + 1
        return g
    tg, pg = both(make_cuda_only)
    with pytest.raises(NotImplementedError):
        tg(torch.zeros(1))
    with pytest.raises(NotImplementedError, match="Could not run '.*::g' with arguments from the "
                                                  "'CPU' backend"):
        pg(tp.zeros(1))


def test_mutating_op_bumps_version_and_schema():
    def make(m, ns):
        @m.library.custom_op(f'{ns}::add_one_', mutates_args={'x'})
        def add_one_(x: m.Tensor, other: m.Tensor) -> None:
            x.add_(1)
        return add_one_
    ts, ps = both(make)
    assert str(ps._opoverload._schema).split('::')[1] == \
        str(ts._opoverload._schema).split('::')[1]
    for m, op in ((torch, ts), (tp, ps)):
        x = m.zeros(2)
        v = x._version
        assert op(x, x) is None
        assert x.tolist() == [1., 1.] and x._version > v


def test_output_aliasing_input_raises():
    def make(m, ns):
        @m.library.custom_op(f'{ns}::ident', mutates_args=())
        def ident(x: m.Tensor) -> m.Tensor:
            return x
        return ident
    ts, ps = both(make)
    with pytest.raises(RuntimeError, match='may not alias any inputs'):
        ts(torch.ones(2))
    with pytest.raises(RuntimeError, match='may not alias any inputs'):
        ps(tp.ones(2))


def test_register_autocast():
    def make(m, ns):
        @m.library.custom_op(f'{ns}::mm', mutates_args=())
        def mm(a: m.Tensor, b: m.Tensor) -> m.Tensor:
            return a @ b
        mm.register_autocast('cpu', m.float16)
        return mm
    ts, ps = both(make)
    for m, op in ((torch, ts), (tp, ps)):
        a = m.ones(2, 2)
        assert op(a, a).dtype == m.float32
        with m.autocast('cpu', dtype=m.bfloat16):
            assert op(a, a).dtype == m.float16
            assert op(a.long(), a.long()).dtype == m.int64


def test_tensor_list_scalars_and_defaults_reach_kernel():
    got = {}

    @tp.library.custom_op(f'{_ns()}::weighted_sum', mutates_args=())
    def weighted_sum(xs: List[tp.Tensor], w: Sequence[float], n: int, mode: str = 'sum',
                     dt: tp.dtype = tp.float64, dev: tp.device = tp.device('cpu')) -> tp.Tensor:
        got.update(n=n, mode=mode, dt=dt, dev=dev, w=list(w))
        return sum(x.to(dt) * wi for x, wi in zip(xs, w))

    def backward(ctx, grad):
        return [grad * wi for wi in ctx.w], None, None, None, None, None

    def setup_context(ctx, inputs, output):
        ctx.w = inputs[1]
    weighted_sum.register_autograd(backward, setup_context=setup_context)
    a, b = tp.ones(2, requires_grad=True), tp.ones(2, requires_grad=True)
    y = weighted_sum([a, b], [2.0, 3.0], 7)
    assert got == dict(n=7, mode='sum', dt=tp.float64, dev=tp.device('cpu'), w=[2.0, 3.0])
    assert y.dtype == tp.float64 and y.tolist() == [5., 5.]
    y.sum().backward()
    assert a.grad.tolist() == [2., 2.] and b.grad.tolist() == [3., 3.]


def test_redefinition_replaces_and_state_survives_errors():
    ns = _ns()

    @tp.library.custom_op(f'{ns}::boom', mutates_args=())
    def boom(x: tp.Tensor) -> tp.Tensor:
        raise ValueError('kernel failed')
    excluded = tp._C._dispatch_tls_local_exclude_set()
    included = tp._C._dispatch_tls_local_include_set()
    with pytest.raises(ValueError, match='kernel failed'):
        boom(tp.ones(1, requires_grad=True))
    assert repr(tp._C._dispatch_tls_local_exclude_set()) == repr(excluded)
    assert repr(tp._C._dispatch_tls_local_include_set()) == repr(included)

    @tp.library.custom_op(f'{ns}::boom', mutates_args=())
    def boom(x: tp.Tensor) -> tp.Tensor:  # noqa: F811 - defining it again replaces it
        return x + 1
    assert boom(tp.ones(1)).tolist() == [2.]
    assert getattr(tp.ops, ns).boom.default(tp.ones(1)).tolist() == [2.]


def test_custom_op_bad_names():
    for name, err in (('noseparator', ValueError), ('ns::a.b', ValueError)):
        with pytest.raises(err):
            tp.library.custom_op(name, lambda x: x, mutates_args=())


# -- Library -------------------------------------------------------------------------------

def test_library_define_impl_destroy():
    ns = _ns()
    lib = tp.library.Library(ns, 'DEF')
    assert lib.define('mul3(Tensor x) -> Tensor') == 'mul3'
    lib.define('mul3.scaled(Tensor x, float s) -> Tensor')
    lib.impl('mul3', lambda x: x * 3, 'CPU')
    lib.impl('mul3.scaled', lambda x, s: x * 3 * s, 'CompositeExplicitAutograd')
    lib.impl('mul3', lambda x: tp.empty_like(x), 'Meta')
    packet = getattr(tp.ops, ns).mul3
    assert sorted(packet.overloads()) == ['default', 'scaled']
    assert packet(tp.ones(1)).tolist() == [3.]             # the packet picks the overload
    assert packet(tp.ones(1), 2.0).tolist() == [6.]
    assert packet.default(tp.ones(2, device='meta')).device.type == 'meta'
    # without a Meta kernel the Composite one runs on meta tensors
    assert packet.scaled(tp.ones(2, device='meta'), 1.0).device.type == 'meta'
    with pytest.raises(RuntimeError, match='Only a single TORCH_LIBRARY'):
        tp.library.Library(ns, 'DEF')
    with pytest.raises(RuntimeError, match='already defined'):
        lib.define('mul3(Tensor x) -> Tensor')
    with pytest.raises(ValueError, match='unsupported dispatch key'):
        lib.impl('mul3', lambda x: x, 'NotAKey')
    with pytest.raises(RuntimeError, match='invalid schema|expected'):
        lib.define('broken(Tensor x -> Tensor')
    lib._destroy()
    assert not hasattr(getattr(tp.ops, ns), 'mul3')
    lib2 = tp.library.Library(ns, 'DEF')  # the namespace and names are free again
    lib2.define('mul3(Tensor x) -> Tensor')
    lib2._destroy()


def test_dropped_library_deregisters():
    import gc
    ns = _ns()

    def scope():
        lib = tp.library.Library(ns, 'DEF')
        lib.define('tmp(Tensor x) -> Tensor')
        lib.impl('tmp', lambda x: x + 1, 'CPU')
        assert getattr(tp.ops, ns).tmp.default(tp.zeros(1)).tolist() == [1.]
    scope()
    gc.collect()
    assert not hasattr(getattr(tp.ops, ns), 'tmp')
    tp.library.Library(ns, 'DEF')._destroy()  # the namespace is free again

    tp.library.define(f'{ns}::abs_twice', '(Tensor x) -> Tensor')
    tp.library.impl(f'{ns}::abs_twice', 'CompositeImplicitAutograd', lambda x: x.abs() * 2)
    tp.library.impl_abstract(f'{ns}::abs_twice', lambda x: tp.empty_like(x))
    assert getattr(tp.ops, ns).abs_twice.default(tp.ones(2, device='meta')).shape == (2,)


def test_library_missing_kernel_messages():
    ns = _ns()
    lib = tp.library.Library(ns, 'FRAGMENT')
    lib.define('only_cpu(Tensor x) -> Tensor')
    lib.impl('only_cpu', lambda x: x + 1, 'CPU')
    op = getattr(tp.ops, ns).only_cpu.default
    with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::only_cpu' with arguments "
                                                   "from the 'Meta' backend"):
        op(tp.ones(1, device='meta'))
    with pytest.raises(RuntimeError, match='does not exist'):
        lib.impl('nope', lambda x: x, 'CPU')
    lib._destroy()


def test_override_builtin_kernel_until_destroyed():
    seen = []

    def my_mul(a, b):
        seen.append((a.shape, b if isinstance(b, (int, float)) else b.shape))
        return tp.full_like(a, 42.0)
    lib = tp.library.Library('aten', 'IMPL')
    lib.impl('mul.Tensor', my_mul, 'CPU')
    x = tp.ones(3)
    assert (x * 2).tolist() == [42.0] * 3
    assert tp.ops.aten.mul.Tensor(x, x).tolist() == [42.0] * 3
    y = tp.ones(3)
    y.mul_(5)  # the in-place and out= forms share the kernel slot
    assert y.tolist() == [42.0] * 3
    out = tp.empty(0)
    tp.mul(x, x, out=out)
    assert out.tolist() == [42.0] * 3
    assert (tp.ones(2, device='meta') * 2).device.type == 'meta'  # Meta keeps its kernel
    assert seen
    lib._destroy()
    assert (x * 2).tolist() == [2.0] * 3  # the built-in kernel is back
    lib = tp.library.Library('aten', 'IMPL')
    lib.impl(tp.ops.aten.mul.Tensor, lambda a, b: tp.zeros_like(a), 'Meta')
    assert (tp.ones(2, device='meta') * 2).shape == (2,)
    with pytest.raises(NotImplementedError, match='compiled in'):
        lib.impl('add.Tensor', lambda a, b, alpha=1: a, 'Autograd')
    with pytest.raises(NotImplementedError, match='composite op'):
        lib.impl('expand', lambda *a: a[0], 'CPU')
    lib._destroy()
    with pytest.raises(RuntimeError, match='Only a single TORCH_LIBRARY'):
        tp.library.Library('aten', 'DEF')


def test_functional_api_define_impl_register_fake():
    ns = _ns()
    tp.library.define(f'{ns}::twice', '(Tensor x) -> Tensor')

    @tp.library.impl(f'{ns}::twice', 'cpu')
    def _(x):
        return x * 2

    @tp.library.register_fake(f'{ns}::twice')
    def _(x):
        return tp.empty_like(x)
    op = getattr(tp.ops, ns).twice.default
    assert op(tp.ones(2)).tolist() == [2., 2.]
    assert op(tp.ones(3, device='meta')).shape == (3,)
    with FakeTensorMode():
        assert op(tp.ones(4)).shape == (4,)


# -- opcheck -------------------------------------------------------------------------------

def test_opcheck_success_and_each_failure():
    _, good = both(_numpy_sin)
    x = tp.randn(3, requires_grad=True)
    assert tp.library.opcheck(good, (x,), {'scale': 2.0}) == {
        'test_schema': 'SUCCESS', 'test_autograd_registration': 'SUCCESS',
        'test_faketensor': 'SUCCESS', 'test_aot_dispatch_dynamic': 'SUCCESS'}
    ns = _ns()

    @tp.library.custom_op(f'{ns}::sneaky', mutates_args=())
    def sneaky(x: tp.Tensor) -> tp.Tensor:
        x.add_(1)  # writes an input its schema does not mark
        return x.clone()

    @sneaky.register_fake
    def _(x):
        return tp.empty_like(x)
    with pytest.raises(OpCheckError, match='mutated its argument'):
        tp.library.opcheck(sneaky, (tp.ones(2),), test_utils='test_schema')

    @tp.library.custom_op(f'{ns}::badfake', mutates_args=())
    def badfake(x: tp.Tensor) -> tp.Tensor:
        return x.sum(0)

    @badfake.register_fake
    def _(x):
        return tp.empty_like(x)  # wrong shape
    with pytest.raises(OpCheckError, match='fake kernel gives shape'):
        tp.library.opcheck(badfake, (tp.ones(2, 3),), test_utils=['test_faketensor'])
    r = tp.library.opcheck(badfake, (tp.ones(2, 3),), raise_exception=False)
    assert r['test_schema'] == 'SUCCESS' and isinstance(r['test_faketensor'], OpCheckError)

    lib = tp.library.Library(ns, 'FRAGMENT')
    lib.define('noautograd(Tensor x) -> Tensor')
    lib.impl('noautograd', lambda x: x * 2, 'CPU')
    with pytest.raises(OpCheckError, match='no autograd registration'):
        tp.library.opcheck(getattr(tp.ops, ns).noautograd.default, (tp.ones(2, requires_grad=True),),
                           test_utils='test_autograd_registration')
    lib.define('composite(Tensor x) -> Tensor')
    lib.impl('composite', lambda x: x * 2, 'CompositeImplicitAutograd')
    c = tp.ones(2, requires_grad=True)
    assert tp.library.opcheck(getattr(tp.ops, ns).composite.default, (c,),
                              test_utils='test_autograd_registration') == \
        {'test_autograd_registration': 'SUCCESS'}
    getattr(tp.ops, ns).composite.default(c).sum().backward()  # autograd flows through it
    assert c.grad.tolist() == [2., 2.]
    with pytest.raises(ValueError, match='unknown test_utils'):
        tp.library.opcheck(good, (x,), test_utils='test_nothing')
    lib._destroy()


def test_schema_check_mode():
    from tensorplay._subclasses.schema_check_mode import SchemaCheckMode
    x = tp.randn(3, 4)
    with SchemaCheckMode() as mode:  # built-in ops keep their schemas
        y = x.t().relu().add_(1).t().view(12)
        tp.mul(y, 2, out=tp.empty(12))
    assert tp.ops.aten.view.default in mode.ops and (tp.ops.aten.add_.Tensor, 'self') in mode.mutated
    ns = _ns()
    lib = tp.library.Library(ns, 'FRAGMENT')
    lib.define('sneaky(Tensor x) -> Tensor')
    lib.impl('sneaky', lambda x: x.add_(1).clone(), 'CPU')
    lib.define('leaky(Tensor x) -> Tensor(a)')  # an output without its input's annotation
    lib.impl('leaky', lambda x: x.view(-1), 'CPU')
    with pytest.raises(RuntimeError, match='Argument x is not defined as mutable but was mutated'):
        with SchemaCheckMode():
            getattr(tp.ops, ns).sneaky.default(tp.ones(2))
    with pytest.raises(RuntimeError, match='Argument x is not defined to alias output but was '
                                           'aliasing'):
        with SchemaCheckMode():
            getattr(tp.ops, ns).leaky.default(tp.ones(2))
    lib._destroy()


def test_get_kernel_from_an_override_with_keyset():
    # PyTorch's documented get_kernel example: sin overridden for CPU, calling the original
    results = {}
    for m in (torch, tp):
        original = m.library.get_kernel('aten::sin', 'CPU')

        def conditional_sin(keyset, x, m=m, original=original):
            if (x < 0).any():
                return original.call_boxed(keyset, x)
            return m.zeros_like(x)
        lib = m.library.Library('aten', 'IMPL')
        lib.impl('sin', conditional_sin, 'CPU', with_keyset=True)
        results[m.__name__] = (m.sin(m.tensor([1.0, 2.0])).tolist(),
                               m.sin(m.tensor([-1.0, 2.0])).tolist())
        lib._destroy()
    assert results['tensorplay'][0] == results['torch'][0] == [0.0, 0.0]
    np.testing.assert_allclose(results['tensorplay'][1], results['torch'][1], rtol=1e-6)
    assert tp.sin(tp.tensor([1.0])).item() != 0  # the library is gone: the kernel is back
    add = tp.library.get_kernel(tp.ops.aten.add.Tensor, 'CPU')
    assert add.call_boxed(None, tp.ones(2), tp.ones(2), alpha=3).tolist() == [4., 4.]
    with pytest.raises(ValueError, match='not a backend dispatch key'):
        tp.library.get_kernel('aten::sin', 'Autograd')


def test_library_fallback_for_a_key():
    ns = _ns()
    lib = tp.library.Library(ns, 'FRAGMENT')
    lib.define('f(Tensor x) -> Tensor')
    lib.impl('f', lambda x: x + 1, 'CPU')
    op = getattr(tp.ops, ns).f.default
    calls = []

    def meta_fallback(func, *args, **kwargs):
        calls.append(func)
        return tp.empty_like(args[0])
    glob = tp.library.Library('_', 'FRAGMENT')
    glob.fallback(meta_fallback, 'Meta')
    assert op(tp.ones(2, device='meta')).device.type == 'meta' and calls == [op]
    glob._destroy()
    with pytest.raises(NotImplementedError, match="'Meta' backend"):
        op(tp.ones(2, device='meta'))
    with pytest.raises(ValueError, match='global namespace'):
        lib.fallback(meta_fallback, 'Meta')
    lib._destroy()
