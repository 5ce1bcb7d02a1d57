"""tensorplay.distributed: torch.distributed's API over Gloo (CPU).

The process group is tensorplay._C_distributed.ProcessGroupGloo (Debian's libgloo, TCP
transport); the rendezvous stores are in _store.py. Note [Distributed engine] in
docs/architecture.md.
"""
import io
import os
import pickle
import socket
import threading
import time
from datetime import timedelta

import tensorplay as tp

from ._store import (DistBackendError, DistError, DistStoreError, FileStore, HashStore,
                     PrefixStore, Store, TCPStore)

try:
    from tensorplay import _C_distributed as _C
except ImportError:  # built without Gloo
    _C = None

__all__ = [
    "is_available", "init_process_group", "destroy_process_group", "is_initialized",
    "get_rank", "get_world_size", "get_backend", "new_group", "barrier", "monitored_barrier",
    "ReduceOp", "Work", "P2POp", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "gather", "scatter", "send", "recv", "isend", "irecv",
    "batch_isend_irecv", "broadcast_object_list", "all_gather_object", "gather_object",
    "scatter_object_list", "TCPStore", "FileStore", "HashStore", "PrefixStore", "Store",
    "DistError", "DistStoreError", "DistBackendError", "Backend", "GroupMember", "group",
    "get_global_rank", "get_group_rank", "get_process_group_ranks",
]

default_pg_timeout = timedelta(minutes=30)


def is_available():
    return _C is not None


def is_gloo_available():
    return _C is not None


def is_nccl_available():
    """Whether NCCL's library was found (it is loaded at run time: tensorplay/distributed/_nccl.py)."""
    from tensorplay.distributed import _nccl
    return _nccl.library() is not None


def is_mpi_available():
    return False


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


class Backend(str):
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        return str.__new__(cls, name.lower())


class _RedOp:
    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name, self.value = name, value

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __eq__(self, other):
        return isinstance(other, _RedOp) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


class ReduceOp:
    SUM = _RedOp("SUM", 0)
    AVG = _RedOp("AVG", 1)
    PRODUCT = _RedOp("PRODUCT", 2)
    MIN = _RedOp("MIN", 3)
    MAX = _RedOp("MAX", 4)
    BAND = _RedOp("BAND", 5)
    BOR = _RedOp("BOR", 6)
    BXOR = _RedOp("BXOR", 7)
    RedOpType = _RedOp


# the C++ op codes (csrc/distributed/process_group_gloo.cpp)
_OP_CODE = {"SUM": 0, "PRODUCT": 1, "MIN": 2, "MAX": 3, "BAND": 4, "BOR": 5, "BXOR": 6}

_DTYPE_CODE = {}


def _dtype_code(dtype):
    if not _DTYPE_CODE:
        _DTYPE_CODE.update({tp.float32: 0, tp.float64: 1, tp.float16: 2, tp.bfloat16: 3,
                            tp.int8: 4, tp.uint8: 5, tp.int16: 6, tp.int32: 7, tp.int64: 8,
                            tp.bool: 9})
    try:
        return _DTYPE_CODE[dtype]
    except KeyError:
        raise RuntimeError(f"Unsupported dtype {dtype} for Gloo reductions") from None


# ---- groups ----
class ProcessGroup:
    """A group of ranks: its Gloo group (None on ranks outside it) and its rank map."""

    def __init__(self, pg, ranks, backend, timeout, store):
        self._pg = pg
        self._ranks = list(ranks)  # group rank -> global rank
        self._backend = backend
        self._timeout = timeout
        self._store = store
        self._p2p_tag = {}

    def rank(self):
        return self._pg.rank()

    def size(self):
        return len(self._ranks)

    def name(self):
        return self._backend


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


class group:
    WORLD = None


_state = threading.local()
_world = {"pg": None, "store": None, "groups": [], "count": 0, "backend": None}


def is_initialized():
    return _world["pg"] is not None


def _require_init():
    if _world["pg"] is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")


def _group(group):
    _require_init()
    if group is None or group is GroupMember.WORLD:
        return _world["pg"]
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return group


def _timeout_seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")


def _local_host(master_addr):
    if master_addr in ("localhost", "127.0.0.1", "::1") or master_addr.startswith("127."):
        return "127.0.0.1"
    ifname = os.environ.get("GLOO_SOCKET_IFNAME")
    if ifname:
        import fcntl
        import struct
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", ifname[:15].encode()))
        return socket.inet_ntoa(packed[20:24])
    return socket.gethostbyname(socket.gethostname())


def _rendezvous(init_method, rank, world_size, timeout):
    if init_method.startswith("env://"):
        def env(name):
            v = os.environ.get(name)
            if v is None:
                raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                                 f"environment variable {name} expected, but not set")
            return v
        if rank < 0:
            rank = int(env("RANK"))
        if world_size < 0:
            world_size = int(env("WORLD_SIZE"))
        addr, port = env("MASTER_ADDR"), int(env("MASTER_PORT"))
        store = TCPStore(addr, port, world_size, rank == 0, timeout=timeout, wait_for_workers=False)
        return store, rank, world_size, addr
    if init_method.startswith("tcp://"):
        from urllib.parse import urlparse, parse_qs
        u = urlparse(init_method)
        q = parse_qs(u.query)
        if rank < 0 and "rank" in q:
            rank = int(q["rank"][0])
        if world_size < 0 and "world_size" in q:
            world_size = int(q["world_size"][0])
        if rank < 0 or world_size < 0:
            raise ValueError("rank and world_size must be given with a tcp:// init_method")
        store = TCPStore(u.hostname, u.port, world_size, rank == 0, timeout=timeout, wait_for_workers=False)
        return store, rank, world_size, u.hostname
    if init_method.startswith("file://"):
        if rank < 0 or world_size < 0:
            raise ValueError("rank and world_size must be given with a file:// init_method")
        store = FileStore(init_method[len("file://"):], world_size)
        store.set_timeout(timeout)
        return store, rank, world_size, "127.0.0.1"
    raise ValueError(f"No rendezvous handler for {init_method}")


def _make_nccl(store, prefix, rank, size, timeout):
    from tensorplay.distributed import _nccl
    try:
        return _nccl.ProcessGroupNCCL(store, prefix, rank, size, int(timeout * 1000), _world["device"])
    except RuntimeError as e:
        raise DistBackendError(str(e)) from e


def _make_group(store, prefix, rank, size, timeout, host):
    """A process group of the world's backend (Gloo for CPU tensors, NCCL for CUDA ones)."""
    if _world["backend"] == "nccl":
        return _make_nccl(store, prefix, rank, size, timeout)
    return _make_gloo(store, prefix, rank, size, timeout, host)


def _make_gloo(store, prefix, rank, size, timeout, host):
    if _C is None:
        raise RuntimeError("Distributed package doesn't have Gloo built in (tensorplay was built "
                           "without libgloo-dev)")
    try:
        return _C.ProcessGroupGloo(store, prefix, rank, size, int(timeout * 1000), host)
    except RuntimeError as e:
        raise DistBackendError(str(e)) from e


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    if _world["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is None:
        backend = "gloo"
    backend = Backend(backend)
    if backend in ("cuda:nccl",):
        backend = Backend("nccl")
    if backend not in ("gloo", "cpu:gloo", "nccl"):
        raise RuntimeError(f"Invalid backend: '{backend}' (tensorplay.distributed has Gloo for CPU "
                           "and NCCL for CUDA)"
                           if backend not in ("mpi", "ucc")
                           else f"Distributed package doesn't have {backend.upper()} built in")
    if backend == "nccl" and not is_nccl_available():
        from tensorplay.distributed import _nccl
        raise RuntimeError(f"Distributed package doesn't have NCCL built in: {_nccl._lib_error}")
    t = _timeout_seconds(timeout) or default_pg_timeout.total_seconds()
    if store is not None:
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        if rank < 0 or world_size <= 0:
            raise ValueError("rank and world_size must be specified when store is given")
        host = "127.0.0.1"
    else:
        store, rank, world_size, addr = _rendezvous(init_method or "env://", rank, world_size, t)
        host = _local_host(addr)
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank} for world_size {world_size}")
    _DEBUG_DETAIL[0] = (os.environ.get("TP_DISTRIBUTED_DEBUG") or
                        os.environ.get("TORCH_DISTRIBUTED_DEBUG", "")).upper() == "DETAIL"
    kind = "nccl" if backend == "nccl" else "gloo"
    device = -1
    if kind == "nccl":  # this rank's GPU: device_id, else LOCAL_RANK, else the current one
        if device_id is not None:
            device = tp.device(device_id).index if not isinstance(device_id, int) else device_id
        elif "LOCAL_RANK" in os.environ:
            device = int(os.environ["LOCAL_RANK"])
        else:
            device = tp.cuda.current_device()
        if device is None or device < 0:
            device = tp.cuda.current_device()
    _world.update(backend=kind, device=device, host=host)
    pg = _make_group(store, "default_pg/", rank, world_size, t, host)
    _world.update(pg=ProcessGroup(pg, range(world_size), kind, t, store), store=store,
                  count=0, rank=rank)
    GroupMember.WORLD = group.WORLD = _world["pg"]


def destroy_process_group(group=None):
    if group is None or group is GroupMember.WORLD:
        for g in _world["groups"] + ([_world["pg"]] if _world["pg"] else []):
            if g is not None and g._pg is not None:
                g._pg.shutdown()
        _world.update(pg=None, store=None, groups=[], count=0)
        GroupMember.WORLD = group_ = None
        globals()["group"].WORLD = group_
        return
    if group._pg is not None:
        group._pg.shutdown()
    if group in _world["groups"]:
        _world["groups"].remove(group)


def get_rank(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group=None):
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_backend(group=None):
    return _group(group)._backend


def get_process_group_ranks(group):
    return list(_group(group)._ranks)


def get_global_rank(group, group_rank):
    return _group(group)._ranks[group_rank]


def get_group_rank(group, global_rank):
    ranks = _group(group)._ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """Every rank calls it (as in PyTorch); ranks outside `ranks` get NON_GROUP_MEMBER."""
    _require_init()
    world = _world["pg"]
    n = world.size()
    ranks = sorted(range(n) if ranks is None else ranks)
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(f"Invalid rank {r} in new_group (world size {n})")
    if len(set(ranks)) != len(ranks):
        raise ValueError("new_group ranks must be unique")
    _world["count"] += 1
    me = world.rank()
    if me not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    t = _timeout_seconds(timeout) or world._timeout
    pg = _make_group(_world["store"], f"group_{_world['count']}/", ranks.index(me), len(ranks), t,
                     _world["host"])
    g = ProcessGroup(pg, ranks, _world["backend"], t, _world["store"])
    _world["groups"].append(g)
    return g


# ---- Work ----
class Work:
    """The handle of an async operation (PyTorch's Work): wait(), is_completed(), result()."""

    def __init__(self, cwork, after=None, keep=(), result=None):
        self._w = cwork
        self._after = after
        self._keep = keep
        self._result = result
        self._lock = threading.Lock()

    def wait(self, timeout=None):
        ms = 0 if timeout is None else max(1, int(_timeout_seconds(timeout) * 1000))
        for w in (self._w if isinstance(self._w, list) else [self._w]):
            try:
                w.wait(ms)
            except RuntimeError as e:
                raise DistBackendError(str(e)) from e
        with self._lock:
            after, self._after = self._after, None
        if after is not None:
            with tp.no_grad():
                after()
        self._keep = ()
        return True

    def is_completed(self):
        ws = self._w if isinstance(self._w, list) else [self._w]
        return all(w.is_completed() for w in ws)

    def is_success(self):
        ws = self._w if isinstance(self._w, list) else [self._w]
        return all(w.is_success() for w in ws)

    def result(self):
        return self._result if self._result is not None else []

    def _source_rank(self):
        return self._w.source_rank()

    def exception(self):
        ws = self._w if isinstance(self._w, list) else [self._w]
        for w in ws:
            msg = w.exception_message()
            if msg:
                return DistBackendError(msg)
        return None


class _Done:
    def wait(self, ms=0):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def exception_message(self):
        return ""


def _finish(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


# ---- buffers: contiguous CPU tensors the C++ group reads and writes ----
def _check_tensor(t, name="tensor"):
    if not isinstance(t, tp.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor but got {type(t)} instead.")
    if t.device.type != ("cuda" if _world["backend"] == "nccl" else "cpu"):
        if _world["backend"] == "nccl":
            raise RuntimeError(f"No backend type associated with device type {t.device.type} "
                               "(the NCCL process group holds CUDA tensors)")
        raise RuntimeError("tensorplay.distributed's Gloo backend holds CPU tensors only")


def _contig(t):
    return t if t.is_contiguous() else t.contiguous()


def _nbytes(t):
    return t.numel() * t.element_size()


def _is_complex(t):
    return t.dtype in (getattr(tp, "complex64", None), getattr(tp, "complex128", None)) and t.dtype is not None


def _reduce_view(t):
    """(buffer tensor, dtype code) for a reduction: complex tensors as their real pairs."""
    if _is_complex(t):
        r = tp.view_as_real(t)
        return r, _dtype_code(r.dtype)
    return t, _dtype_code(t.dtype)


def _op_name(op, dtype):
    if not isinstance(op, _RedOp):
        raise ValueError(f"Invalid reduce op {op!r}")
    if op.name in ("BAND", "BOR", "BXOR") and (dtype.is_floating_point or _is_complex_dtype(dtype)):
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with a floating-point tensor")
    return op.name


def _is_complex_dtype(dtype):
    return dtype in (getattr(tp, "complex64", None), getattr(tp, "complex128", None)) and dtype is not None


def _rank_in(g):
    if g is GroupMember.NON_GROUP_MEMBER:
        return False
    return True


def _grank(g, r, what):
    """A global rank -> the group's rank (PyTorch's collectives take global ranks)."""
    try:
        return g._ranks.index(r)
    except ValueError:
        raise ValueError(f"{what} rank {r} is not part of the group") from None


# ---- TP_DISTRIBUTED_DEBUG=DETAIL (or TORCH_DISTRIBUTED_DEBUG): mismatched collectives ----
_DEBUG_DETAIL = [False]  # read at init_process_group


def _fingerprint(g, op_name, tensors, op=None, dtype=None):
    """Before the collective, every rank of g publishes what it is about to run (the
    operation, the reduction, dtypes and shapes) under the group's next sequence number and
    compares it with the others': a rank that calls a different collective, or the same one
    with another shape or dtype, makes every rank raise naming both, instead of hanging or
    mixing buffers."""
    seq = g._p2p_tag.get("fingerprint", 0) + 1
    g._p2p_tag["fingerprint"] = seq
    parts = [f"OpType={op_name.upper().replace('ALL_', 'ALL')}"]  # ALLREDUCE, ALLTOALL_SINGLE, ...
    if op is not None:
        parts.append(f"ReduceOp={getattr(op, 'name', op)}")
    if tensors is not None:
        parts.append("TensorShape=" + str([list(t.shape) for t in tensors]))
        parts.append("TensorDtypes=" + str([str(t.dtype).replace("tensorplay.", "torch.")
                                            for t in tensors]))
    elif dtype is not None:
        parts.append(f"TensorDtypes={str(dtype).replace('tensorplay.', 'torch.')}")
    mine = "CollectiveFingerPrint(" + ", ".join(parts) + ")"
    store = _world["store"]
    key = f"fingerprint/{id(g) if g is not _world['pg'] else 'world'}/{seq}"
    me = g.rank()
    store.set(f"{key}/{me}", mine.encode())
    timeout = timedelta(seconds=g._timeout)
    for r in range(g.size()):
        if r == me:
            continue
        store.wait([f"{key}/{r}"], timeout)
        theirs = store.get(f"{key}/{r}").decode()
        if theirs != mine:
            raise RuntimeError(f"Detected mismatch between collectives on ranks. Rank {g._ranks[me]} "
                               f"is running collective: {mine}, but Rank {g._ranks[r]} is running "
                               f"collective: {theirs}.")


# ---- collectives ----
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    if not _rank_in(group):
        return None
    _check_tensor(tensor)
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "all_reduce", (tensor,), op)
    name = _op_name(op, tensor.dtype)
    avg = name == "AVG"
    if avg and not (tensor.dtype.is_floating_point or _is_complex_dtype(tensor.dtype)):
        raise RuntimeError("ReduceOp.AVG needs a floating-point tensor")
    buf = _contig(tensor)
    view, code = _reduce_view(buf)
    w = g._pg.allreduce(view.data_ptr(), view.numel(), code, _OP_CODE["SUM" if avg else name])

    def after():
        if avg:
            buf.div_(g.size())
        if buf is not tensor:
            tensor.copy_(buf)
    return _finish(Work(w, after, (buf, view), [tensor]), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    if not _rank_in(group):
        return None
    _check_tensor(tensor)
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "reduce", (tensor,), op)
    root = group_dst if group_dst is not None else _grank(g, 0 if dst is None else dst, "dst")
    name = _op_name(op, tensor.dtype)
    avg = name == "AVG"
    me = g.rank()
    # Gloo's reduce uses the buffer as scratch on every rank: non-roots reduce a copy.
    buf = _contig(tensor) if me == root else tensor.clone(memory_format=tp.contiguous_format)
    view, code = _reduce_view(buf)
    w = g._pg.reduce(view.data_ptr(), view.numel(), code, _OP_CODE["SUM" if avg else name], root)

    def after():
        if me == root:
            if avg:
                buf.div_(g.size())
            if buf is not tensor:
                tensor.copy_(buf)
    return _finish(Work(w, after, (buf, view), [tensor]), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    if not _rank_in(group):
        return None
    _check_tensor(tensor)
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "broadcast", (tensor,), None)
    root = group_src if group_src is not None else _grank(g, 0 if src is None else src, "src")
    buf = _contig(tensor)
    w = g._pg.broadcast(buf.data_ptr(), _nbytes(buf), root)

    def after():
        if buf is not tensor:
            tensor.copy_(buf)
    return _finish(Work(w, after, (buf,), [tensor]), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    if not _rank_in(group):
        return None
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "all_gather_into_tensor", (input_tensor,), None)
    if output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError("all_gather_into_tensor: input and output must have the same dtype")
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    inp = _contig(input_tensor)
    out = _contig(output_tensor)
    w = g._pg.allgather(inp.data_ptr(), out.data_ptr(), _nbytes(inp))

    def after():
        if out is not output_tensor:
            output_tensor.copy_(out)
    return _finish(Work(w, after, (inp, out), [output_tensor]), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    if not _rank_in(group):
        return None
    _check_tensor(tensor)
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "all_gather", (tensor,), None)
    if len(tensor_list) != g.size():
        raise ValueError(f"all_gather: tensor_list needs {g.size()} tensors, got {len(tensor_list)}")
    for t in tensor_list:
        _check_tensor(t, "tensor_list")
        if t.numel() != tensor.numel() or t.dtype != tensor.dtype:
            raise RuntimeError("all_gather: every tensor of tensor_list must match the input's "
                               "size and dtype (use all_gather_object for uneven data)")
    inp = _contig(tensor)
    flat = tp.empty((g.size() * inp.numel(),), dtype=inp.dtype, device=inp.device)
    w = g._pg.allgather(inp.data_ptr(), flat.data_ptr(), _nbytes(inp))
    n = inp.numel()

    def after():
        for i, t in enumerate(tensor_list):
            t.copy_(flat[i * n:(i + 1) * n].view(t.shape))
    return _finish(Work(w, after, (inp, flat), tensor_list), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    if not _rank_in(group):
        return None
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "reduce_scatter_tensor", (input,), op)
    if input.numel() != output.numel() * g.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    flat = input.reshape(-1).clone()
    return _reduce_scatter_flat(flat, [output], op, g, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    if not _rank_in(group):
        return None
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "reduce_scatter", (*input_list,), op)
    if len(input_list) != g.size():
        raise ValueError(f"reduce_scatter: input_list needs {g.size()} tensors")
    for t in input_list:
        _check_tensor(t, "input_list")
        if t.numel() != output.numel():
            raise RuntimeError("reduce_scatter: every input must have the output's size")
    flat = tp.cat([t.reshape(-1) for t in input_list])
    return _reduce_scatter_flat(flat, [output], op, g, async_op)


def _reduce_scatter_flat(flat, outs, op, g, async_op):
    # A full all-reduce, then each rank keeps its block (Gloo 0.5 has no reduce-scatter
    # over unbound buffers).
    out = outs[0]
    name = _op_name(op, flat.dtype)
    avg = name == "AVG"
    view, code = _reduce_view(flat)
    w = g._pg.allreduce(view.data_ptr(), view.numel(), code, _OP_CODE["SUM" if avg else name])
    n = out.numel()
    r = g.rank()

    def after():
        block = flat[r * n:(r + 1) * n]
        if avg:
            block = block / g.size()
        out.copy_(block.view(out.shape))
    return _finish(Work(w, after, (flat, view), [out]), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    if not _rank_in(group):
        return None
    _check_tensor(tensor)
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "gather", (tensor,), None)
    root = group_dst if group_dst is not None else _grank(g, 0 if dst is None else dst, "dst")
    me = g.rank()
    if me == root:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError("gather: the destination rank needs a gather_list of world_size tensors")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    inp = _contig(tensor)
    flat = tp.empty((g.size() * inp.numel(),), dtype=inp.dtype, device=inp.device) if me == root else inp
    w = g._pg.gather(inp.data_ptr(), flat.data_ptr(), _nbytes(inp), root)
    n = inp.numel()

    def after():
        if me == root:
            for i, t in enumerate(gather_list):
                t.copy_(flat[i * n:(i + 1) * n].view(t.shape))
    return _finish(Work(w, after, (inp, flat), gather_list or []), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    if not _rank_in(group):
        return None
    _check_tensor(tensor)
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "scatter", (tensor,), None)
    root = group_src if group_src is not None else _grank(g, 0 if src is None else src, "src")
    me = g.rank()
    ins = []
    if me == root:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError("scatter: the source rank needs a scatter_list of world_size tensors")
        for t in scatter_list:
            _check_tensor(t, "scatter_list")
            if t.numel() != tensor.numel() or t.dtype != tensor.dtype:
                raise RuntimeError("scatter: every tensor of scatter_list must match the output")
        ins = [_contig(t) for t in scatter_list]
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    out = _contig(tensor)
    w = g._pg.scatter([t.data_ptr() for t in ins], out.data_ptr(), _nbytes(out), root)

    def after():
        if out is not tensor:
            tensor.copy_(out)
    return _finish(Work(w, after, (ins, out), [tensor]), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    if not _rank_in(group):
        return None
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "all_to_all_single", None, None, dtype=input.dtype)
    n = g.size()
    if not output_split_sizes and not input_split_sizes:
        if input.numel() != output.numel() or input.shape[0] % n:
            raise ValueError("all_to_all_single: input and output must have the same size, "
                             "with a first dimension divisible by the world size")
        inp = _contig(input)
        out = _contig(output)
        w = g._pg.alltoall(inp.data_ptr(), out.data_ptr(), _nbytes(inp) // n)

        def after():
            if out is not output:
                output.copy_(out)
        return _finish(Work(w, after, (inp, out), [output]), async_op)
    ins = list(input.split(list(input_split_sizes) if input_split_sizes else input.shape[0] // n))
    outs = list(output.split(list(output_split_sizes) if output_split_sizes else output.shape[0] // n))
    return _all_to_all_p2p(outs, ins, g, async_op, [output])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    if not _rank_in(group):
        return None
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "all_to_all", None, None, dtype=input_tensor_list[0].dtype if input_tensor_list else None)
    n = g.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: both lists need {n} tensors")
    return _all_to_all_p2p(list(output_tensor_list), list(input_tensor_list), g, async_op,
                           output_tensor_list)


def _all_to_all_p2p(outs, ins, g, async_op, result):
    # Uneven blocks: one send and one receive per peer on a tag of their own.
    me, n = g.rank(), g.size()
    tag = _next_p2p_tag(g, "a2a")
    pairs = [(peer, _contig(ins[peer]), _contig(outs[peer])) for peer in range(n) if peer != me]
    copies = [(outs[peer], dst) for peer, _, dst in pairs if dst is not outs[peer]]
    works = []
    with _coalesced(g):
        for peer, src, dst in pairs:
            works.append(g._pg.send(src.data_ptr(), _nbytes(src), peer, tag))
            works.append(g._pg.recv(dst.data_ptr(), _nbytes(dst), peer, tag))
    with tp.no_grad():
        outs[me].copy_(ins[me])

    def after():
        for o, d in copies:
            o.copy_(d)
    return _finish(Work(works or [_Done()], after, pairs, result), async_op)


class _coalesced:
    """Point-to-point calls issued together: one NCCL group (NCCL runs a send only with its
    peer's matching receive in flight, so a rank's sends and receives must go out as one);
    nothing for Gloo, whose sends and receives are posted at once."""

    def __init__(self, g):
        self._pg = g._pg if getattr(g._pg, "group_start", None) else None

    def __enter__(self):
        if self._pg is not None:
            self._pg.group_start()

    def __exit__(self, *exc):
        if self._pg is not None:
            self._pg.group_end()


def _next_p2p_tag(g, kind):
    # Collective-internal point-to-point traffic gets tags above 2**30, counted alike on
    # every rank (these calls are collective), so they never meet users' send/recv tags.
    c = g._p2p_tag.get(kind, 0) + 1
    g._p2p_tag[kind] = c
    return (1 << 30) + (c % (1 << 28))


def barrier(group=None, async_op=False, device_ids=None):
    if not _rank_in(group):
        return None
    g = _group(group)
    if _DEBUG_DETAIL[0]:
        _fingerprint(g, "barrier", (), None, dtype=None)
    return _finish(Work(g._pg.barrier()), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """Rank 0 waits for every other rank's arrival through the store and names the ranks
    that did not arrive within timeout (PyTorch's message); then releases them."""
    if not _rank_in(group):
        return None
    g = _group(group)
    t = _timeout_seconds(timeout) if timeout is not None else g._timeout
    store = _world["store"]
    c = g._p2p_tag.get("mbar", 0) + 1
    g._p2p_tag["mbar"] = c
    key = f"monitored_barrier/{id(g) if g is not _world['pg'] else 'world'}/{c}"
    me = g.rank()
    if me != 0:
        store.set(f"{key}/arrive/{me}", b"1")
        store.wait([f"{key}/release"], timedelta(seconds=t))
        return None
    end = time.monotonic() + t
    missing = []
    for r in range(1, g.size()):
        left = max(0.001, end - time.monotonic())
        try:
            store.wait([f"{key}/arrive/{r}"], timedelta(seconds=left))
        except DistStoreError:
            missing.append(g._ranks[r])
            if not wait_all_ranks:
                raise RuntimeError(f"Rank {g._ranks[r]} failed to pass monitoredBarrier in "
                                   f"{int(t * 1000)} ms") from None
    if missing:
        raise RuntimeError(f"Ranks {', '.join(map(str, missing))} failed to pass monitoredBarrier "
                           f"in {int(t * 1000)} ms")
    store.set(f"{key}/release", b"1")


# ---- point to point ----
def _p2p_peer(g, peer, what):
    return _grank(g, peer, what)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    _check_tensor(tensor)
    g = _group(group)
    peer = group_dst if group_dst is not None else _p2p_peer(g, dst, "dst")
    if peer == g.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the current process.")
    buf = _contig(tensor)
    return Work(g._pg.send(buf.data_ptr(), _nbytes(buf), peer, int(tag)), None, (buf,))


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    _check_tensor(tensor)
    g = _group(group)
    if src is None and group_src is None:
        peer = -1  # any source: Work's source rank says which
    else:
        peer = group_src if group_src is not None else _p2p_peer(g, src, "src")
    if peer == g.rank():
        raise ValueError("Invalid source rank: should not be the same as the rank of the current process.")
    buf = _contig(tensor)

    def after():
        if buf is not tensor:
            tensor.copy_(buf)
    return Work(g._pg.recv(buf.data_ptr(), _nbytes(buf), peer, int(tag)), after, (buf,))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Returns the sender's (global) rank; src=None receives from any rank."""
    w = irecv(tensor, src, group, tag, group_src)
    w.wait()
    return get_global_rank(group, w._source_rank())


class P2POp:
    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv, send, recv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` "
                             "or ``torch.distributed.irecv``.")
        self.op = isend if op in (isend, send) else irecv
        self.tensor, self.peer, self.group, self.tag, self.group_peer = tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works = []
    with _coalesced(_group(p2p_op_list[0].group)):
        for p in p2p_op_list:
            if p.op is isend:
                works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
            else:
                works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


# ---- object collectives (pickle into uint8 tensors) ----
def _obj_device():
    """Where object collectives stage their bytes: the NCCL group's GPU, else the CPU."""
    return f"cuda:{_world['device']}" if _world["backend"] == "nccl" else "cpu"


def _to_tensor(obj):
    data = pickle.dumps(obj)
    t = tp.tensor(list(data), dtype=tp.uint8) if len(data) < 64 else \
        tp.from_numpy(__import__("numpy").frombuffer(bytearray(data), dtype="uint8"))
    return t if _world["backend"] != "nccl" else t.to(_obj_device())


def _from_tensor(t, size):
    return pickle.loads(bytes(t[:size].cpu().numpy().tobytes()))


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    if not _rank_in(group):
        return
    g = _group(group)
    root = group_src if group_src is not None else _grank(g, 0 if src is None else src, "src")
    me = g.rank()
    if me == root:
        blobs = [_to_tensor(o) for o in object_list]
        sizes = tp.tensor([b.numel() for b in blobs], dtype=tp.int64, device=_obj_device())
    else:
        sizes = tp.zeros(len(object_list), dtype=tp.int64, device=_obj_device())
    broadcast(sizes, group=group, group_src=root)
    total = int(sizes.sum())
    flat = tp.cat(blobs) if me == root and blobs else tp.empty(total, dtype=tp.uint8, device=_obj_device())
    broadcast(flat, group=group, group_src=root)
    if me != root:
        off = 0
        for i, s in enumerate(sizes.tolist()):
            object_list[i] = _from_tensor(flat[off:off + s], s)
            off += s


def all_gather_object(object_list, obj, group=None):
    if not _rank_in(group):
        return
    g = _group(group)
    n = g.size()
    blob = _to_tensor(obj)
    dev = _obj_device()
    size = tp.tensor([blob.numel()], dtype=tp.int64, device=dev)
    sizes = [tp.zeros(1, dtype=tp.int64, device=dev) for _ in range(n)]
    all_gather(sizes, size, group=group)
    sizes = [int(s) for s in sizes]
    m = max(sizes)
    padded = tp.zeros(m, dtype=tp.uint8, device=dev)
    padded[:blob.numel()] = blob
    outs = [tp.empty(m, dtype=tp.uint8, device=dev) for _ in range(n)]
    all_gather(outs, padded, group=group)
    for i in range(n):
        object_list[i] = _from_tensor(outs[i], sizes[i])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    if not _rank_in(group):
        return
    g = _group(group)
    root = group_dst if group_dst is not None else _grank(g, 0 if dst is None else dst, "dst")
    gathered = [None] * g.size()
    all_gather_object(gathered, obj, group=group)
    if g.rank() == root:
        object_gather_list[:] = gathered


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    if not _rank_in(group):
        return
    g = _group(group)
    root = group_src if group_src is not None else _grank(g, 0 if src is None else src, "src")
    objs = [list(scatter_object_input_list) if g.rank() == root else None]
    broadcast_object_list(objs, group=group, group_src=root)
    scatter_object_output_list[0] = objs[0][g.rank()]


# ---- DTensor, FSDP, distributed checkpoints (loaded on first use) ----
from tensorplay._lazy import lazy_submodule as _lazy  # noqa: E402

from .device_mesh import DeviceMesh, init_device_mesh  # noqa: E402,F401  (torch.distributed's)

tensor = _lazy(__name__, "tensor")
fsdp = _lazy(__name__, "fsdp")
checkpoint = _lazy(__name__, "checkpoint")
