"""CUDA streams and events (tensorplay.cuda.Stream, ExternalStream, Event)."""
from tensorplay import _C
from tensorplay.cuda._utils import _compiled, _get_device_index, _lazy_init

_EventBase = _C._CudaEventBase if _compiled else object


class Stream:
    """A CUDA stream: work queued on it runs in order; different streams may overlap.

    ``Stream(device=None, priority=0)`` takes a stream from the device's pool (lower
    priority numbers run first, as in PyTorch)."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if not _compiled:
            raise RuntimeError("tensorplay.cuda.Stream requires CUDA support")
        _lazy_init()
        self = super().__new__(cls)
        if "stream_ptr" in kwargs:
            handle, dev, prio = _C._cuda_externalStream(kwargs["stream_ptr"], _get_device_index(device))
        elif "_tuple" in kwargs:
            handle, dev, prio = kwargs["_tuple"]
        else:
            handle, dev, prio = _C._cuda_streamFromPool(int(priority), _get_device_index(device))
        self.cuda_stream, self.device_index, self.priority = handle, dev, prio
        return self

    def __init__(self, device=None, priority=0, **kwargs):
        pass

    @property
    def device(self):
        return _C.device("cuda", self.device_index)

    @property
    def device_type(self):
        return 1  # PyTorch's DeviceType::CUDA

    @property
    def stream_id(self):
        return self.cuda_stream

    def query(self):
        """True when all work queued on the stream has finished."""
        return _C._cuda_streamQuery(self.cuda_stream, self.device_index)

    def synchronize(self):
        """Waits for all work queued on the stream."""
        _C._cuda_streamSynchronize(self.cuda_stream, self.device_index)

    def wait_event(self, event):
        """Makes future work on this stream wait for ``event``."""
        event.wait(self)

    def wait_stream(self, stream):
        """Makes future work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records ``event`` (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device_index == other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return (f"<tensorplay.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self.cuda_stream:#x}>")


class ExternalStream(Stream):
    """Wraps a stream created elsewhere (its ``cudaStream_t`` as an int); TensorPlay never
    destroys it."""

    def __new__(cls, stream_ptr, device=None, **kwargs):
        return super().__new__(cls, device=device, stream_ptr=stream_ptr)

    def __init__(self, stream_ptr, device=None, **kwargs):
        pass


class Event(_EventBase):
    """A CUDA event: marks a point in a stream, to wait for, query or time.

    ``Event(enable_timing=False, blocking=False, interprocess=False)``; the event is created
    on the first ``record``."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if not _compiled:
            raise RuntimeError("Tried to instantiate dummy base class Event")
        super().__init__(enable_timing, blocking, interprocess)

    def record(self, stream=None):
        """Records the event on ``stream`` (default: the current stream)."""
        if stream is None:
            from tensorplay.cuda import current_stream
            stream = current_stream()
        self._record(stream.cuda_stream, stream.device_index)

    def wait(self, stream=None):
        """Makes future work on ``stream`` (default: current) wait for this event."""
        if stream is None:
            from tensorplay.cuda import current_stream
            stream = current_stream()
        self._wait(stream.cuda_stream, stream.device_index)

    def __repr__(self):
        return f"<tensorplay.cuda.Event {self.cuda_event:#x}>" if self.cuda_event else \
            "<tensorplay.cuda.Event uninitialized>"
