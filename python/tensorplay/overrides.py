"""``__torch_function__``: how tensor-likes and TorchFunctionModes override TensorPlay's
public API (PyTorch's ``torch.overrides``).

Every public function (``tp.add``, ``tp.linalg.norm``, ``tp.nn.functional.linear``),
Tensor method (``x.add``, ``x + y``) and Tensor property (``x.shape``, ``x.grad``) hands its
call to ``__torch_function__(func, types, args, kwargs)`` when an argument's type defines
one (a Tensor subclass, or any tensor-like object) or a ``TorchFunctionMode`` is active.
The public objects are wrappers installed at import (Note [Torch function wrappers] in
csrc/python/torch_function.cpp); with plain tensors a call pays one type test per argument.

    class Logged(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            print(func.__name__)
            return func(*args, **(kwargs or {}))
"""
import contextlib
import functools
import types as _types

from tensorplay import _C

__all__ = ['get_ignored_functions', 'get_overridable_functions', 'get_default_nowrap_functions',
           'handle_torch_function', 'has_torch_function', 'has_torch_function_unary',
           'has_torch_function_variadic', 'is_tensor_like', 'is_tensor_method_or_property',
           'wrap_torch_function', 'TorchFunctionMode', 'BaseTorchFunctionMode',
           'enable_reentrant_dispatch']

has_torch_function = _C._has_torch_function
has_torch_function_unary = _C._has_torch_function_unary
has_torch_function_variadic = _C._has_torch_function_variadic
_get_overloaded_args = _C._get_overloaded_args
_is_torch_function_mode_enabled = _C._is_torch_function_mode_enabled
_len_torch_function_stack = _C._len_torch_function_stack
_get_function_stack_at = _C._get_function_stack_at
_push_on_torch_function_stack = _C._push_on_torch_function_stack
_pop_torch_function_stack = _C._pop_torch_function_stack


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Calls the ``__torch_function__`` of the active mode and of the overloaded arguments
    among ``relevant_args`` (as a public function does when ``has_torch_function``)."""
    return _C._handle_torch_function(public_api, tuple(relevant_args), args, kwargs)


def is_tensor_like(inp):
    """True for a Tensor and for any object whose type defines ``__torch_function__``."""
    return type(inp) is _C.Tensor or hasattr(inp, '__torch_function__')


def wrap_torch_function(dispatcher):
    """Decorator: the function hands its calls to ``__torch_function__`` of the arguments
    that ``dispatcher(*args, **kwargs)`` returns, when they overload."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


class TorchFunctionMode:
    """Base class of torch function modes: override ``__torch_function__(func, types, args,
    kwargs)``; enter with ``with mode:``. While it handles a call the mode is off the stack,
    so calling ``func`` there runs the function (or hands it to the next mode)."""
    inner = None

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        import warnings
        warnings.warn('`Mode.push()` is no longer necessary and can be replaced with just '
                      '`with Mode()`')
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every function unchanged (a base for modes that watch calls)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _get_current_function_mode():
    n = _C._len_torch_function_stack()
    return _C._get_function_stack_at(n - 1) if n > 0 else None


def _get_current_function_mode_stack():
    return [_C._get_function_stack_at(i) for i in range(_C._len_torch_function_stack())]


def _push_mode(mode):
    _C._push_on_torch_function_stack(mode)


def _pop_mode():
    return _C._pop_torch_function_stack()


@contextlib.contextmanager
def _pop_mode_temporarily():
    old = _pop_mode()
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def enable_reentrant_dispatch():
    yield  # our Python dispatch key is always re-entrant


# ---- the public API's wrappers --------------------------------------------------------

_OVERRIDABLE = {}  # namespace -> [public wrappers]
_IGNORED = set()

# Functions that take no tensor-like and are not intercepted (PyTorch's ignored functions
# minus the factories, which modes do see).
_IGNORED_NAMES = frozenset("""
    is_tensor is_storage set_default_dtype get_default_dtype set_default_device get_default_device
    manual_seed seed initial_seed get_rng_state set_rng_state fork_rng
    is_grad_enabled set_grad_enabled no_grad enable_grad inference_mode is_inference_mode_enabled
    set_printoptions get_printoptions printoptions save load compile typename
    use_deterministic_algorithms are_deterministic_algorithms_enabled
    is_deterministic_algorithms_warn_only_enabled set_float32_matmul_precision
    get_float32_matmul_precision set_num_threads get_num_threads set_num_interop_threads
    get_num_interop_threads is_autocast_enabled set_autocast_enabled get_autocast_dtype
    set_autocast_dtype autocast can_cast promote_types result_type_of finfo iinfo
    broadcast_shapes set_anomaly_enabled is_anomaly_enabled
    handle_torch_function has_torch_function has_torch_function_unary has_torch_function_variadic
    get_autocast_cpu_dtype set_autocast_cpu_dtype is_autocast_cpu_enabled set_autocast_cpu_enabled
    get_autocast_gpu_dtype set_autocast_gpu_dtype get_deterministic_debug_mode
    set_deterministic_debug_mode set_warn_always is_warn_always_enabled
    is_anomaly_check_nan_enabled parse_schema thread_safe_generator
""".split())
# Conversions: modes see them, but their data argument (a sequence, an array, a foreign
# tensor with its own __torch_function__) never overloads them.
_CONVERSIONS = frozenset('tensor as_tensor asarray from_dlpack from_numpy frombuffer'.split())
# Tensor attributes that stay as they are (construction, the protocols themselves, identity).
_IGNORED_TENSOR = frozenset("""
    __new__ __init__ __init_subclass__ __subclasshook__ __class__ __getattribute__ __getattr__
    __setattr__ __delattr__ __dir__ __sizeof__ __dict__ __weakref__ __hash__ __doc__ __module__
    __torch_function__ __torch_dispatch__ _make_subclass _make_wrapper_subclass as_subclass
    __reduce__ __class_getitem__ __slots__
""".split())


def _plain_callable(v):
    return isinstance(v, (_types.FunctionType, _types.BuiltinFunctionType)) or \
        type(v).__name__ in ('nb_func', 'nb_method')


def _wrap_function(fn, module, name, qualname=None, method=False):
    w = (_C._TorchMethod if method else _C._TorchFunction)(fn, modes_only=name in _CONVERSIONS)
    w.__name__ = name
    w.__qualname__ = qualname or name
    w.__module__ = module
    w.__doc__ = getattr(fn, '__doc__', None)
    w.__wrapped__ = fn
    return w


def _wrap_namespace(ns, module_name):
    out = _OVERRIDABLE.setdefault(ns, [])
    for name, v in list(vars(ns).items()):
        if name.startswith('__') or isinstance(v, (_C._TorchFunction, type)) or not _plain_callable(v):
            continue
        if name in _IGNORED_NAMES:
            _IGNORED.add(v)
            continue
        w = _wrap_function(v, module_name, name)
        setattr(ns, name, w)
        out.append(w)


def _wrap_tensor():
    T = _C.Tensor
    out = _OVERRIDABLE.setdefault(T, [])
    for name, v in list(vars(T).items()):
        if name in _IGNORED_TENSOR or isinstance(v, (_C._TorchMethod, _C._TorchProperty)):
            continue
        if isinstance(v, property) or type(v).__name__ == 'getset_descriptor':
            w = _C._TorchProperty(v)
            w.__name__ = name
            w.__qualname__ = f'Tensor.{name}'
            w.__doc__ = getattr(v, '__doc__', None)
            setattr(T, name, w)
            out.append(w)
        elif _plain_callable(v) and not isinstance(v, (staticmethod, classmethod)):
            w = _wrap_function(v, 'tensorplay', name, f'Tensor.{name}', method=True)
            setattr(T, name, w)
            out.append(w)


def _install(tp):
    """Wraps the public API (called once, at the end of tensorplay's import)."""
    import sys
    _wrap_tensor()
    _wrap_namespace(tp, 'tensorplay')
    for mod in ('tensorplay.linalg', 'tensorplay.nn.functional', 'tensorplay.special',
                'tensorplay.fft'):
        if mod in sys.modules:
            _wrap_namespace(sys.modules[mod], mod)


def get_ignored_functions():
    """Public functions that take no tensor-like and are never overridden."""
    return set(_IGNORED)


def get_overridable_functions():
    """{namespace: [public functions, methods and properties]} that ``__torch_function__``
    can override."""
    return {k: list(v) for k, v in _OVERRIDABLE.items()}


@functools.lru_cache(None)
def get_default_nowrap_functions():
    """Functions whose results Tensor.__torch_function__ returns without converting them
    to the subclass (they hand back tensors that already have a class)."""
    T = _C.Tensor
    return {getattr(T, name).__get__ for name in ('_base', 'grad', '_grad') if hasattr(T, name)}


def is_tensor_method_or_property(func):
    return func in _OVERRIDABLE.get(_C.Tensor, ()) or getattr(func, '__name__', None) == '__get__'


def _convert(ret, cls):
    if cls is _C.Tensor:
        return ret
    if isinstance(ret, _C.Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        return type(ret)(_convert(r, cls) for r in ret)
    return ret


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor.__torch_function__: runs ``func`` with subclass handlers off and returns its
    tensors as instances of ``cls``. A subclass overriding it calls this with ``super()``."""
    if kwargs is None:
        kwargs = {}
    # our wrappers never hand a call to a plain Tensor; another library (torch) that takes a
    # tp.Tensor for a tensor-like of its own gets NotImplemented, not a recursion
    if cls is _C.Tensor or not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with _C.DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)


_C.Tensor.__torch_function__ = classmethod(_tensor_torch_function)
