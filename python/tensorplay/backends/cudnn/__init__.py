"""tp.backends.cudnn: cuDNN's switches as torch.backends.cudnn. TensorPlay has no cuDNN
kernels yet: the flags are stored (and validated) for programs that set them, and
is_available() is False."""
import contextlib
import sys
import types

from tensorplay import _C
from tensorplay.backends import _check_bool

_flags = {'enabled': True, 'benchmark': False, 'deterministic': False}


def is_available():
    """Whether cuDNN can be used: never, so far."""
    return False


def version():
    """cuDNN's version (None: not linked)."""
    return None


class _CudnnModule(types.ModuleType):
    """Module class whose flags are validated properties (``enabled``, ``benchmark``,
    ``deterministic``, ``allow_tf32``)."""

    @property
    def allow_tf32(self):
        return _C._get_cudnn_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        # (torch 2.13 names the cuBLAS setter in this message too)
        _C._set_cudnn_allow_tf32(_check_bool(value, 'set_allow_tf32_cublas'))


def _stored_flag(name):
    def get(self):
        return _flags[name]

    def set_(self, value):
        _flags[name] = _check_bool(value, f'set_{name}_cudnn')
    return property(get, set_)


for _name in _flags:
    setattr(_CudnnModule, _name, _stored_flag(_name))
del _name


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Sets the flags for a ``with`` block and restores them after it."""
    mod = sys.modules[__name__]
    names = ('enabled', 'benchmark', 'deterministic', 'allow_tf32')
    old = [getattr(mod, n) for n in names]
    try:
        for n, v in zip(names, (enabled, benchmark, deterministic, allow_tf32)):
            setattr(mod, n, v)
        yield
    finally:
        for n, v in zip(names, old):
            setattr(mod, n, v)


sys.modules[__name__].__class__ = _CudnnModule
