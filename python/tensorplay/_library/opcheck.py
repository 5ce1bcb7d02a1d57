"""``tp.library.opcheck``: checks that an op's registration is consistent, on one input.

test_schema                 the op writes only the inputs its schema marks ``Tensor(a!)``, and
                            its outputs alias no input unless the schema says so
test_autograd_registration  when an input requires grad, the op has an Autograd kernel (or
                            only a Composite one, whose ops autograd sees), so gradients do
                            not silently stop at it
test_faketensor             the fake kernel runs under FakeTensorMode and its outputs have the
                            real outputs' shapes, dtypes, devices and strides
test_aot_dispatch_dynamic   the op traces (tp.fx make_fx, on fake tensors) to a graph holding it
                            as one node, and the graph run on the real inputs gives the eager
                            results; with inputs that require grad, forward and backward are
                            traced together and the traced gradients equal the eager ones
                            (tp.compile's AOT path will take this place once it exists)
"""
from tensorplay import _C
from tensorplay._library.custom_ops import _regroup

__all__ = ['OpCheckError', 'opcheck']

_ALL = ('test_schema', 'test_autograd_registration', 'test_faketensor',
        'test_aot_dispatch_dynamic')


class OpCheckError(Exception):
    pass


def _tensors(values):
    for v in values:
        if isinstance(v, _C.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)


def _map(f, v):
    if isinstance(v, (list, tuple)):
        return type(v)(_map(f, x) for x in v)
    return f(v)


def _clone(v):
    return _map(lambda t: t.detach().clone() if isinstance(t, _C.Tensor) else t, v)


def _outputs(out):
    return list(_tensors(out if isinstance(out, (list, tuple)) else (out,)))


def _ptr(t):
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return None


def _bound(handle, args, kwargs):
    """(schema argument, value) pairs of a call."""
    schema_args = handle._schema.arguments
    values = list(args) + [kwargs.get(a.name) for a in schema_args[len(args):]]
    return list(zip(schema_args, values))


def _same(a, b):
    import tensorplay as tp
    if a.shape != b.shape:
        return False
    if a.is_floating_point():
        return bool(tp.allclose(a, b, rtol=0, atol=0, equal_nan=True))
    return bool(tp.equal(a, b))


def _test_schema(handle, args, kwargs):
    import tensorplay as tp
    args, kwargs = _clone(args), _clone(kwargs)
    bound = _bound(handle, args, kwargs)
    before = [(a, _clone(v)) for a, v in bound]
    out = handle(*args, **kwargs)
    for (a, v), (_, old) in zip(bound, before):
        written = a.alias_info is not None and a.alias_info.is_write
        if written:
            continue
        for new_t, old_t in zip(_tensors([v]), _tensors([old])):
            if new_t.device.type != 'meta' and not _same(new_t, old_t):
                raise OpCheckError(
                    f'{handle}: the op mutated its argument {a.name!r}, but its schema does not '
                    f'mark it as mutated (write "Tensor(a!) {a.name}" in the schema or list it '
                    'in mutates_args)')
    rets = handle._schema.returns
    aliased_ok = any(r.alias_info is not None for r in rets)
    if not aliased_ok:
        inputs = {_ptr(t) for t in _tensors([v for _, v in bound])} - {None, 0}
        for o in _outputs(out):
            if _ptr(o) in inputs:
                raise OpCheckError(f'{handle}: an output aliases an input, but the schema '
                                   'declares no aliasing; return a copy (x.clone())')


def _test_autograd_registration(handle, args, kwargs):
    import tensorplay as tp
    tensors = list(_tensors(list(args) + list(kwargs.values())))
    if not any(t.requires_grad for t in tensors) or not tp.is_grad_enabled():
        return
    if handle.namespace == 'aten':
        return  # built-in ops carry their derivative formulas
    keys = set(_C._op_kernel_keys(handle._op_id))
    K = _C.DispatchKey
    if K.Autograd in keys:
        return
    backends = keys & {K.CPU, K.CUDA}
    if backends or K.CompositeImplicitAutograd not in keys:
        raise OpCheckError(
            f'{handle}: an input requires grad but the op has no autograd registration: it has '
            f'kernels for {sorted(k.name for k in backends) or "no backend"} and none for '
            'Autograd, so no gradient would flow through it. Use register_autograd (custom_op) '
            'or impl an "Autograd" kernel; a kernel written with other ops can be registered as '
            '"CompositeImplicitAutograd" instead.')


def _test_faketensor(handle, args, kwargs):
    from tensorplay._subclasses.fake_tensor import FakeTensorMode
    real = handle(*_clone(args), **_clone(kwargs))
    mode = FakeTensorMode()

    def fake(v):
        if isinstance(v, _C.Tensor):
            f = mode.from_tensor(v.detach())
            return f.requires_grad_(v.requires_grad) if v.requires_grad else f
        return v
    fargs, fkwargs = _map(fake, list(args)), {k: _map(fake, v) for k, v in kwargs.items()}
    try:
        with mode:
            out = handle(*fargs, **fkwargs)
    except Exception as e:
        raise OpCheckError(f'{handle}: the op failed under FakeTensorMode: {e}') from e
    real_outs, fake_outs = _outputs(real), _outputs(out)
    if len(real_outs) != len(fake_outs):
        raise OpCheckError(f'{handle}: the fake kernel returned {len(fake_outs)} tensors, the '
                           f'real kernel {len(real_outs)}')
    for i, (r, f) in enumerate(zip(real_outs, fake_outs)):
        for what, rv, fv in (('shape', tuple(r.shape), tuple(f.shape)), ('dtype', r.dtype, f.dtype),
                             ('device', r.device, f.device), ('stride', r.stride(), f.stride())):
            if rv != fv:
                raise OpCheckError(
                    f'{handle}: output {i}: the fake kernel gives {what} {fv}, the real kernel '
                    f'{rv}; the fake kernel (register_fake) must produce the metadata of the '
                    'real output')


def _leaves(values):
    """Tensor lists flattened (make_fx traces tensors passed one by one)."""
    flat, lengths = [], []
    for v in values:
        if isinstance(v, (list, tuple)) and any(isinstance(t, _C.Tensor) for t in v):
            flat.extend(v)
            lengths.append(len(v))
        else:
            flat.append(v)
            lengths.append(None)
    return flat, lengths


def _compare(what, handle, got, want, rtol, atol):
    import tensorplay as tp
    got_t, want_t = _outputs(got), _outputs(want)
    if len(got_t) != len(want_t):
        raise OpCheckError(f'{handle}: {what}: {len(got_t)} tensors, eager gives {len(want_t)}')
    for i, (g, w) in enumerate(zip(got_t, want_t)):
        if g.shape != w.shape or g.dtype != w.dtype:
            raise OpCheckError(f'{handle}: {what}: output {i} is {g.dtype} {tuple(g.shape)}, '
                               f'eager gives {w.dtype} {tuple(w.shape)}')
        ok = tp.allclose(g, w, rtol=1e-5 if rtol is None else rtol,
                         atol=1e-8 if atol is None else atol, equal_nan=True) \
            if g.is_floating_point() else tp.equal(g, w)
        if not ok:
            raise OpCheckError(f'{handle}: {what}: output {i} differs from eager')


def _test_aot_dispatch_dynamic(handle, args, kwargs, rtol=None, atol=None):
    import tensorplay as tp
    from tensorplay.fx.experimental.proxy_tensor import make_fx
    names = [a.name for a in handle._schema.arguments[len(args):] if a.name in kwargs]
    values = list(args) + [kwargs[n] for n in names]
    flat, lengths = _leaves(values)

    def call(*leaves):
        vals = _regroup(leaves, lengths)
        return handle(*vals[:len(args)], **dict(zip(names, vals[len(args):])))

    def fresh():
        return [t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, _C.Tensor)
                else t for t in flat]
    try:
        gm = make_fx(call)(*fresh())
    except Exception as e:
        raise OpCheckError(f'{handle}: tracing the op on fake tensors failed: {e}') from e
    nodes = [n for n in gm.graph.nodes if n.op == 'call_function' and n.target is handle]
    if len(nodes) != 1:
        raise OpCheckError(f'{handle}: the traced graph holds the op {len(nodes)} times, '
                           'expected once (as one opaque node)')
    _compare('traced forward', handle, gm(*fresh()), call(*fresh()), rtol, atol)
    wants_grad = [i for i, t in enumerate(flat) if isinstance(t, _C.Tensor) and t.requires_grad]
    if not wants_grad or not tp.is_grad_enabled():
        return

    def forward_backward(*leaves):
        outs = [o for o in _outputs(call(*leaves)) if o.requires_grad]
        if not outs:
            return ()
        inputs = [leaves[i] for i in wants_grad]
        grads = tp.autograd.grad(outs, inputs, [tp.ones_like(o) for o in outs], allow_unused=True)
        return tuple(g if g is not None else tp.zeros_like(x) for g, x in zip(grads, inputs))
    try:
        gm_b = make_fx(forward_backward)(*fresh())
    except Exception as e:
        raise OpCheckError(f'{handle}: tracing forward and backward on fake tensors failed: '
                           f'{e}') from e
    _compare('traced backward', handle, gm_b(*fresh()), forward_backward(*fresh()), rtol, atol)


_TESTS = {'test_schema': _test_schema,
          'test_autograd_registration': _test_autograd_registration,
          'test_faketensor': _test_faketensor,
          'test_aot_dispatch_dynamic': _test_aot_dispatch_dynamic}


def opcheck(op, args, kwargs=None, *, test_utils=_ALL, raise_exception=True, rtol=None, atol=None):
    from tensorplay.library import _handle
    handle = _handle(op)
    kwargs = dict(kwargs or {})
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    unknown = set(test_utils) - set(_TESTS)
    if unknown:
        raise ValueError(f'opcheck: unknown test_utils {sorted(unknown)}; expected a subset of '
                         f'{list(_TESTS)}')
    results = {}
    for name in test_utils:
        try:
            if name == 'test_aot_dispatch_dynamic':
                _TESTS[name](handle, args, kwargs, rtol, atol)
            else:
                _TESTS[name](handle, args, kwargs)
            results[name] = 'SUCCESS'
        except Exception as e:
            if raise_exception:
                if isinstance(e, OpCheckError):
                    raise
                raise OpCheckError(f'opcheck({handle}, ...): {name} failed with {e} (scroll up '
                                   'for the stack trace)') from e
            results[name] = e
    return results
