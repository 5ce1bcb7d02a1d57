"""tensorplay.cpu (PyTorch's torch.cpu): the CPU as a device with the same small API the
accelerator modules have (is_available, device_count, current_device, synchronize, streams
that are no-ops), plus the CPU block cache of TensorPlay's allocator.

``empty_cache()`` and ``memory_cached()`` are TensorPlay's: freed CPU buffers of 1 MiB and more
are kept (up to 1 GiB) for reuse, since a fresh buffer pays a page fault per 4 KiB on first
touch (Note [CPU block cache] in csrc/core/storage.cpp); ``empty_cache()`` gives them back to
the system, as ``tp.cuda.empty_cache()`` does for the GPU's cache."""
import contextlib

from tensorplay import _C

__all__ = ['is_available', 'device_count', 'current_device', 'set_device', 'synchronize',
           'Stream', 'Event', 'StreamContext', 'stream', 'current_stream', 'is_initialized',
           'empty_cache', 'memory_cached']


def is_available():
    """Always True: the CPU is always there."""
    return True


def is_initialized():
    return True


def device_count():
    """1: TensorPlay sees the CPU as one device."""
    return 1


def current_device():
    return 'cpu'


def set_device(device):
    """Accepted for symmetry with the accelerators; the CPU has one device."""


def synchronize(device=None):
    """No-op: CPU work has finished when an op returns."""


class Stream:
    """A no-op stream (CPU work is synchronous)."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True


class Event:
    """A no-op event."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_default_stream = Stream()


def current_stream(device=None):
    return _default_stream


class StreamContext(contextlib.AbstractContextManager):
    def __init__(self, stream):
        self.stream = stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


def empty_cache():
    """Returns the CPU block cache's memory to the system; returns the bytes freed."""
    return _C._cpu_empty_cache()


def memory_cached():
    """Bytes of freed CPU buffers kept for reuse (released by ``empty_cache()``)."""
    return _C._cpu_cached_bytes()
