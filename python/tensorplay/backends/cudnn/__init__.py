"""tp.backends.cudnn: cuDNN's switches as torch.backends.cudnn. A CUDA build that found cuDNN 9
runs its CUDA convolutions through it (csrc/cuda/cudnn_conv.cpp) while ``enabled`` is True;
other builds store the flags (validated) for programs that set them, and is_available() is
False."""
import contextlib
import sys
import types

from tensorplay import _C
from tensorplay.backends import _check_bool

_FLAG_NAMES = ('enabled', 'benchmark', 'deterministic')  # the order of _C._get_cudnn_flags


def is_available():
    """Whether this build has cuDNN (a CUDA build that found cuDNN 9 when it was compiled).

    >>> tp.backends.cudnn.is_available()  # a CPU-only build
    False
    """
    return _C._has_cudnn


def version():
    """cuDNN's version as an int (major * 10000 + minor * 100 + patch, e.g. 90801 for
    9.8.1), or None when the build has no cuDNN."""
    return _C._cudnn_version() if is_available() else None


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
    at = _FLAG_NAMES.index(name)

    def get(self):
        return _C._get_cudnn_flags()[at]

    def set_(self, value):
        flags = list(_C._get_cudnn_flags())
        flags[at] = _check_bool(value, f'set_{name}_cudnn')
        _C._set_cudnn_flags(*flags)
    return property(get, set_)


for _name in _FLAG_NAMES:
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
