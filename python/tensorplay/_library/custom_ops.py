"""Custom operators defined from Python functions (``tp.library.custom_op``).

Note [Custom ops]
A custom op is a runtime op of the C++ registry (Note [Runtime ops]): one schema, one op
handle ``tp.ops.<ns>.<name>.default``, and a boxed kernel per dispatch key, each a Python
function installed here:
  Autocast  (only after register_autocast) casts the floating-point tensors of the device's
            autocast region to the registered dtype and calls the op again below Autocast;
  Autograd  wraps the call in a Function whose backward is register_autograd's (or raises
            PyTorch's "no autograd formula" error when none is registered), calling the op
            again below Autograd;
  CPU/CUDA  the kernel registered for the device type (or for every device), checked not to
            return an input;
  Meta      the fake kernel (register_fake): what runs on meta tensors and under
            FakeTensorMode (whose tensors are meta tensors in C++).
Dispatch modes and tensor subclasses see the op as one call of its handle, as for any op,
and register_torch_dispatch rules stand in for a type's __torch_dispatch__ (the Python key's
handler reads them from the handle).
"""
import contextlib
import functools

from tensorplay import _C
from tensorplay._library.fake_impl import FakeImplCtx, set_ctx_getter
from tensorplay._library.infer_schema import infer_schema

__all__ = ['CustomOpDef', 'custom_op']

_K = _C.DispatchKey
_DEVICE_KEYS = {'cpu': _K.CPU, 'cuda': _K.CUDA}

# qualified name -> CustomOpDef, so that defining the same name again replaces the op
# (PyTorch's custom_op does the same: notebooks and tests re-run definitions)
_defs = {}


def _flat_tensors(values):
    for v in values:
        if isinstance(v, _C.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, _C.Tensor))


class CustomOpDef:
    """The op ``custom_op`` returns: calling it calls the op; its methods register the
    op's kernels and rules."""

    def __init__(self, namespace, name, schema, fn, tags=()):
        from tensorplay.library import Library
        self._namespace = namespace
        self._name = name
        self._schema = schema
        self._init_fn = fn
        self._backend_fns = {}          # device type (None: every device) -> kernel
        self._abstract_fn = None
        self._setup_context_fn = None
        self._backward_fn = None
        self._torch_dispatch_fns = {}
        self._autocast_dtypes = {}
        self._disabled_kernel = set()
        self._lib = Library(namespace, 'FRAGMENT')
        self._lib.define(f'{name}{schema}', tags=tags)
        self._opoverload = self._lib._handles[name]
        self._install()
        functools.update_wrapper(self, fn)

    @property
    def _qualname(self):
        return f'{self._namespace}::{self._name}'

    def __repr__(self):
        return f'<CustomOpDef({self._qualname})>'

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    # -- kernels -------------------------------------------------------------------------

    def register_kernel(self, device_types, fn=None, /):
        """The kernel for ``device_types`` ("cpu", "cuda", a sequence of them, or None for
        every device)."""
        def register(fn):
            types = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for dt in types:
                if dt is not None and dt not in _DEVICE_KEYS:
                    raise ValueError(f'{self._qualname}: register_kernel: unknown device type '
                                     f"{dt!r} (expected 'cpu' or 'cuda')")
                self._backend_fns[dt] = fn
                self._install_backend(dt)
            return fn
        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        """The fake kernel: computes the outputs' metadata from the inputs' (runs on meta
        tensors and FakeTensors; may call ``tp.library.get_ctx()``)."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """Makes the op differentiable: ``setup_context(ctx, inputs, output)`` saves what
        ``backward(ctx, *grads)`` needs; backward returns one gradient per input (None for
        non-tensor inputs)."""
        if not callable(backward):
            raise TypeError(f'{self._qualname}: register_autograd: backward must be callable')
        if self._schema_is_mutable():
            raise RuntimeError(f'{self._qualname}: register_autograd does not support ops '
                               'that mutate their inputs')
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    def register_vmap(self, func=None, /):
        """The op's batching rule under ``tp.func.vmap``: ``func(info, in_dims, *args,
        **kwargs)`` gets whole batches (``in_dims[i]`` the batch dim of argument i, None
        when not batched; ``info.batch_size``, ``info.randomness``) and returns
        ``(outputs, out_dims)``. Without one, vmap runs the op once per sample."""
        def register(func):
            from tensorplay.func._vmap import register_vmap_rule
            register_vmap_rule(self._opoverload, func)
            self._vmap_fn = func
            return func
        return register if func is None else register(func)

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        """A rule used instead of ``torch_dispatch_class.__torch_dispatch__`` for this op."""
        def register(fn):
            from tensorplay.library import _add_rule
            _add_rule(self._opoverload, torch_dispatch_class, fn)
            self._torch_dispatch_fns[torch_dispatch_class] = fn
            return fn
        return register if fn is None else register(fn)

    def register_autocast(self, device_type, cast_inputs):
        """Inside an autocast region of ``device_type``, the op's floating-point tensors of
        that device are cast to ``cast_inputs`` and the op runs with autocast off."""
        if device_type not in _DEVICE_KEYS:
            raise ValueError(f'{self._qualname}: register_autocast: unknown device type '
                             f'{device_type!r}')
        from tensorplay.library import _set_kernel
        self._autocast_dtypes[device_type] = cast_inputs
        _set_kernel(self._opoverload._op_id, _K.Autocast, self._autocast_kernel)

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type, enabled=True):
        """Within the block, the kernel registered for ``device_type`` is (not) used: a
        disabled one falls back to the kernel for every device."""
        was_disabled = device_type in self._disabled_kernel
        if enabled:
            self._disabled_kernel.discard(device_type)
        else:
            self._disabled_kernel.add(device_type)
        self._install_backend(device_type)
        try:
            yield
        finally:
            if was_disabled:
                self._disabled_kernel.add(device_type)
            else:
                self._disabled_kernel.discard(device_type)
            self._install_backend(device_type)

    # -- the kernels installed at each key (Note [Custom ops]) ------------------------------

    def _schema_is_mutable(self):
        return self._opoverload._schema.is_mutable

    def _install(self):
        from tensorplay.library import _set_kernel
        op_id = self._opoverload._op_id
        _set_kernel(op_id, _K.Meta, self._meta_kernel)
        _set_kernel(op_id, _K.Autograd, self._autograd_kernel)

    def _install_backend(self, device_type):
        """Puts the user's kernel itself at the key (no Python wrapper on the hot path): the
        one for every device at Composite, a device's own (unless disabled) at its key. The
        dispatcher checks that outputs alias no input (Note [Runtime ops])."""
        from tensorplay.library import _set_kernel
        op_id = self._opoverload._op_id
        if device_type is None:
            _set_kernel(op_id, _K.CompositeImplicitAutograd, self._backend_fns.get(None))
            return
        fn = None if device_type in self._disabled_kernel else self._backend_fns.get(device_type)
        _set_kernel(op_id, _DEVICE_KEYS[device_type], fn)

    def _meta_kernel(self, *args, **kwargs):
        if self._abstract_fn is None:
            raise RuntimeError(
                f'There was no fake impl registered for {self}. This is necessary for '
                'tp.compile/export/fx tracing to work. Please use '
                f'`{self._init_fn.__name__}.register_fake` to add an fake impl.')
        with set_ctx_getter(FakeImplCtx(self._opoverload)):
            return self._abstract_fn(*args, **kwargs)

    def _autocast_kernel(self, *args, **kwargs):
        import tensorplay as tp
        tensors = list(_flat_tensors(list(args) + list(kwargs.values())))
        dt = tensors[0].device.type if tensors else 'cpu'
        dtype = self._autocast_dtypes.get(dt)
        with _C._ExcludeDispatchKeyGuard(_C.DispatchKeySet(_K.Autocast)):
            if dtype is None or not tp.is_autocast_enabled(dt):
                return self._opoverload(*args, **kwargs)

            def cast(v):
                if isinstance(v, _C.Tensor) and v.is_floating_point() and v.device.type == dt:
                    return v.to(dtype)
                if isinstance(v, (list, tuple)):
                    return type(v)(cast(x) for x in v)
                return v
            args = tuple(cast(a) for a in args)
            kwargs = {k: cast(v) for k, v in kwargs.items()}
            with tp.autocast(dt, enabled=False):
                return self._opoverload(*args, **kwargs)

    def _autograd_kernel(self, *args, **kwargs):
        fn_cls = self.__dict__.get('_function_cls')
        if fn_cls is None:
            fn_cls = self._function_cls = _make_function(self)
        schema_args = self._opoverload._schema.arguments
        n_pos = len(args)
        inputs = list(args) + [kwargs[a.name] for a in schema_args[n_pos:]]
        leaves, lengths = [], []
        for v in inputs:  # tensor lists are flattened so that their tensors are Function inputs
            if isinstance(v, (list, tuple)) and any(isinstance(t, _C.Tensor) for t in v):
                leaves.extend(v)
                lengths.append(len(v))
            else:
                leaves.append(v)
                lengths.append(None)
        fn_cls._tp_pending = (n_pos, lengths)
        return fn_cls.apply(*leaves)


def _regroup(leaves, lengths):
    out, i = [], 0
    for n in lengths:
        if n is None:
            out.append(leaves[i])
            i += 1
        else:
            out.append(list(leaves[i:i + n]))
            i += n
    return out


def _make_function(opdef):
    """The autograd Function of one custom op (its node class is PyTorch's
    GeneratedBackwardFor_<ns>_<name>_defaultBackward)."""
    from tensorplay.autograd import Function
    op = opdef._opoverload
    schema_args = op._schema.arguments
    below_autograd = _C.DispatchKeySet(_K.Autograd)

    def forward(ctx, *leaves):
        n_pos, lengths = type(ctx)._forward_cls._tp_pending
        inputs = _regroup(leaves, lengths)
        ctx._tp_lengths = lengths
        args = inputs[:n_pos]
        kwargs = {a.name: v for a, v in zip(schema_args[n_pos:], inputs[n_pos:])}
        with _C._ExcludeDispatchKeyGuard(below_autograd):
            out = op(*args, **kwargs)
        if opdef._setup_context_fn is not None:
            opdef._setup_context_fn(ctx=ctx, inputs=tuple(inputs), output=out)
        return out

    def backward(ctx, *grads):
        if opdef._backward_fn is None:
            raise RuntimeError(f'Trying to backward through {op} but no autograd formula was '
                               'registered. Please use register_autograd to add one.')
        result = opdef._backward_fn(ctx, *grads)
        lengths = ctx._tp_lengths
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != len(lengths):
            raise RuntimeError(
                f'{opdef._qualname}: the backward registered with register_autograd returned '
                f'{len(result)} gradients, expected one per input ({len(lengths)}); return None '
                'for inputs that have no gradient.')
        flat = []
        for g, n, a in zip(result, lengths, schema_args):
            if n is None:
                if g is not None and not isinstance(g, _C.Tensor):
                    raise RuntimeError(f'{opdef._qualname}: the backward returned a '
                                       f'{type(g).__name__} as the gradient of {a.name}; '
                                       'expected a Tensor or None')
                if g is not None and not str(a.type).startswith('Tensor'):
                    raise RuntimeError(f'{opdef._qualname}: the backward returned a gradient '
                                       f'for {a.name}, which is not a Tensor; return None')
                flat.append(g)
            else:
                g = [None] * n if g is None else list(g)
                if len(g) != n:
                    raise RuntimeError(f'{opdef._qualname}: the backward returned {len(g)} '
                                       f'gradients for the list {a.name} of {n} tensors')
                flat.extend(g)
        return tuple(flat)

    name = f'GeneratedBackwardFor_{opdef._namespace}_{opdef._name}_default'
    return type(name, (Function,), {'forward': staticmethod(forward),
                                    'backward': staticmethod(backward),
                                    '__module__': __name__})


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=()):
    """Makes ``fn`` an op ``name`` ("mylib::foo") of the registry: its schema inferred from
    the annotations (or given), ``mutates_args`` naming the inputs it writes ("unknown" for
    all); ``fn`` becomes the kernel for ``device_types`` (every device when None)."""
    def inner(fn):
        if not isinstance(name, str) or '::' not in name:
            raise ValueError(f'custom_op: expected the name as "namespace::op", got {name!r}')
        namespace, opname = name.split('::', 1)
        if '.' in opname:
            raise ValueError(f'custom_op: {name!r}: the name may not name an overload')
        if schema is None:
            schema_text = infer_schema(fn, mutates_args=mutates_args)
        else:
            if mutates_args != 'unknown' and mutates_args:
                raise ValueError('custom_op: mutates_args must be empty (or "unknown") when a '
                                 'schema is given: the schema says what is mutated')
            schema_text = schema
        old = _defs.get(name)
        if old is not None:
            old._lib._destroy()
        opdef = CustomOpDef(namespace, opname, schema_text, fn, tags)
        opdef.register_kernel(device_types)(fn)
        _defs[name] = opdef
        return opdef
    return inner if fn is None else inner(fn)
