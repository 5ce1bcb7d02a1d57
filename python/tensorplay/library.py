"""tp.library: operators defined by users, first-class in the registry (PyTorch's
``torch.library``).

Two ways in, as in PyTorch:

* ``custom_op`` turns an annotated Python function into an op (Note [Custom ops] in
  ``tensorplay/_library/custom_ops.py``), with ``register_kernel``, ``register_fake``,
  ``register_autograd``, ``register_autocast`` and ``register_torch_dispatch``;
* ``Library(ns, "DEF" | "FRAGMENT" | "IMPL")`` defines schemas (``define``) and sets a kernel
  per dispatch key (``impl``), the lower-level API.

Either way the op is a runtime op of the C++ registry (Note [Runtime ops]): called through
its handle ``tp.ops.<ns>.<name>.<overload>``, dispatched by the same dispatcher as the
built-in ops (autocast, autograd, dispatch modes, tensor subclasses, backends).

    @tp.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: tp.Tensor, factor: float) -> tp.Tensor:
        return x * factor

    @scale.register_fake
    def _(x, factor):
        return tp.empty_like(x)
"""
import functools

from tensorplay import _C
from tensorplay._library.custom_ops import CustomOpDef, custom_op
from tensorplay._library.fake_impl import get_ctx
from tensorplay._library.infer_schema import infer_schema
from tensorplay._library.triton import triton_op, wrap_triton
from tensorplay._library.tilelang import tile_lang_op, wrap_tilelang
from tensorplay._ops import OpOverload, OpOverloadPacket, Tag, ops

__all__ = ['Library', 'define', 'impl', 'custom_op', 'CustomOpDef', 'register_kernel',
           'register_fake', 'impl_abstract', 'register_autograd', 'register_autocast',
           'register_torch_dispatch', 'register_vmap', 'infer_schema', 'get_ctx', 'opcheck',
           'fallthrough_kernel', 'triton_op', 'wrap_triton', 'tile_lang_op',
           'wrap_tilelang', 'get_kernel']

_K = _C.DispatchKey
# PyTorch's dispatch key names -> ours (AutogradCPU and AutogradCUDA share the Autograd key,
# as CompositeExplicitAutograd and CompositeImplicitAutograd share the Composite one)
_KEY_NAMES = {
    'CPU': _K.CPU, 'CUDA': _K.CUDA, 'Meta': _K.Meta,
    'CompositeImplicitAutograd': _K.CompositeImplicitAutograd,
    'CompositeExplicitAutograd': _K.CompositeImplicitAutograd,
    'Autograd': _K.Autograd, 'AutogradCPU': _K.Autograd, 'AutogradCUDA': _K.Autograd,
    'Autocast': _K.Autocast, 'AutocastCPU': _K.Autocast, 'AutocastCUDA': _K.Autocast,
}
_DEVICE_TYPE_KEYS = {'cpu': 'CPU', 'cuda': 'CUDA', 'meta': 'Meta', None: 'CompositeExplicitAutograd'}

# namespaces a "DEF" library owns
_def_namespaces = set()
# (op id, key) -> the Python kernel set there, for FakeTensorMode (fake_kernel_of)
_kernels = {}


def _set_kernel(op_id, key, fn):
    _C._set_op_kernel(op_id, key, fn)
    if fn is None:
        _kernels.pop((op_id, key), None)
    else:
        _kernels[(op_id, key)] = fn


def fake_kernel_of(handle):
    """The kernel FakeTensorMode runs for a runtime op, inside the mode: its Meta kernel,
    else its Composite one (whose ops the mode then sees), else None."""
    op_id = handle._op_id
    return _kernels.get((op_id, _K.Meta)) or _kernels.get((op_id, _K.CompositeImplicitAutograd))


def fallthrough_kernel():
    """A dummy kernel PyTorch uses to mean "fall through"; not a kernel here."""
    raise NotImplementedError('fallthrough_kernel() should never be called.')


def _split_name(qualname):
    if '::' not in qualname:
        raise ValueError(f'expected an op name "namespace::name", got {qualname!r}')
    ns, rest = qualname.split('::', 1)
    name, _, overload = rest.partition('.')
    return ns, name, overload or 'default'


class Library:
    """A set of definitions and kernels of one namespace; ``_destroy()`` (or the object
    being collected) takes them back.

    kind: "DEF" (the namespace is new and this library owns it), "FRAGMENT" (adds to a
    namespace), "IMPL" (only kernels, for ops defined elsewhere); ``dispatch_key`` is the
    default key of ``impl``."""

    def __init__(self, ns, kind, dispatch_key=''):
        if kind not in ('IMPL', 'DEF', 'FRAGMENT'):
            raise ValueError(f'Unsupported kind: {kind}')
        if not isinstance(ns, str) or not ns.isidentifier():
            raise ValueError(f'Library: invalid namespace {ns!r}')
        if kind == 'DEF':
            if ns in _def_namespaces or ns == 'aten':
                raise RuntimeError(
                    f'Only a single TORCH_LIBRARY can be used to register the namespace {ns}; '
                    'please put all of your definitions in a single Library, or use '
                    '"FRAGMENT" to add to an existing one.')
            _def_namespaces.add(ns)
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._defined = []        # op ids this library defined
        self._handles = {}        # name (or name.overload) -> OpOverload
        self._kernels = []        # (op id, key) this library set
        self._overrides = []      # (op id, key) of built-in ops whose kernel it replaced
        self._fallbacks = []      # keys whose fallback it set
        self._destroyed = False

    def __repr__(self):
        return f'Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>'

    def define(self, schema, alias_analysis='', *, tags=()):
        """Defines an op from its schema (``"foo(Tensor x) -> Tensor"``, the namespace
        optional); returns its name."""
        if self.kind == 'IMPL':
            raise RuntimeError('define: an "IMPL" library cannot define ops; use "DEF" or '
                               '"FRAGMENT"')
        if alias_analysis not in ('', 'FROM_SCHEMA', 'CONSERVATIVE'):
            raise RuntimeError(f'Invalid alias_analysis type {alias_analysis}')
        text = schema if '::' in schema.split('(', 1)[0] else f'{self.ns}::{schema}'
        parsed = _C._parse_schema(text)
        ns = parsed.name.split('::', 1)[0]
        if ns != self.ns:
            raise ValueError(f'define: {schema!r} is not in namespace {self.ns!r}')
        if isinstance(tags, Tag):
            tags = (tags,)
        op_id = _C._define_op(text, ','.join(t.name for t in tags))
        name = parsed.name.split('::', 1)[1]
        overload = parsed.overload_name or 'default'
        handle = OpOverload(op_id, 0)
        handle.tags = sorted(set(tags))
        getattr(ops, self.ns)._packet(name)._add(overload, handle)
        _C._set_op_handle(op_id, 0, handle)
        self._defined.append(op_id)
        self._handles[name if overload == 'default' else f'{name}.{overload}'] = handle
        return name

    def _resolve(self, op_name):
        if isinstance(op_name, OpOverload):
            return op_name
        if isinstance(op_name, OpOverloadPacket):
            return op_name.default
        if isinstance(op_name, CustomOpDef):
            return op_name._opoverload
        ns, name, overload = _split_name(op_name if '::' in op_name else f'{self.ns}::{op_name}')
        try:
            return getattr(getattr(getattr(ops, ns), name), overload)
        except AttributeError:
            raise RuntimeError(f"impl: operator {ns}::{name}.{overload} does not exist; define "
                               'it first') from None

    def impl(self, op_name, fn, dispatch_key='', *, with_keyset=False, allow_override=False):
        """Sets ``fn`` as the op's kernel at ``dispatch_key`` ("CPU", "CUDA", "Meta",
        "CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd", ...)."""
        if not callable(fn):
            raise TypeError(f'Input function is required to be a callable but found type {type(fn)}')
        key_name = dispatch_key or self.dispatch_key or 'CompositeImplicitAutograd'
        if key_name not in _KEY_NAMES:
            raise ValueError(f'impl: unsupported dispatch key {key_name!r}; one of '
                             f'{sorted(_KEY_NAMES)}')
        handle = self._resolve(op_name)
        key = _KEY_NAMES[key_name]
        if with_keyset:  # fn(keyset, *args): the keyset is what get_kernel's call_boxed takes
            user_fn, keyset = fn, _C.DispatchKeySet(key)

            @functools.wraps(user_fn)
            def fn(*args, **kwargs):
                return user_fn(keyset, *args, **kwargs)
        if handle.namespace == 'aten':  # Note [Kernel overrides]: until this library goes
            if key not in (_K.CPU, _K.CUDA, _K.Meta, _K.CompositeImplicitAutograd):
                raise NotImplementedError(
                    f'impl: {handle}: a built-in op\'s {key_name} behaviour is compiled in; '
                    'only its CPU, CUDA, Meta or Composite kernel can be overridden')
            _C._override_kernel(handle._op_id, key, fn)
            self._overrides.append((handle._op_id, key))
            return
        if fn is fallthrough_kernel:
            fn = None
        _set_kernel(handle._op_id, key, fn)
        self._kernels.append((handle._op_id, key))

    def fallback(self, fn, dispatch_key='', *, with_keyset=False):
        """Sets ``fn(op, *args, **kwargs)`` as the kernel of every op that has none for
        ``dispatch_key`` (a backend key); only for a library of the global namespace "_"."""
        if self.ns != '_':
            raise ValueError(f'fallback can only be registered using library fragment on the '
                             f'global namespace "_" but it is {self.ns}')
        key_name = dispatch_key or self.dispatch_key
        if key_name not in _KEY_NAMES:
            raise ValueError(f'fallback: unsupported dispatch key {key_name!r}')
        key = _KEY_NAMES[key_name]
        keyset = _C.DispatchKeySet(key)

        def boxed(op, args, kwargs):
            return fn(keyset, op, *args, **kwargs) if with_keyset else fn(op, *args, **kwargs)
        _C._set_fallback(key, None if fn is fallthrough_kernel else boxed)
        self._fallbacks.append(key)

    def _destroy(self):
        if self._destroyed:
            return
        self._destroyed = True
        for op_id, key in self._kernels:
            if op_id not in self._defined:
                try:
                    _set_kernel(op_id, key, None)
                except RuntimeError:
                    pass
        for op_id, key in reversed(self._overrides):
            _C._override_kernel(op_id, key, None)
        self._overrides = []
        for key in self._fallbacks:
            _C._set_fallback(key, None)
        self._fallbacks = []
        for op_id in self._defined:
            _C._undefine_op(op_id)
            for k in list(_kernels):
                if k[0] == op_id:
                    del _kernels[k]
        for qual, handle in self._handles.items():
            packet = handle.overloadpacket
            packet._overloads.pop(handle._overloadname, None)
            packet.__dict__.pop(handle._overloadname, None)
            if not packet._overloads:
                ns = getattr(ops, self.ns)
                ns._packets.pop(packet._opname, None)
                ns.__dict__.pop(packet._opname, None)
        if self.kind == 'DEF':
            _def_namespaces.discard(self.ns)
        self._defined, self._handles, self._kernels = [], {}, []

    def __del__(self):
        try:
            self._destroy()
        except Exception:
            pass


# libraries made by the functional API (define / impl / register_*) without lib=: they live
# for the process, one per namespace
_keep = {}


def _lib_for(qualname, lib):
    if lib is not None:
        return lib
    ns = qualname.split('::', 1)[0] if isinstance(qualname, str) else qualname.namespace
    if ns not in _keep:
        _keep[ns] = Library(ns, 'FRAGMENT')
    return _keep[ns]


def define(qualname, schema, *, lib=None, tags=()):
    """Defines op ``qualname`` ("mylib::foo") with ``schema`` ("(Tensor x) -> Tensor")."""
    if not isinstance(qualname, str) or '::' not in qualname:
        raise ValueError(f'define(qualname, schema): expected qualname "namespace::name", '
                         f'got {qualname!r}')
    ns, name = qualname.split('::', 1)
    return _lib_for(qualname, lib).define(name + schema, tags=tags)


def _custom(op):
    """The CustomOpDef behind ``op`` (a name, handle or CustomOpDef), or None."""
    from tensorplay._library.custom_ops import _defs
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, OpOverload):
        op = f'{op.namespace}::{op._opname}'
    elif isinstance(op, OpOverloadPacket):
        op = op._qualified_op_name
    return _defs.get(op)


def _handle(op):
    if isinstance(op, CustomOpDef):
        return op._opoverload
    if isinstance(op, OpOverload):
        return op
    if isinstance(op, OpOverloadPacket):
        return op.default
    ns, name, overload = _split_name(op)
    try:
        return getattr(getattr(getattr(ops, ns), name), overload)
    except AttributeError:
        raise ValueError(f'operator {op} does not exist') from None


def impl(qualname, types, func=None, *, lib=None):
    """Registers ``func`` as the kernel of ``qualname`` for ``types`` (device types "cpu",
    "cuda", or dispatch key names)."""
    def register(func):
        for t in ([types] if isinstance(types, str) or types is None else types):
            key = _DEVICE_TYPE_KEYS.get(t, t)
            _lib_for(qualname, lib).impl(_handle(qualname), func, key)
        return func
    return register if func is None else register(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """The kernel of ``op`` for ``device_types`` (None: every device)."""
    def register(func):
        custom = _custom(op)
        if custom is not None:
            return custom.register_kernel(device_types, func)
        return impl(op, device_types, func, lib=lib)
    return register if func is None else register(func)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1):
    """The fake kernel of ``op`` (its Meta kernel: shapes, dtypes, strides from the inputs')."""
    def register(func):
        custom = _custom(op)
        if custom is not None:
            return custom.register_fake(func)
        handle = _handle(op)

        @functools.wraps(func)
        def meta(*args, **kwargs):
            from tensorplay._library.fake_impl import FakeImplCtx, set_ctx_getter
            with set_ctx_getter(FakeImplCtx(handle)):
                return func(*args, **kwargs)
        _lib_for(op, lib).impl(handle, meta, 'Meta')
        return func
    return register if func is None else register(func)


class _SafeKernelFunction:
    """One dispatch key's kernel of an op (``get_kernel``): ``call_boxed(keyset, *args,
    **kwargs)`` runs it below every other key, even while a Library overrides it."""

    def __init__(self, handle, key):
        self._handle, self._key = handle, key

    def call_boxed(self, keyset, *args, **kwargs):
        return _C._call_kernel_boxed(self._handle, self._key, args, kwargs)

    def __repr__(self):
        return f'SafeKernelFunction(op={self._handle}, dispatch_key={self._key.name})'


def get_kernel(op, dispatch_key):
    """The kernel ``op`` has for ``dispatch_key`` ("CPU", "CUDA", "Meta", a Composite key, or
    a DispatchKey): typically taken before overriding it, to call from the override."""
    handle = _handle(op)
    key = _KEY_NAMES.get(dispatch_key, dispatch_key) if isinstance(dispatch_key, str) else dispatch_key
    if not isinstance(key, _K) or key not in (_K.CPU, _K.CUDA, _K.Meta, _K.CompositeImplicitAutograd):
        raise ValueError(f'get_kernel: {dispatch_key!r} is not a backend dispatch key')
    return _SafeKernelFunction(handle, key)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """The older name of register_fake."""
    return register_fake(qualname, func, lib=lib)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Makes ``op`` differentiable with ``backward`` (and ``setup_context``)."""
    custom = _custom(op)
    if custom is None:
        raise NotImplementedError(
            f'register_autograd({op}): only for ops made with tp.library.custom_op; for an '
            'op defined with Library.define, impl an "Autograd" kernel that calls an '
            'autograd.Function')
    custom.register_autograd(backward, setup_context=setup_context)


def register_vmap(op, func=None, /, *, lib=None):
    """The batching rule of ``op`` under ``tp.func.vmap``: ``func(info, in_dims, *args,
    **kwargs) -> (outputs, out_dims)`` (see ``CustomOpDef.register_vmap``)."""
    def register(func):
        custom = _custom(op)
        if custom is not None:
            return custom.register_vmap(func)
        from tensorplay.func._vmap import register_vmap_rule
        register_vmap_rule(_handle(op), func)
        return func
    return register if func is None else register(func)


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """Under autocast of ``device_type``, ``op``'s floating-point inputs are cast to
    ``cast_inputs`` and it runs with autocast off."""
    custom = _custom(op)
    if custom is None:
        handle = _handle(op)
        key_lib = _lib_for(op, lib)
        below = _C.DispatchKeySet(_K.Autocast)

        def autocast_kernel(*args, **kwargs):
            import tensorplay as tp
            with _C._ExcludeDispatchKeyGuard(below):
                if not tp.is_autocast_enabled(device_type):
                    return handle(*args, **kwargs)

                def cast(v):
                    if isinstance(v, _C.Tensor) and v.is_floating_point() and \
                            v.device.type == device_type:
                        return v.to(cast_inputs)
                    return v
                with tp.autocast(device_type, enabled=False):
                    return handle(*[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})
        key_lib.impl(handle, autocast_kernel, 'Autocast')
        return
    custom.register_autocast(device_type, cast_inputs)


def _add_rule(handle, cls, fn):
    rules = getattr(handle, '_torch_dispatch_rules', None)
    if rules is None:
        rules = {}
        handle._torch_dispatch_rules = rules  # read by the Python key's handler
    rules[cls] = fn


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """A rule for ``op`` used instead of ``torch_dispatch_class.__torch_dispatch__`` (a
    TorchDispatchMode subclass: ``func(mode, func, types, args, kwargs)``; a tensor subclass:
    ``func(cls, func, types, args, kwargs)``)."""
    def register(func):
        handle = _handle(op)
        _add_rule(handle, torch_dispatch_class, func)
        return func
    return register if func is None else register(func)


def opcheck(op, args, kwargs=None, *, test_utils=('test_schema', 'test_autograd_registration',
                                                  'test_faketensor', 'test_aot_dispatch_dynamic'),
            raise_exception=True, rtol=None, atol=None):
    """Checks that ``op`` was registered correctly on one sample input (see
    ``tensorplay._library.opcheck``); returns {test name: "SUCCESS" or the exception}."""
    from tensorplay._library.opcheck import opcheck as _opcheck
    return _opcheck(op, args, kwargs, test_utils=test_utils, raise_exception=raise_exception,
                    rtol=rtol, atol=atol)
