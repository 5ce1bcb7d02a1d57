"""Moving batches from a worker to the main process: a pickle header plus the raw bytes of
each tensor over the worker's own pipe, read straight into new tensors."""
import ctypes
import io
import os
import pickle
import select
import struct
from multiprocessing.reduction import ForkingPickler

import tensorplay as tp

# Note [Worker pipes]
# Each worker writes its results to a pipe of its own; a message is an 8-byte length, a
# pickle of (task index, data) in which every tensor is a persistent id (dtype, shape,
# requires_grad), then each such tensor's bytes in C order. The main process unpickles the
# header, allocates the tensors with tp.empty and reads their bytes into them directly:
# one copy into the pipe and one out of it, nothing to clean up if either side dies. One
# writer per pipe keeps messages whole and in the worker's order, so the main process
# reads the worker that owns the next batch. It polls the pipe together with the worker's
# process sentinel, so a worker that dies (even mid-message) raises instead of hanging,
# and the poll's timeout implements DataLoader(timeout=). Pipes are enlarged where the
# system allows, so a typical batch is written in one go. A worker whose result pipe is
# full keeps reading its task pipe meanwhile: the main process may be blocked sending it
# a large task (a long index list) and would otherwise never come back to read the result.
# Measured on the 2-core dev VM (1000 batches of 64x784 float32 + 64 int64, one worker,
# end to end): 0.34 ms per batch, against 0.79 ms through a multiprocessing.Queue of
# pickled NumPy arrays.

_LENGTH = struct.Struct("<Q")
_PIPE_BYTES = 1 << 20
_IOV_MAX = 1024


def _tensor_bytes(t):
    """A writable byte view of contiguous tensor ``t``'s memory; ``t`` must outlive it."""
    return memoryview((ctypes.c_char * t.nbytes).from_address(t.data_ptr())).cast("B")


def _sendable(t):
    """``t``'s data as a contiguous tensor without history; refuses what autograd cannot
    carry across processes."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    return t.detach().contiguous()


def enlarge_pipe(fd):
    """Asks for a 1 MiB pipe buffer (Linux; ignored where refused or unsupported)."""
    try:
        import fcntl
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


class _TensorPickler(pickle.Pickler):
    """Pickles tensors as persistent ids and collects them (each once) for the raw part."""

    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.tensors = []
        self._index = {}

    def persistent_id(self, obj):
        if not isinstance(obj, tp.Tensor):
            return None
        index = self._index.get(id(obj))
        if index is not None:
            return (index,)
        self._index[id(obj)] = index = len(self.tensors)
        self.tensors.append((obj, _sendable(obj)))  # holding obj keeps its id unique
        return (index, obj.dtype, tuple(obj.shape), obj.requires_grad)


class _TensorUnpickler(pickle.Unpickler):
    """Allocates the tensors named by persistent ids; their bytes are read afterwards."""

    def __init__(self, file):
        super().__init__(file)
        self.tensors = []

    def persistent_load(self, pid):
        if len(pid) == 1:
            return self.tensors[pid[0]]
        _, dtype, shape, requires_grad = pid
        t = tp.empty(shape, dtype=dtype, requires_grad=requires_grad)
        self.tensors.append(t)
        return t


def send(fd, obj, wait_writable):
    """Writes ``obj`` as one message to the non-blocking pipe ``fd`` (Note [Worker pipes]),
    calling ``wait_writable()`` whenever the pipe is full; raises before writing anything
    if ``obj`` cannot be pickled."""
    buf = io.BytesIO()
    pickler = _TensorPickler(buf)
    pickler.dump(obj)
    header = buf.getbuffer()
    parts = [_LENGTH.pack(len(header)), header]
    parts += [_tensor_bytes(t) for _, t in pickler.tensors if t.nbytes]
    while parts:
        try:
            written = os.writev(fd, parts[:_IOV_MAX])
        except BlockingIOError:
            wait_writable()
            continue
        while parts and written >= len(parts[0]):
            written -= len(parts[0])
            parts.pop(0)
        if written:
            parts[0] = parts[0][written:]


class WorkerDied(Exception):
    """The worker exited before its message was complete."""


class Receiver:
    """Reads the messages of one worker's pipe, watching the worker's sentinel."""

    def __init__(self, conn, sentinel):
        self.conn = conn
        self.fd = conn.fileno()
        self.poller = select.poll()
        self.poller.register(self.fd, select.POLLIN)
        self.poller.register(sentinel, select.POLLIN)

    def wait(self, timeout_ms):
        """Waits until data can be read (True) or the timeout passes (False); raises
        WorkerDied when the worker is gone and nothing is left to read."""
        events = self.poller.poll(timeout_ms)
        if not events:
            return False
        for fd, event in events:
            if fd == self.fd and event & select.POLLIN:
                return True
        raise WorkerDied

    def _read_into(self, view):
        while view.nbytes:
            self.wait(None)
            n = os.readv(self.fd, [view])
            if n == 0:
                raise WorkerDied
            view = view[n:]

    def receive(self):
        """The next message, whole (blocks until it has arrived)."""
        length = bytearray(_LENGTH.size)
        self._read_into(memoryview(length))
        header = bytearray(_LENGTH.unpack(length)[0])
        self._read_into(memoryview(header))
        unpickler = _TensorUnpickler(io.BytesIO(header))
        obj = unpickler.load()
        for t in unpickler.tensors:
            if t.nbytes:
                self._read_into(_tensor_bytes(t))
        return obj

    def discard_available(self):
        """Reads and drops what the pipe holds now; False once the worker is gone and the
        pipe is empty."""
        while True:
            try:
                if not self.wait(0):
                    return True
            except WorkerDied:
                return False
            if not os.read(self.fd, _PIPE_BYTES):
                return False


def _rebuild_tensor(data, dtype, shape, requires_grad):
    t = tp.empty(shape, dtype=dtype)
    if t.nbytes:
        _tensor_bytes(t)[:] = data
    return t.requires_grad_(requires_grad)


def _reduce_tensor(t):
    data = _sendable(t)
    return _rebuild_tensor, (bytes(_tensor_bytes(data)) if data.nbytes else b"", t.dtype,
                             tuple(t.shape), t.requires_grad)


# Process arguments under the spawn and forkserver start methods (a TensorDataset, ...)
# are pickled by multiprocessing; tensors then travel by value, unless
# tensorplay.multiprocessing was imported: its reducers (shared memory, as PyTorch's) stay.
if tp.Tensor not in ForkingPickler._extra_reducers:
    ForkingPickler.register(tp.Tensor, _reduce_tensor)
