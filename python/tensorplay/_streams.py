"""tensorplay.Stream and tensorplay.Event: PyTorch's device-generic stream and event.

On CUDA they stand for a ``tensorplay.cuda.Stream`` / ``Event`` (every call goes to it); on
any other device, as in PyTorch, a stream is the device's only (synchronous) stream: queries
say done, synchronizing returns at once, and events cannot be recorded ("cpu backend doesn't
support events.")."""
from tensorplay import _C

__all__ = ["Stream", "Event"]

_DEVICE_TYPES = {"cpu": 0, "cuda": 1, "meta": 9}


def _device(device):
    """The device a Stream/Event is for: the accelerator's current device when None."""
    if device is None:
        from tensorplay import accelerator
        acc = accelerator.current_accelerator(check_available=True)
        return _C.device("cpu") if acc is None else _C.device("cuda", accelerator.current_device_index())
    if isinstance(device, int) and not isinstance(device, bool):
        from tensorplay import accelerator
        if accelerator.current_accelerator(check_available=True) is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return _C.device("cuda", device)
    device = _C.device(device)
    if device.type == "cuda" and device.index is None:
        from tensorplay import cuda
        device = _C.device("cuda", cuda.current_device())
    return device


def _no_events(*args, **kwargs):
    raise RuntimeError("cpu backend doesn't support events.")


class Stream:
    """``Stream(device=None, *, priority=0)``: a stream of ``device`` (default: the current
    accelerator, else the CPU). Usable as a context manager that makes it current."""

    def __init__(self, device=None, *, priority=0):
        self._device = _device(device)
        self._cuda = None
        if self._device.type == "cuda":
            from tensorplay import cuda
            self._cuda = cuda.Stream(self._device, priority=priority)

    @property
    def device(self):
        return self._device

    @property
    def device_type(self):
        return _DEVICE_TYPES.get(self._device.type, 0)

    @property
    def device_index(self):
        return -1 if self._device.index is None else self._device.index

    @property
    def stream_id(self):
        return self._cuda.stream_id if self._cuda is not None else 0

    @property
    def native_handle(self):
        if self._cuda is None:
            raise RuntimeError("Backend doesn't support getting stream native handle.")
        return self._cuda.cuda_stream

    def query(self):
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()

    def is_capturing(self):
        if self._cuda is None:
            return False
        from tensorplay import cuda
        return cuda.is_current_stream_capturing() if hasattr(cuda, "is_current_stream_capturing") else False

    def record_event(self, event=None):
        if self._cuda is None:
            _no_events()
        if event is None:
            event = Event(self._device)
        event.record(self)
        return event

    def wait_event(self, event):
        if self._cuda is not None:
            event.wait(self)

    def wait_stream(self, stream):
        if self._cuda is None:
            _no_events()
        self.wait_event(stream.record_event())

    def __enter__(self):
        if self._cuda is not None:
            from tensorplay import cuda
            self._prev = cuda.current_stream(self._device)
            cuda.set_stream(self._cuda)
        return self

    def __exit__(self, *exc):
        if self._cuda is not None:
            from tensorplay import cuda
            cuda.set_stream(self._prev)

    def __eq__(self, other):
        return (isinstance(other, Stream) and self._device == other._device
                and self.stream_id == other.stream_id)

    def __hash__(self):
        return hash((str(self._device), self.stream_id))

    def __repr__(self):
        return (f"tensorplay.Stream device_type={self._device.type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``: marks
    a point in a stream of ``device`` (default: the current accelerator, else the CPU)."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self._device = _device(device)
        self._timing = bool(enable_timing)
        self._cuda = None
        if self._device.type == "cuda":
            from tensorplay import cuda
            self._cuda = cuda.Event(enable_timing=enable_timing, blocking=blocking,
                                    interprocess=interprocess)

    @property
    def device(self):
        return self._device

    @property
    def event_id(self):
        return self._cuda.cuda_event if self._cuda is not None else 0

    def record(self, stream=None):
        if self._cuda is None:
            _no_events()
        self._cuda.record(getattr(stream, "_cuda", stream))

    def wait(self, stream=None):
        if self._cuda is not None:
            self._cuda.wait(getattr(stream, "_cuda", stream))

    def query(self):
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()

    def elapsed_time(self, end_event):
        if not (self._timing and getattr(end_event, "_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._cuda is None:
            _no_events()
        return self._cuda.elapsed_time(end_event._cuda)

    def ipc_handle(self):
        raise NotImplementedError("tensorplay.Event ipc is not supported yet, please open an issue "
                                  "if you need this!")

    def __repr__(self):
        index = -1 if self._device.index is None else self._device.index
        return (f"tensorplay.Event device_type={self._device.type}, device_index={index}, "
                f"event_flag={int(self._timing)}, event_id={self.event_id}")
