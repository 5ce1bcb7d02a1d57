"""tensorplay.cuda: GPUs, streams, events and the caching allocator (PyTorch's torch.cuda).

In a build without CUDA, or on a machine without a GPU, ``is_available()`` is False and
``device_count()`` is 0; calls that need a GPU raise as PyTorch's do (AssertionError
"Torch not compiled with CUDA enabled" without CUDA support in the build)."""

import contextlib

from tensorplay import _C
from tensorplay.cuda import memory, random  # noqa: F401
from tensorplay.cuda._utils import _compiled, _get_device_index, _is_initialized, _lazy_init
from tensorplay.cuda.memory import (caching_allocator_alloc, caching_allocator_delete,  # noqa: F401
                                    empty_cache, get_per_process_memory_fraction,
                                    list_gpu_processes, max_memory_allocated, max_memory_cached,
                                    max_memory_reserved, mem_get_info, memory_allocated,
                                    memory_cached, memory_reserved, memory_snapshot, memory_stats,
                                    memory_stats_as_nested_dict, memory_summary,
                                    reset_accumulated_memory_stats, reset_max_memory_allocated,
                                    reset_max_memory_cached, reset_peak_memory_stats,
                                    set_per_process_memory_fraction)
from tensorplay.cuda.random import (get_rng_state, get_rng_state_all, initial_seed,  # noqa: F401
                                    manual_seed, manual_seed_all, seed, seed_all, set_rng_state,
                                    set_rng_state_all)
from tensorplay.cuda.streams import Event, ExternalStream, Stream  # noqa: F401
from tensorplay.cuda import amp  # noqa: F401
from tensorplay.cuda import graphs  # noqa: F401
from tensorplay.cuda.graphs import (CUDAGraph, graph, graph_pool_handle,  # noqa: F401
                                    is_current_stream_capturing, make_graphed_autograd_function,
                                    make_graphed_callables)

OutOfMemoryError = _C.OutOfMemoryError

def is_available():
    """True when TensorPlay was built with CUDA and a GPU is visible."""
    return _compiled and _C._cuda_getDeviceCount() > 0


def device_count():
    """Number of visible GPUs (0 without CUDA support or without a GPU)."""
    return _C._cuda_getDeviceCount() if _compiled else 0


def is_initialized():
    return _is_initialized()


def init():
    _lazy_init()


def current_device():
    _lazy_init()
    return _C._cuda_getDevice()


def set_device(device):
    """Makes ``device`` the calling thread's current GPU (negative: no-op, as PyTorch)."""
    _lazy_init()
    idx = _get_device_index(device)
    if idx >= 0:
        _C._cuda_setDevice(idx)


class device:
    """Context manager that makes ``device`` current and restores the previous one."""

    def __init__(self, device):
        if device is None:
            self.idx = -1
        elif isinstance(device, int):
            self.idx = device
        else:
            self.idx = _get_device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            _lazy_init()
            self.prev_idx = _C._cuda_exchangeDevice(self.idx)

    def __exit__(self, *exc):
        if self.prev_idx >= 0:
            _C._cuda_setDevice(self.prev_idx)
        return False


class device_of(device):
    """``device`` for a tensor's GPU (no-op for CPU tensors)."""

    def __init__(self, obj):
        super().__init__(obj.device.index if obj.device.type == "cuda" else -1)


def synchronize(device=None):
    """Waits for all work on ``device`` (default: current)."""
    _lazy_init()
    _C._cuda_synchronize(_get_device_index(device))


class _CudaDeviceProperties:
    """What get_device_properties returns (name, total_memory, major, minor, ...)."""

    def __init__(self, d):
        self.__dict__.update(d)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device=None):
    _lazy_init()
    idx = _get_device_index(device)
    if idx < 0 or idx >= device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(_C._cuda_getDeviceProperties(idx))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return p.major, p.minor


def get_arch_list():
    return ["sm_90"] if _compiled else []


def current_stream(device=None):
    """The calling thread's current stream on ``device`` (the default stream until set)."""
    _lazy_init()
    return Stream(_tuple=_C._cuda_getCurrentStream(_get_device_index(device)))


def default_stream(device=None):
    _lazy_init()
    return Stream(_tuple=_C._cuda_getDefaultStream(_get_device_index(device)))


def set_stream(stream):
    """Makes ``stream`` the calling thread's current stream on its device."""
    if stream is None:
        return
    _lazy_init()
    _C._cuda_setStream(stream.cuda_stream, stream.device_index, stream.priority)


class StreamContext:
    """``with tp.cuda.stream(s):`` runs work on ``s`` (and its device), then restores both."""

    def __init__(self, stream):
        self.stream = stream
        self.idx = -1 if stream is None else stream.device_index
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device_index != s.device_index:
            with device(s.device_index):
                self.dst_prev_stream = current_stream(s.device_index)
        set_stream(s)
        self._prev_device = _C._cuda_exchangeDevice(s.device_index)

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        if self.dst_prev_stream is not None:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)
        _C._cuda_setDevice(self._prev_device)
        return False


def stream(stream):
    return StreamContext(stream)


def priority_range():
    _lazy_init()
    return tuple(_C._cuda_streamPriorityRange())


@contextlib.contextmanager
def _kernel_switches(**settings):
    """Inside the block, _C._cuda_set_<name>(value) for each setting (the nn kernel switches:
    row_pipeline, packed_half_rows, narrow_norm_rows, lean_half_rows, warp_rows, ...); each
    restored after. For the tests and benchmarks of the kernels the defaults do not run."""
    prev = {name: getattr(_C, f"_cuda_{name}")() for name in settings}
    try:
        for name, value in settings.items():
            getattr(_C, f"_cuda_set_{name}")(value)
        yield
    finally:
        for name, value in prev.items():
            getattr(_C, f"_cuda_set_{name}")(value)


_default_generators = None


def __getattr__(name):
    # default_generators: one Generator per GPU, made on first access (() without a GPU)
    global _default_generators
    if name == "default_generators":
        if not _is_initialized():
            return ()
        if _default_generators is None:
            _default_generators = tuple(_C._cuda_default_generator(i) for i in range(device_count()))
        return _default_generators
    raise AttributeError(f"module 'tensorplay.cuda' has no attribute '{name}'")
