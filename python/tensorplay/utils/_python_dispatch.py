"""Python dispatch: ``TorchDispatchMode`` and the mode stack (PyTorch's
``torch.utils._python_dispatch``).

A mode entered with ``with`` sees every op run on this thread below autograd, as its op
handle (``tp.ops.aten.add.Tensor``) with the call's arguments; what it returns is the op's
result. While a mode's ``__torch_dispatch__`` runs, the mode is off the stack, so calling
``func(*args, **kwargs)`` there runs the op for real (or hands it to the next mode).

    class LogOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)
            return func(*args, **(kwargs or {}))

    with LogOps():
        tp.ones(2) * 3          # prints aten.ones.default, aten.mul.Tensor
"""
import contextlib
import warnings

from tensorplay import _C

__all__ = ['TorchDispatchMode', 'is_traceable_wrapper_subclass']


class TorchDispatchMode:
    """Base class of dispatch modes: override ``__torch_dispatch__(func, types, args,
    kwargs)``; enter with ``with mode:`` (modes nest; the innermost sees a call first)."""

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError('TorchDispatchMode: per-key modes are not supported')
        self.old_dispatch_mode_flags = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError()

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn('`Mode.push()` is no longer necessary and can be replaced with just '
                      '`with Mode()`')
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls):
        return False


def _get_current_dispatch_mode():
    """The innermost mode on this thread's stack, or None."""
    n = _C._len_torch_dispatch_stack()
    return _C._get_dispatch_stack_at(n - 1) if n > 0 else None


def _get_current_dispatch_mode_stack():
    """This thread's modes, outermost first."""
    return [_C._get_dispatch_stack_at(i) for i in range(_C._len_torch_dispatch_stack())]


def _push_mode(mode):
    if not isinstance(mode, TorchDispatchMode):
        raise TypeError(f'expected a TorchDispatchMode, got {type(mode).__name__}')
    _C._push_on_torch_dispatch_stack(mode)


def _pop_mode(k=None):
    if k is not None:
        raise NotImplementedError('_pop_mode: per-key modes are not supported')
    return _C._pop_torch_dispatch_stack()


@contextlib.contextmanager
def _pop_mode_temporarily(k=None):
    """Takes the innermost mode off the stack for the block, then puts it back."""
    old = _pop_mode(k)
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def _disable_current_modes():
    """Takes every mode off the stack for the block, then puts them back in order."""
    modes = []
    while _C._len_torch_dispatch_stack() > 0:
        modes.append(_pop_mode())
    try:
        yield modes
    finally:
        for m in reversed(modes):
            _push_mode(m)


def is_traceable_wrapper_subclass(t):
    """Whether ``t`` is a wrapper subclass that says how to flatten itself
    (``__tensor_flatten__`` / ``__tensor_unflatten__``)."""
    from tensorplay import Tensor
    is_subclass = isinstance(t, Tensor) and type(t) is not Tensor
    return (is_subclass and hasattr(t, '__tensor_flatten__')
            and hasattr(t, '__tensor_unflatten__'))
