"""tp.autocast: regions where listed ops run in a lower-precision dtype (PyTorch's AMP).

The state lives in C++ (csrc/autograd/autocast.cpp, thread-local); the per-op policies in
csrc/ops/autocast.yaml. This module holds the context manager and the state functions."""
import functools
import warnings

import tensorplay as tp
from tensorplay import _C

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype"]

_SUPPORTED_DTYPES = (tp.bfloat16, tp.float16)


def _device_type(device_type):
    """The device type named by ``device_type`` ("cuda:0" is "cuda"); PyTorch's parse error
    for a string that names no device."""
    return tp.device(device_type).type


def is_autocast_available(device_type):
    """Whether autocast supports ``device_type`` ("cpu" and "cuda" here)."""
    return _device_type(device_type) in ("cpu", "cuda")


def is_autocast_enabled(device_type="cuda"):
    """Whether autocast is enabled for ``device_type`` on this thread."""
    return _C._autocast_is_enabled(_device_type(device_type))


def set_autocast_enabled(device_type, enabled):
    """Enables or disables autocast for ``device_type`` on this thread (no dtype checks:
    ``tp.autocast`` is the checked way in)."""
    _C._autocast_set_enabled(_device_type(device_type), bool(enabled))


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses on ``device_type`` (defaults: cuda float16,
    cpu bfloat16)."""
    return _C._autocast_get_dtype(_device_type(device_type))


def set_autocast_dtype(device_type, dtype):
    """Sets the lower-precision dtype of ``device_type`` on this thread."""
    _C._autocast_set_dtype(_device_type(device_type), dtype)


class autocast:
    """Context manager and decorator: inside it, ops listed in PyTorch's autocast op
    reference run in the dtype autocast chooses for them (matrix products and convolutions
    in ``dtype``, reductions and losses in float32), as ``torch.autocast`` does.

    Example::

        with tp.autocast("cpu", dtype=tp.bfloat16):
            y = model(x)            # Linear layers compute in bfloat16
            loss = F.mse_loss(y, t)  # float32
        loss.backward()            # parameter gradients are float32
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = _device_type(device_type)
        self._cache_enabled = _C.is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        if enabled:
            if self.device == "cuda":
                if not tp.cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                                  "autocast.", stacklevel=2)
                    enabled = False
                elif self.fast_dtype == tp.bfloat16 and tp.cuda.get_device_capability()[0] < 8:
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please "
                                       "switch dtype to float16.")
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                name = self.device.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of "
                    + ", ".join(map(str, _SUPPORTED_DTYPES)) + " currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _C.is_autocast_cache_enabled()
        self.prev = _C._autocast_is_enabled(self.device)
        self.prev_fastdtype = _C._autocast_get_dtype(self.device)
        _C._autocast_set_enabled(self.device, self._enabled)
        _C._autocast_set_dtype(self.device, self.fast_dtype)
        _C.autocast_increment_nesting()
        _C.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # the cast cache lives as long as the outermost region
        if _C.autocast_decrement_nesting() == 0:
            _C.clear_autocast_cache()
        _C._autocast_set_enabled(self.device, self.prev)
        _C._autocast_set_dtype(self.device, self.prev_fastdtype)
        _C.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _cast(value, device_type, dtype):
    """``value`` with its floating tensors on ``device_type`` cast to ``dtype`` (containers
    rebuilt, anything else unchanged)."""
    if isinstance(value, tp.Tensor):
        if value.is_floating_point() and value.device.type == device_type and value.dtype != tp.float64:
            return value.to(dtype)
        return value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for the ``forward`` of an autograd.Function under autocast: records the
    autocast state for custom_bwd; with ``cast_inputs`` (a dtype), runs forward with autocast
    off and floating inputs on ``device_type`` cast to that dtype."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = enabled and cast_inputs is None
        if cast_inputs is None or not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for the ``backward`` of an autograd.Function: runs it under the autocast
    state its custom_fwd-decorated forward saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
