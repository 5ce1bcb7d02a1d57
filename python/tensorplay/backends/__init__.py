"""tp.backends: switches of the compute backends, as torch.backends (``cpu``'s capability level,
``cuda.matmul`` for cuBLAS's precision flags, ``cudnn``), and the float32 matmul precision
they share."""
import warnings

from tensorplay import _C

_PRECISIONS = ('highest', 'high', 'medium')


def set_float32_matmul_precision(precision):
    """Sets how float32 matrix products may trade precision for speed.

    ``'highest'`` (default) computes in float32; ``'high'`` and ``'medium'`` let CUDA
    matrix products use TF32 tensor cores (10-bit mantissa inputs, float32 accumulation).
    ``tp.backends.cuda.matmul.allow_tf32`` follows: True unless ``'highest'``.

    >>> tp.set_float32_matmul_precision('high')
    >>> tp.backends.cuda.matmul.allow_tf32
    True
    """
    if isinstance(precision, bytes):  # torch takes bytes too
        precision = precision.decode()
    if not isinstance(precision, str):
        raise RuntimeError('set_float32_matmul_precision expects a str, but got '
                           f'{type(precision).__name__}')
    if not _C._set_float32_matmul_precision(precision):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      'set_float32_matmul_precision call has no effect.', UserWarning, stacklevel=2)


def get_float32_matmul_precision():
    """The float32 matmul precision: ``'highest'``, ``'high'`` or ``'medium'``
    (see :func:`set_float32_matmul_precision`)."""
    return _C._get_float32_matmul_precision()


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Makes ops that have a reproducible variant use it (``mode=True``).

    On CUDA, index writes that combine duplicate targets (``index_put_`` with
    ``accumulate=True``, ``index_add_``, ``scatter_add_``, ``scatter_reduce_``, ``put_``)
    then sort the targets and fold each one's values serially in index order, so repeated
    runs give bitwise-equal results. ``scaled_dot_product_attention`` leaves its fused CUDA
    kernel (whose backward adds with atomics) for the math path when it records a gradient.
    CPU kernels are deterministic already.

    >>> tp.use_deterministic_algorithms(True)
    >>> tp.are_deterministic_algorithms_enabled()
    True
    """
    if not isinstance(mode, bool):
        raise TypeError(f'use_deterministic_algorithms(): argument \'mode\' (position 1) must be '
                        f'bool, not {type(mode).__name__}')
    if not isinstance(warn_only, bool):
        raise TypeError('use_deterministic_algorithms(): argument \'warn_only\' must be bool, '
                        f'not {type(warn_only).__name__}')
    _C._set_deterministic_algorithms(mode, warn_only)


def are_deterministic_algorithms_enabled():
    """Whether :func:`use_deterministic_algorithms` is on."""
    return _C._get_deterministic_algorithms()


def is_deterministic_algorithms_warn_only_enabled():
    """Whether :func:`use_deterministic_algorithms` was turned on with ``warn_only=True``."""
    return _C._get_deterministic_algorithms_warn_only()


def _check_bool(value, setter):
    """PyTorch's flag setters take bools only (RuntimeError otherwise, naming the setter)."""
    if not isinstance(value, bool):
        raise RuntimeError(f'{setter} expects a bool, but got {type(value).__name__}')
    return value


from tensorplay.backends import cpu, cuda, cudnn  # noqa: E402  (cuda, cudnn use _check_bool)
