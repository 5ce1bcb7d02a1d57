"""tensorplay.accelerator: the device-generic front of the one accelerator TensorPlay has
(CUDA), as PyTorch's torch.accelerator. Without a usable GPU, ``is_available()`` is False,
``current_accelerator()`` is None and calls that need a device raise RuntimeError."""
from tensorplay import _C, cuda as _cuda

__all__ = ['current_accelerator', 'current_device_idx', 'current_device_index', 'current_stream',
           'device_count', 'device_index', 'empty_cache', 'get_memory_info', 'is_available',
           'max_memory_allocated', 'max_memory_reserved', 'memory_allocated', 'memory_reserved',
           'memory_stats', 'reset_accumulated_memory_stats', 'reset_peak_memory_stats',
           'set_device_idx', 'set_device_index', 'set_stream', 'synchronize']


def _require():
    if not _cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def _index(device):
    """The CUDA ordinal of an int, 'cuda:N', tp.device or None (the current device)."""
    _require()
    if isinstance(device, str):
        device = _C.device(device)
    if isinstance(device, _C.device):
        if device.type != 'cuda':
            raise ValueError(f"{device.type} doesn't match the current accelerator cuda.")
        return _cuda.current_device() if device.index is None else device.index
    if device is None:
        return _cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    raise TypeError(f"Unsupported device type: {type(device).__name__}")


def is_available():
    """True when an accelerator (a CUDA GPU) can be used.

        >>> tp.accelerator.is_available()   # on a machine without a GPU
        False
    """
    return _cuda.is_available()


def current_accelerator(check_available=False):
    """``tp.device('cuda')`` when TensorPlay was built with CUDA (and, with
    ``check_available``, a GPU is visible); otherwise None."""
    if not _cuda._compiled or (check_available and not _cuda.is_available()):
        return None
    return _C.device('cuda')


def device_count():
    """Number of visible accelerator devices (0 without one)."""
    return _cuda.device_count()


def current_device_index():
    """The calling thread's current accelerator ordinal."""
    _require()
    return _cuda.current_device()


def set_device_index(device, /):
    """Makes ``device`` (int, 'cuda:N', tp.device) the calling thread's current device."""
    _cuda.set_device(_index(device))


current_device_idx = current_device_index
set_device_idx = set_device_index


class device_index:
    """Context manager: ``device`` (an int, or None for a no-op) is current inside the block."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            _require()
            self.prev_idx = _C._cuda_exchangeDevice(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None:
            _C._cuda_setDevice(self.prev_idx)
        return False


def synchronize(device=None, /):
    """Waits for all work queued on ``device`` (default: the current one)."""
    _cuda.synchronize(_index(device))


def current_stream(device=None, /):
    """The current stream of ``device``."""
    return _cuda.current_stream(_index(device))


def set_stream(stream):
    """Makes ``stream`` current on its device."""
    _require()
    _cuda.set_stream(stream)


def empty_cache():
    """Hands the caching allocator's unused blocks back to the device."""
    _require()
    _cuda.empty_cache()


def get_memory_info(device_index=None, /):
    """(free bytes, total bytes) of the device."""
    return _cuda.mem_get_info(_index(device_index))


def memory_stats(device_index=None, /):
    return _cuda.memory_stats(_index(device_index))


def memory_allocated(device_index=None, /):
    return _cuda.memory_allocated(_index(device_index))


def max_memory_allocated(device_index=None, /):
    return _cuda.max_memory_allocated(_index(device_index))


def memory_reserved(device_index=None, /):
    return _cuda.memory_reserved(_index(device_index))


def max_memory_reserved(device_index=None, /):
    return _cuda.max_memory_reserved(_index(device_index))


def reset_accumulated_memory_stats(device_index=None, /):
    _cuda.reset_accumulated_memory_stats(_index(device_index))


def reset_peak_memory_stats(device_index=None, /):
    _cuda.reset_peak_memory_stats(_index(device_index))
