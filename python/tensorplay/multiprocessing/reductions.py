"""How tensors cross process boundaries through ``tensorplay.multiprocessing`` (PyTorch's
torch.multiprocessing.reductions): a CPU tensor is sent as its storage, moved into shared
memory first, plus its dtype, offset, sizes and strides, so the receiving process maps the
same pages and writes on either side are seen by the other (Note [Shared memory storages] in
csrc/core/shared_memory.cpp). The storage travels as a file descriptor (PyTorch's
"file_descriptor" strategy, its default on Linux) through multiprocessing's own fd passing.

Other tensors (CUDA, meta, tensor subclasses that keep their data elsewhere) travel by value,
as ``pickle`` sends them. PyTorch shares CUDA tensors through CUDA IPC handles; TensorPlay
does not have those yet.
"""
import multiprocessing
import os
from multiprocessing.reduction import ForkingPickler

import tensorplay
from tensorplay._tensor import Tensor, UntypedStorage

__all__ = ["init_reductions", "reduce_tensor", "rebuild_tensor", "reduce_storage",
           "rebuild_storage_fd", "fd_id"]


def fd_id(fd):
    """(inode, device) of a file descriptor: which shared-memory file it is."""
    st = os.fstat(fd)
    return (st.st_ino, st.st_dev)


def rebuild_storage_fd(cls, df, size):
    """The receiving side of reduce_storage: maps the file (a process maps each file once,
    so tensors sent one by one keep sharing one storage)."""
    fd = df.detach()
    try:
        return cls._new_shared_fd_cpu(fd, size)
    finally:
        os.close(fd)


def rebuild_storage_empty(cls):
    return cls(tensorplay.empty(0, dtype=tensorplay.uint8))


def reduce_storage(storage):
    """Moves the storage into shared memory and sends its file descriptor."""
    if storage.device.type != "cpu":
        raise RuntimeError("Cannot pickle a CUDA storage: TensorPlay has no CUDA IPC yet")
    if storage.nbytes() == 0:
        return (rebuild_storage_empty, (type(storage),))
    fd, size = storage._share_fd_cpu_()
    return (rebuild_storage_fd, (type(storage), multiprocessing.reduction.DupFd(fd), size))


def rebuild_tensor(cls, storage, metadata):
    dtype, storage_offset, size, stride, requires_grad = metadata
    t = tensorplay.empty(0, dtype=dtype).set_(storage, storage_offset, size, stride)
    if cls is tensorplay.nn.Parameter:
        # requires_grad goes to the constructor, which refuses it for integer tensors
        return tensorplay.nn.Parameter(t, requires_grad=requires_grad)
    t.requires_grad = requires_grad
    return t


def reduce_tensor(tensor):
    """A CPU tensor travels as (its storage in shared memory, dtype, offset, sizes, strides,
    requires_grad); a non-leaf that requires grad is refused, as in PyTorch."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, "
            "since autograd does not support crossing process boundaries.  "
            "If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")
    if tensor.device.type != "cpu" or tensor._storage_ptr == 0 and tensor.numel():
        return tensor.__reduce_ex__(ForkingPickler.HIGHEST_PROTOCOL)  # by value
    metadata = (tensor.dtype, tensor.storage_offset(), tuple(tensor.size()), tensor.stride(),
                tensor.requires_grad)
    return (rebuild_tensor, (type(tensor), tensor.untyped_storage(), metadata))


def init_reductions():
    """Registers the reducers with multiprocessing's pickler (done when
    tensorplay.multiprocessing is imported)."""
    ForkingPickler.register(UntypedStorage, reduce_storage)
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(tensorplay.nn.Parameter, reduce_tensor)
