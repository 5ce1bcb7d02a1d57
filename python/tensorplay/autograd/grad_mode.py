"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode (thread-local)."""
import functools

from tensorplay import _C

__all__ = ['no_grad', 'enable_grad', 'set_grad_enabled', 'inference_mode',
           'is_grad_enabled', 'is_inference_mode_enabled']

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled


class _DecoratorContextManager:
    """A context manager that also decorates functions (each call runs inside it)."""

    def __call__(self, func):
        if isinstance(func, type):
            raise TypeError(f"{type(self).__name__} cannot decorate classes")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class _GradModeScope(_DecoratorContextManager):
    """Sets grad mode to the class's `_enabled` for a block and restores it after."""
    _enabled = True

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


class no_grad(_GradModeScope):
    """Disables gradient recording inside the block (or the decorated function)."""
    _enabled = False


class enable_grad(_GradModeScope):
    """Enables gradient recording inside the block (e.g. within no_grad)."""
    _enabled = True


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode to ``mode``: at once as a function, for a block as a context manager."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside are inference tensors."""

    def __init__(self, mode=True):
        self.mode = mode

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # bare @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __enter__(self):
        self.prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        if self.mode:
            _C._set_grad_enabled(False)
        _C._set_inference_mode(self.mode)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev[0])
        _C._set_inference_mode(self.prev[1])

    def clone(self):
        return inference_mode(self.mode)
