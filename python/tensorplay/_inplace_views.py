"""In-place view methods, resizing, set_ and shared memory: the PyTorch signatures over the
C++ ops of csrc/ops/views_inplace.yaml (memory formats, Storage arguments, the
swapdims_/swapaxes_ aliases, resize_as_), plus the storage-level methods behind them
(UntypedStorage.resize_, share_memory_, is_shared)."""
import builtins
import functools
import operator
import warnings

from tensorplay import _C
from tensorplay._tensor import (Tensor, UntypedStorage, _method, _suggested_format,
                                channels_last, channels_last_3d, contiguous_format,
                                memory_format as _memory_format, preserve_format)

# the generated bindings, kept before the methods below take their names
_resize_ = Tensor.resize_
_set_ = Tensor.set_


@_method
def swapdims_(self, dim0, dim1):
    """``transpose_(dim0, dim1)`` (PyTorch's alias; its graph records transpose_)."""
    return self.transpose_(dim0, dim1)


@_method
def swapaxes_(self, axis0, axis1):
    """``transpose_(axis0, axis1)`` (NumPy's name)."""
    return self.transpose_(axis0, axis1)


def _format_strides(size, memory_format):
    """Dense strides of `size` in `memory_format` (resize_'s), PyTorch's checks included."""
    if memory_format is preserve_format:
        raise RuntimeError("Unsupported memory formatPreserve")
    if memory_format is contiguous_format:
        strides, acc = [0] * len(size), 1
        for d in range(len(size) - 1, -1, -1):
            strides[d] = acc
            acc *= builtins.max(size[d], 1)
        return strides
    rank = 4 if memory_format is channels_last else 5
    if len(size) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format._name} format")
    # C innermost, then the spatial dims from the last, then N (no floor at 1, as PyTorch)
    strides, acc = [0] * rank, 1
    for d in [1] + list(range(rank - 1, 1, -1)) + [0]:
        strides[d] = acc
        acc *= size[d]
    return strides


@_method
def resize_(self, *sizes, size=None, memory_format=None):
    """Gives self the sizes given (contiguous strides, or those of ``memory_format``),
    growing its storage when it needs more bytes; elements keep their bytes in storage order.
    Sizes equal to self's change nothing. Refuses tensors that require grad and storages that
    cannot grow (memory from NumPy, shared memory)."""
    if size is not None:
        if sizes:
            raise TypeError("resize_() got multiple values for argument 'size'")
        sizes = (size,)
    if not sizes:
        raise TypeError('resize_() missing 1 required positional arguments: "size"')
    if memory_format is not None and not isinstance(memory_format, _memory_format):
        raise TypeError(f"resize_(): argument 'memory_format' must be torch.memory_format, "
                        f"not {type(memory_format).__name__}")
    _resize_(self, *sizes)
    if memory_format is not None:
        _C._set_geometry(self, list(self.shape), _format_strides(tuple(self.shape), memory_format),
                         self.storage_offset())
    return self


@_method
def resize_as_(self, the_template, *, memory_format=None):
    """``resize_(the_template.shape, memory_format=...)``; ``preserve_format`` takes the
    template's layout (contiguous or channels last)."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, not "
                        f"{type(the_template).__name__}")
    if memory_format is preserve_format:
        memory_format = _suggested_format(the_template)
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def resize_as_fn(input, the_template, *, memory_format=None):
    """``input.resize_as_(the_template)``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"resize_as_(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return resize_as_(input, the_template, memory_format=memory_format)


resize_as_fn.__name__ = resize_as_fn.__qualname__ = "resize_as_"


def _resize_function():
    from tensorplay.autograd import Function

    class Resize(Function):
        """Tensor.resize's autograd Function (torch.autograd._functions.Resize): a reshape
        that keeps the number of elements, its gradient viewed back."""

        @staticmethod
        def forward(ctx, tensor, sizes):
            ctx.sizes = sizes
            ctx.numel = functools.reduce(operator.mul, sizes, 1)
            if tensor.numel() != ctx.numel:
                raise RuntimeError(
                    f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in total), "
                    f"but the given tensor has a size of {'x'.join(map(str, tensor.size()))} "
                    f"({tensor.numel()} elements). autograd's resize can only change the shape of a "
                    "given tensor, while preserving the number of elements. ")
            ctx.input_sizes = tensor.size()
            return tensor.contiguous().view(*sizes)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.contiguous().view(ctx.input_sizes), None

    return Resize


@_method
def resize(self, *sizes):
    """Deprecated: a reshaped alias of self (the element count must stay)."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _Resize().apply(self, sizes)


@_method
def resize_as(self, tensor):
    """Deprecated: ``resize(*tensor.size())``."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _Resize().apply(self, tensor.size())


@functools.cache
def _Resize():
    return _resize_function()


def _storage_source(source):
    """The UntypedStorage behind a Storage-like argument, or None."""
    if isinstance(source, UntypedStorage):
        return source
    untyped = getattr(source, "untyped", None)  # a TypedStorage-like object
    return untyped() if callable(untyped) and not isinstance(source, Tensor) else None


@_method
def set_(self, source=None, storage_offset=None, size=None, stride=None):
    """Makes self share memory: ``set_()`` an empty storage; ``set_(tensor)`` the tensor's
    storage, offset, sizes and strides; ``set_(storage)`` the whole storage as a 1-D tensor;
    ``set_(source, storage_offset, size, stride=())`` that view of the source's storage
    (grown when it is too small)."""
    if source is None:
        if storage_offset is not None or size is not None or stride is not None:
            raise TypeError("set_(): argument 'source' must be given with storage_offset and size")
        return _set_(self)
    if storage_offset is not None and size is None:
        raise TypeError("set_() received an invalid combination of arguments: storage_offset "
                        "needs size")
    storage = _storage_source(source)
    if storage is not None:
        whole = _C._storage_tensor(storage._t, self.dtype)
        if storage_offset is None:
            return _set_(self, whole, 0, (whole.numel(),), (1,))
        return _set_(self, whole, storage_offset, tuple(size), tuple(stride or ()))
    if not isinstance(source, Tensor):
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    if storage_offset is None:
        return _set_(self, source)
    return _set_(self, source, storage_offset, tuple(size), tuple(stride or ()))


@_method
def is_set_to(self, tensor):
    """True when both tensors view the same storage with the same offset, sizes and strides."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return (_C._storage_id(self) == _C._storage_id(tensor)
            and self.storage_offset() == tensor.storage_offset()
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


@_method
def share_memory_(self):
    """Moves the storage into shared memory (a no-op when it is there already and for CUDA
    tensors); tensors in shared memory cannot be resized. Tensors sent through
    ``tensorplay.multiprocessing`` then share their memory with the receiving process."""
    _C._share_memory_(self)
    return self


@_method
def is_shared(self):
    """Whether the storage is in shared memory (always True for CUDA tensors)."""
    return _C._is_shared(self)


@_method
def const_data_ptr(self):
    """The address of the first element (``data_ptr()``; PyTorch's read-only accessor)."""
    return self.data_ptr()


# ---- UntypedStorage: the storage-level operations the tensor methods above rest on
def _storage_resize_(self, size):
    """Resizes the storage to ``size`` bytes (larger or smaller; PyTorch's
    ``UntypedStorage.resize_``); refuses storages that cannot be resized."""
    _C._storage_resize_(self._t, operator.index(size))
    return self


def _storage_share_memory_(self):
    _C._share_memory_(self._t)
    return self


def _storage_is_shared(self):
    return _C._is_shared(self._t)


def _storage_share_fd_cpu_(self):
    """(fd, nbytes) of the storage, moved into shared memory first (the fd stays the storage's)."""
    if self._t.device.type != "cpu":
        raise RuntimeError("_share_fd_: only available on CPU")
    return _C._share_fd(self._t)


def _storage_new_shared_fd_cpu(cls, fd, size):
    """A storage mapping ``size`` bytes of the shared-memory file ``fd`` (still the caller's)."""
    return cls(_C._tensor_from_shared_fd(fd, size))


def _storage_resizable(self):
    return _C._storage_resizable(self._t)


UntypedStorage.resize_ = _storage_resize_
UntypedStorage.share_memory_ = _storage_share_memory_
UntypedStorage.is_shared = _storage_is_shared
UntypedStorage._share_fd_cpu_ = _storage_share_fd_cpu_
UntypedStorage._new_shared_fd_cpu = classmethod(_storage_new_shared_fd_cpu)
UntypedStorage.resizable = _storage_resizable
UntypedStorage.untyped = lambda self: self
UntypedStorage.device = property(lambda self: self._t.device)
UntypedStorage.is_cuda = property(lambda self: self._t.device.type == "cuda")
UntypedStorage._cdata = property(lambda self: _C._storage_id(self._t))
