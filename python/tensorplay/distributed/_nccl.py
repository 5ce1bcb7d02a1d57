"""The NCCL process group: tensorplay.distributed's backend for CUDA tensors.

NCCL is found at run time (Note [NCCL at run time] in docs/architecture.md): the shared
library of the ``nvidia-nccl-cu13`` / ``-cu12`` wheel (what a PyTorch install brings), then
``TP_NCCL_LIBRARY``, then the system's ``libnccl.so.2``; nothing is needed to build or
import tensorplay. Its C API is called through ctypes: one foreign call per collective,
which costs less than the bookkeeping around it.

The group offers the interface tensorplay.distributed's collectives drive (that of
``_C_distributed.ProcessGroupGloo``: raw device pointers, byte or element counts, dtype and
op codes). Every collective is enqueued on the calling thread's current CUDA stream, so it
is ordered after the kernels that produced its input and before those that read its result
with no event in between; its Work records an event, which ``is_completed`` queries and
``wait`` makes the current stream wait on (PyTorch's stream semantics: ``wait`` blocks the
stream, not the host).
"""
import ctypes
import os

import tensorplay as tp

# ncclDataType_t and ncclRedOp_t (NCCL's ABI)
_NCCL_INT8, _NCCL_UINT8, _NCCL_INT32, _NCCL_INT64 = 0, 1, 2, 4
_NCCL_FLOAT16, _NCCL_FLOAT32, _NCCL_FLOAT64, _NCCL_BFLOAT16 = 6, 7, 8, 9
_NCCL_SUM, _NCCL_PROD, _NCCL_MAX, _NCCL_MIN = 0, 1, 2, 3

# tensorplay.distributed's dtype codes (F32, F64, F16, BF16, I8, U8, I16, I32, I64, BOOL)
_DTYPES = {0: _NCCL_FLOAT32, 1: _NCCL_FLOAT64, 2: _NCCL_FLOAT16, 3: _NCCL_BFLOAT16,
           4: _NCCL_INT8, 5: _NCCL_UINT8, 7: _NCCL_INT32, 8: _NCCL_INT64, 9: _NCCL_UINT8}
_DTYPE_NAMES = {6: "torch.int16"}
# op codes (SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR)
_OPS = {0: _NCCL_SUM, 1: _NCCL_PROD, 2: _NCCL_MIN, 3: _NCCL_MAX}


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


_lib = None
_lib_error = None


def _candidates():
    env = os.environ.get("TP_NCCL_LIBRARY")
    if env:
        yield env
    try:
        import nvidia.nccl as pkg  # the nvidia-nccl-cuXX wheel (PyTorch's dependency)
        for base in list(getattr(pkg, "__path__", [])):
            yield os.path.join(base, "lib", "libnccl.so.2")
    except ImportError:
        pass
    yield "libnccl.so.2"
    yield "libnccl.so"


def library():
    """The loaded NCCL library, or None (with the reason in ``_lib_error``)."""
    global _lib, _lib_error
    if _lib is not None or _lib_error is not None:
        return _lib
    if not (tp._C._cuda_compiled and tp.cuda.is_available()):
        _lib_error = "tensorplay was built without CUDA or no GPU is visible"
        return None
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        _declare(lib)
        _lib = lib
        return lib
    _lib_error = "NCCL was not found (" + "; ".join(tried) + ")"
    return None


def _declare(lib):
    p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    lib.ncclGetErrorString.restype = ctypes.c_char_p
    lib.ncclGetErrorString.argtypes = [i]
    lib.ncclGetLastError.restype = ctypes.c_char_p
    lib.ncclGetLastError.argtypes = [p]
    lib.ncclGetVersion.argtypes = [ctypes.POINTER(i)]
    lib.ncclGetUniqueId.argtypes = [ctypes.POINTER(_UniqueId)]
    lib.ncclCommInitRank.argtypes = [ctypes.POINTER(p), i, _UniqueId, i]
    lib.ncclCommDestroy.argtypes = [p]
    lib.ncclCommAbort.argtypes = [p]
    lib.ncclCommGetAsyncError.argtypes = [p, ctypes.POINTER(i)]
    lib.ncclAllReduce.argtypes = [p, p, sz, i, i, p, p]
    lib.ncclReduce.argtypes = [p, p, sz, i, i, i, p, p]
    lib.ncclBroadcast.argtypes = [p, p, sz, i, i, p, p]
    lib.ncclAllGather.argtypes = [p, p, sz, i, p, p]
    lib.ncclReduceScatter.argtypes = [p, p, sz, i, i, p, p]
    lib.ncclSend.argtypes = [p, sz, i, i, p, p]
    lib.ncclRecv.argtypes = [p, sz, i, i, p, p]
    for name in ("ncclGroupStart", "ncclGroupEnd"):
        getattr(lib, name).argtypes = []
    for f in (lib.ncclGetVersion, lib.ncclGetUniqueId, lib.ncclCommInitRank, lib.ncclCommDestroy,
              lib.ncclCommAbort, lib.ncclCommGetAsyncError, lib.ncclAllReduce, lib.ncclReduce,
              lib.ncclBroadcast, lib.ncclAllGather, lib.ncclReduceScatter, lib.ncclSend,
              lib.ncclRecv, lib.ncclGroupStart, lib.ncclGroupEnd):
        f.restype = i


def version():
    """NCCL's version as a tuple (major, minor, patch), as torch.cuda.nccl.version()."""
    lib = library()
    if lib is None:
        raise RuntimeError(_lib_error)
    v = ctypes.c_int()
    lib.ncclGetVersion(ctypes.byref(v))
    code = v.value
    return (code // 10000, (code % 10000) // 100, code % 100) if code >= 10000 else \
        (code // 1000, (code % 1000) // 100, code % 100)


class _Work:
    """A collective enqueued on a stream: its completion is an event recorded after it."""

    __slots__ = ("_event", "_error")

    def __init__(self, error=None):
        self._error = error
        self._event = None
        if error is None:
            self._event = tp.cuda.Event()
            self._event.record()

    def wait(self, timeout_ms=0):
        if self._error:
            raise RuntimeError(self._error)
        tp.cuda.current_stream().wait_event(self._event)
        return True

    def is_completed(self):
        return self._error is not None or self._event.query()

    def is_success(self):
        return self._error is None

    def exception_message(self):
        return self._error or ""

    def source_rank(self):
        raise RuntimeError("source_rank is defined for recv from any source only")


class ProcessGroupNCCL:
    """One NCCL communicator over ``size`` ranks, each on its own GPU (``device``).

    The communicator's unique id travels through the store (rank 0 makes it)."""

    def __init__(self, store, prefix, rank, size, timeout_ms, device):
        lib = library()
        if lib is None:
            raise RuntimeError(f"Distributed package doesn't have NCCL built in: {_lib_error}")
        self._lib = lib
        self._rank, self._size = rank, size
        self._device = device
        tp.cuda.set_device(device)
        uid = _UniqueId()
        key = prefix + "nccl_unique_id"
        if rank == 0:
            self._check(lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
            store.set(key, bytes(uid.internal))
        else:
            data = store.get(key)
            ctypes.memmove(ctypes.byref(uid), data, 128)
        comm = ctypes.c_void_p()
        self._check(lib.ncclCommInitRank(ctypes.byref(comm), size, uid, rank), "ncclCommInitRank")
        self._comm = comm
        self._one = None  # barrier's buffer

    # ---- helpers
    def _check(self, result, what):
        if result != 0:
            detail = self._lib.ncclGetLastError(None)
            msg = self._lib.ncclGetErrorString(result).decode()
            if detail:
                msg += ": " + detail.decode(errors="replace")
            raise RuntimeError(f"NCCL error in {what}: {msg} (NCCL version "
                               f"{'.'.join(map(str, version()))})")

    def _stream(self):
        return ctypes.c_void_p(tp._C._cuda_getCurrentStream(self._device)[0])

    def _live(self):
        if self._comm is None:
            raise RuntimeError("the NCCL process group was shut down")
        return self._comm

    @staticmethod
    def _dtype(code):
        try:
            return _DTYPES[code]
        except KeyError:
            raise RuntimeError(f"Unsupported dtype {_DTYPE_NAMES.get(code, code)} for NCCL "
                               "process group") from None

    @staticmethod
    def _op(code, dtype_code):
        if dtype_code == 9:  # bool: a sum is a logical or, a product a logical and
            return {0: _NCCL_MAX, 1: _NCCL_MIN, 2: _NCCL_MIN, 3: _NCCL_MAX}.get(code, -1)
        try:
            return _OPS[code]
        except KeyError:
            raise RuntimeError("Cannot use ReduceOp.BAND/BOR/BXOR with NCCL") from None

    def _done(self):
        return _Work()

    # ---- the interface of tensorplay.distributed's groups
    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def shutdown(self):
        if self._comm is not None:
            self._lib.ncclCommDestroy(self._comm)
            self._comm = None

    def abort(self):
        if self._comm is not None:
            self._lib.ncclCommAbort(self._comm)
            self._comm = None

    def allreduce(self, ptr, count, dtype, op):
        nop = self._op(op, dtype)
        self._check(self._lib.ncclAllReduce(ptr, ptr, count, self._dtype(dtype), nop, self._live(),
                                            self._stream()), "ncclAllReduce")
        return self._done()

    def reduce(self, ptr, count, dtype, op, root):
        nop = self._op(op, dtype)
        self._check(self._lib.ncclReduce(ptr, ptr, count, self._dtype(dtype), nop, root, self._live(),
                                         self._stream()), "ncclReduce")
        return self._done()

    def broadcast(self, ptr, nbytes, root):
        self._check(self._lib.ncclBroadcast(ptr, ptr, nbytes, _NCCL_UINT8, root, self._live(),
                                            self._stream()), "ncclBroadcast")
        return self._done()

    def allgather(self, inptr, outptr, nbytes):
        self._check(self._lib.ncclAllGather(inptr, outptr, nbytes, _NCCL_UINT8, self._live(),
                                            self._stream()), "ncclAllGather")
        return self._done()

    def reduce_scatter(self, inptr, outptr, count, dtype, op):
        """``count`` elements per rank: rank r gets the reduction of every rank's r-th chunk."""
        nop = self._op(op, dtype)
        self._check(self._lib.ncclReduceScatter(inptr, outptr, count, self._dtype(dtype), nop,
                                                self._live(), self._stream()), "ncclReduceScatter")
        return self._done()

    def group_start(self):
        """Opens an NCCL group: the point-to-point calls until group_end go out together."""
        self._check(self._lib.ncclGroupStart(), "ncclGroupStart")

    def group_end(self):
        self._check(self._lib.ncclGroupEnd(), "ncclGroupEnd")

    def _grouped(self, what, calls):
        lib, comm, stream = self._lib, self._live(), self._stream()
        self._check(lib.ncclGroupStart(), "ncclGroupStart")
        try:
            for send, ptr, nbytes, peer in calls:
                f = lib.ncclSend if send else lib.ncclRecv
                self._check(f(ptr, nbytes, _NCCL_UINT8, peer, comm, stream), what)
        finally:
            self._check(lib.ncclGroupEnd(), "ncclGroupEnd")
        return self._done()

    def gather(self, inptr, outptr, nbytes, root):
        calls = [(True, inptr, nbytes, root)]
        if self._rank == root:
            calls += [(False, outptr + r * nbytes, nbytes, r) for r in range(self._size)]
        return self._grouped("gather", calls)

    def scatter(self, inptrs, outptr, nbytes, root):
        calls = [(False, outptr, nbytes, root)]
        if self._rank == root:
            calls += [(True, inptrs[r], nbytes, r) for r in range(self._size)]
        return self._grouped("scatter", calls)

    def alltoall(self, inptr, outptr, chunk):
        calls = []
        for r in range(self._size):
            calls.append((True, inptr + r * chunk, chunk, r))
            calls.append((False, outptr + r * chunk, chunk, r))
        return self._grouped("alltoall", calls)

    def barrier(self):
        if self._one is None:
            self._one = tp.zeros(1, device=f"cuda:{self._device}")
        self.allreduce(self._one.data_ptr(), 1, 0, 0)
        work = self._done()
        work._event.synchronize()  # a barrier holds the host, as PyTorch's NCCL barrier does
        return work

    def send(self, ptr, nbytes, peer, tag):
        return self._grouped("ncclSend", [(True, ptr, nbytes, peer)])

    def recv(self, ptr, nbytes, peer, tag):
        if peer < 0:
            raise RuntimeError("NCCL has no receive from any source (recv needs src)")
        return self._grouped("ncclRecv", [(False, ptr, nbytes, peer)])
