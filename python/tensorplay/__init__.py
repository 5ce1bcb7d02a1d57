"""TensorPlay: tensors, autograd and neural networks with PyTorch's API.

    import tensorplay as tp
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]])
    (x * 2 + 1).exp()
"""
import builtins as _builtins

from tensorplay import _C
from tensorplay._C import device
from tensorplay._dtype import (ALL_DTYPES, bfloat16, bool, can_cast, cdouble, cfloat, complex64, complex128, double, dtype, finfo, float,
                               float16, float32, float64, get_default_dtype, half, iinfo, int,
                               int8, int16, int32, int64, long, promote_types, result_type,
                               set_default_dtype, short, uint8)
from tensorplay._tensor import (Size, Tensor, UntypedStorage, channels_last, channels_last_3d, clamp_max,
                                clamp_min, contiguous_format, memory_format, preserve_format)
from tensorplay import _indexing  # noqa: F401  (installs Tensor.__getitem__/__setitem__)
from tensorplay._indexing import index_put_
from tensorplay._creation import (arange, as_tensor, asarray, empty_like, from_dlpack,
                                  from_numpy, full_like, ones_like, tensor, zeros_like)
from tensorplay._linalg_products import cross, einsum, tensordot
from tensorplay._householder import geqrf
from tensorplay._shape_ops import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod,
                                    column_stack, dstack, hstack, meshgrid, repeat_interleave,
                                    vstack)
from tensorplay._tensor_str import get_printoptions, printoptions, set_printoptions
from tensorplay._elementwise import deg2rad, isin, logaddexp, logaddexp2, rad2deg
from tensorplay._views import (adjoint, allclose, argwhere, equal, broadcast_shapes, broadcast_tensors, chunk, dsplit,
                               hsplit, nonzero, ravel, split, squeeze, tensor_split, unbind, vsplit, where)
from tensorplay._inplace_views import resize_as_fn as resize_as_  # noqa: F401  (and the Tensor methods)
from tensorplay import linalg, return_types, version
from tensorplay._reductions import hash_tensor, norm, unique, unique_consecutive
from tensorplay import autograd, _tensor_autograd  # noqa: F401  (Tensor.backward, hooks)
from tensorplay.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                           is_inference_mode_enabled, no_grad, set_grad_enabled)
from tensorplay.version import __version__
from tensorplay import random
from tensorplay.random import thread_safe_generator  # noqa: F401
from tensorplay.autograd.anomaly_mode import is_anomaly_check_nan_enabled  # noqa: F401
from tensorplay._streams import Event, Stream  # noqa: F401
from tensorplay.random import (Generator, default_generator, get_rng_state, initial_seed,
                               manual_seed, rand_like, randint_like, randn_like, seed,
                               set_rng_state)

get_num_threads = _C.get_num_threads
set_num_threads = _C.set_num_threads
legacy_contiguous_format = contiguous_format  # PyTorch's alias (the same object)
AcceleratorError = _C.AcceleratorError
parse_schema = _C._parse_schema  # torch.parse_schema: FunctionSchema text -> schema object
_warn_always = False
_num_interop_threads = None


def set_warn_always(b, /):
    """When True, warnings that PyTorch shows once per process show every time (TensorPlay
    keeps the flag for code that reads it; its own warnings already go through ``warnings``)."""
    global _warn_always
    _warn_always = _builtins.bool(b)


def is_warn_always_enabled():
    """Whether set_warn_always(True) is in effect."""
    return _warn_always


def get_num_interop_threads():
    """Threads for inter-op parallelism (PyTorch's JIT interpreter pool). TensorPlay runs ops
    one after another and parallelises inside them (set_num_threads); the number is kept for
    code that sets and reads it."""
    import os
    return _num_interop_threads or os.cpu_count() or 1


def set_num_interop_threads(num):
    """Sets the inter-op thread count: once per process, as in PyTorch."""
    global _num_interop_threads
    if not isinstance(num, _builtins.int) or isinstance(num, _builtins.bool) or num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _num_interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _num_interop_threads = num


def _export_generated_ops():
    """Every op bound from ops.yaml becomes tp.<name> (tp.add, tp.exp, ...); the
    linalg_<name> ops are tp.linalg.<name> only, special_<name> ops tp.special.<name>, as in
    PyTorch."""
    g = globals()
    for name in dir(_C):
        if not name.startswith(("_", "linalg_", "special_")) and name not in g:
            g[name] = getattr(_C, name)


_export_generated_ops()
_C.parse_schema = _C._parse_schema  # torch._C.parse_schema (not a top-level function)
# private ops PyTorch also exposes by name (torch._fused_rms_norm)
_fused_rms_norm = _C._fused_rms_norm
_fused_rms_norm_backward = _C._fused_rms_norm_backward
# the samplers and reparameterised gradients tp.distributions uses (torch._standard_gamma)
_standard_gamma = _C._standard_gamma
_standard_gamma_grad = _C._standard_gamma_grad
_sample_dirichlet = _C._sample_dirichlet
_dirichlet_grad = _C._dirichlet_grad


def clone(input, *, memory_format=None):
    """A copy of ``input`` with its own storage (``preserve_format`` keeps a dense layout)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"clone(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.clone(memory_format=memory_format)


def _assert(condition, message):
    """``assert condition, message`` as a function (graph capture records it)."""
    assert condition, message


def is_tensor(obj):
    """True if ``obj`` is a TensorPlay tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


from tensorplay._ops import Tag, ops  # noqa: E402
from tensorplay import nn, utils, func  # noqa: E402,F401  (nn builds on the ops exported above)
from tensorplay import _composite_ops  # noqa: E402
_composite_ops._install(globals())  # cov, trapezoid, tp.exp_, Tensor.addr, ... (needs nn.functional)
from tensorplay import _complex  # noqa: E402
_complex._install(globals())  # is_conj, is_neg, Tensor.real / Tensor.imag, ...
from tensorplay._rnn_functions import (affine_grid_generator, ctc_loss, gru, gru_cell,  # noqa: E402,F401
                                      lstm, lstm_cell, rnn_relu, rnn_relu_cell, rnn_tanh,
                                      rnn_tanh_cell)
from tensorplay import serialization  # noqa: E402  (rebuilds nn.Parameter)
from tensorplay.serialization import load, save  # noqa: E402
from tensorplay import optim  # noqa: E402,F401  (optim builds on nn)
from tensorplay import cuda  # noqa: E402,F401
from tensorplay import cpu  # noqa: E402,F401
from tensorplay import amp  # noqa: E402,F401
GradScaler = amp.GradScaler  # noqa: E402  (PyTorch's torch.GradScaler)
from tensorplay.amp.autocast_mode import (autocast, get_autocast_dtype,  # noqa: E402,F401
                                          is_autocast_enabled, set_autocast_dtype,
                                          set_autocast_enabled)
from tensorplay import backends  # noqa: E402,F401
from tensorplay import special  # noqa: E402,F401
from tensorplay import library  # noqa: E402,F401
from tensorplay.backends import (are_deterministic_algorithms_enabled,  # noqa: E402
                                 get_float32_matmul_precision,
                                 is_deterministic_algorithms_warn_only_enabled,
                                 set_float32_matmul_precision, use_deterministic_algorithms)

OutOfMemoryError = _C.OutOfMemoryError
from tensorplay import accelerator, fft  # noqa: E402,F401
from tensorplay._spectral import istft, stft  # noqa: E402,F401
_C.Tensor.stft = stft
_C.Tensor.istft = istft
from tensorplay import signal  # noqa: E402,F401
from tensorplay.signal import windows  # noqa: E402,F401  (torch.windows is torch.signal.windows)
from tensorplay._device_defaults import get_default_device, set_default_device  # noqa: E402,F401

from tensorplay import overrides  # noqa: E402  (last: wraps the public API for __torch_function__)
import sys as _sys  # noqa: E402
overrides._install(_sys.modules[__name__])
from tensorplay import fx  # noqa: E402  (after the wrappers: Proxy intercepts them)
graph = fx  # the release's name for tensorplay.fx (also `import tensorplay.graph`)
vmap = func.vmap  # PyTorch's torch.vmap (after the wrappers: it takes functions, not tensors)


from tensorplay._lazy import lazy_submodule as _lazy_submodule  # noqa: E402

# 15 ms of import time that a program not profiling, exporting or using the hub need not pay
profiler = _lazy_submodule(__name__, 'profiler')
hub = _lazy_submodule(__name__, 'hub')
onnx = _lazy_submodule(__name__, 'onnx')
distributed = _lazy_submodule(__name__, 'distributed')
multiprocessing = _lazy_submodule(__name__, 'multiprocessing')
distributions = _lazy_submodule(__name__, 'distributions')  # about 40 ms of imports
