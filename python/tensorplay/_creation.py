"""Tensor creation from Python data, NumPy and DLPack, and the *_like factories."""
import builtins
import warnings

import numpy as np

from tensorplay import _C, _dtype

Tensor = _C.Tensor

_FROM_NUMPY = {"bool": _dtype.bool, "uint8": _dtype.uint8, "int8": _dtype.int8,
               "int16": _dtype.int16, "int32": _dtype.int32, "int64": _dtype.int64,
               "float16": _dtype.float16, "float32": _dtype.float32, "float64": _dtype.float64,
               "complex64": _dtype.complex64, "complex128": _dtype.complex128}


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False,
           _op="tensor"):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays, tensors)."""
    if isinstance(data, Tensor) and _op == "tensor":  # (new_tensor warns in its own words)
        _warn_copy_construct("tensorplay.tensor(sourceTensor)")
    if isinstance(data, np.ndarray):
        t = from_numpy(data) if data.dtype.name in _FROM_NUMPY else None
        if t is None:
            raise TypeError(f"{_op}: can't convert np.ndarray of type numpy.{data.dtype.name}.")
        out = _C._to_dtype(t, dtype if dtype is not None else t.dtype, True)
        if device is not None:
            out = out.to(device)
        out.requires_grad = requires_grad
        return out
    out = _C._tensor(data, dtype, device, requires_grad, _op)
    if _C._len_torch_dispatch_stack():  # made from data: the modes see it (PyTorch's lift_fresh)
        out = _C.lift_fresh(out)
    return out


def _warn_copy_construct(call):
    """PyTorch's UserWarning for a tensor built from a tensor by ``call``."""
    warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                  f"sourceTensor.detach().clone().requires_grad_(True), rather than {call}.", UserWarning,
                  stacklevel=3)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A new tensor holding a copy of ``data``, of this tensor's dtype and device unless told
    otherwise (whatever the data's own type)."""
    if isinstance(data, Tensor):
        _warn_copy_construct("tensor.new_tensor(sourceTensor)")
    return tensor(data, dtype=self.dtype if dtype is None else dtype, device=self.device if device is None else device,
                  requires_grad=requires_grad, _op="new_tensor")


Tensor.new_tensor = new_tensor


def from_numpy(ndarray):
    """A tensor sharing ``ndarray``'s memory (zero-copy)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(ndarray).__name__})")
    name = ndarray.dtype.name
    if not ndarray.dtype.isnative:
        raise ValueError("from_numpy: given numpy array has byte order different from the "
                         "native byte order. Conversion between byte orders is currently not "
                         "supported.")
    if name not in _FROM_NUMPY:
        raise TypeError(f"from_numpy: can't convert np.ndarray of type numpy.{name}. The only "
                        "supported types "
                        "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool.")
    if builtins.any(s < 0 for s in ndarray.strides):
        raise ValueError("from_numpy: At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    ptr = ndarray.__array_interface__["data"][0]
    return _C._from_buffer(ptr, list(ndarray.shape), list(ndarray.strides), _FROM_NUMPY[name], ndarray)


def from_dlpack(ext_tensor):
    """A tensor sharing the memory of any DLPack producer (NumPy, PyTorch, ...)."""
    if hasattr(ext_tensor, "__dlpack__"):
        kwargs = {}
        device = ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__") else (1, 0)
        if int(device[0]) == 2:  # CUDA: the producer orders its work before our current stream
            handle = _C._cuda_getCurrentStream(int(device[1]))[0]
            kwargs["stream"] = handle if handle else 1  # 1: the legacy default stream
        try:
            capsule = ext_tensor.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:
            capsule = ext_tensor.__dlpack__(**kwargs)
    else:
        capsule = ext_tensor
    return _C._from_dlpack_capsule(capsule)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory where the dtype and device allow."""
    if isinstance(data, np.ndarray) and data.dtype.name in _FROM_NUMPY and \
            builtins.all(s >= 0 for s in data.strides) and data.dtype.isnative:
        data = from_numpy(data)
    if isinstance(data, Tensor):  # itself when neither dtype nor device changes
        if device is not None and data.device != _C.device(device):
            data = data.to(device)
        return data if dtype is None or dtype == data.dtype else data.to(dtype)
    return tensor(data, dtype=dtype, device=device, _op="as_tensor")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Converts ``obj`` to a tensor; shares memory unless ``copy=True`` or a cast is needed."""
    shares_memory = isinstance(obj, (Tensor, np.ndarray)) or hasattr(obj, "__dlpack__")
    if copy is False and not shares_memory:
        raise ValueError("asarray: can't alias a Python sequence or number (copy=False)")
    if isinstance(obj, Tensor):
        t = obj
    elif isinstance(obj, np.ndarray):
        t = as_tensor(obj)
    elif hasattr(obj, "__dlpack__"):
        t = from_dlpack(obj)
    else:
        t = tensor(obj, dtype=dtype, device=device, _op="asarray")
    if device is not None and t.device != _C.device(device):
        t = t.to(device)  # a copy on the other device
        shares_memory = False
    if dtype is not None and dtype != t.dtype:
        if copy is False:
            raise ValueError("asarray: copy=False but a dtype conversion is needed")
        t = _C._to_dtype(t, dtype, False)
    elif copy and (t is obj or shares_memory):
        t = _C._to_dtype(t, t.dtype, True)
    if requires_grad:
        t.requires_grad = True
    return t


def _like_strides(input, memory_format):
    """The strides a *_like result takes (None: contiguous). PyTorch's preserve_format keeps
    the input's dim order (its exact strides when dense); channels_last asks for NHWC."""
    from tensorplay._tensor import channels_last, channels_last_3d, contiguous_format, preserve_format
    if memory_format is None or memory_format is preserve_format:
        return None if input.is_contiguous() else _C._preserving_strides(input)
    if memory_format is contiguous_format:
        return None
    if memory_format is channels_last or memory_format is channels_last_3d:
        rank = 4 if memory_format is channels_last else 5
        if input.dim() != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {memory_format._name} format")
        # channels innermost, then the spatial dims in order, then the batch
        shape = [builtins.max(s, 1) for s in input.shape]
        strides, expected = [0] * rank, 1
        for d in [1] + list(range(rank - 1, 1, -1)) + [0]:
            strides[d] = expected
            expected *= shape[d]
        return strides
    raise RuntimeError(f"unsupported memory format {memory_format}")


def _like(factory):
    def like(input, *args, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
        if not isinstance(input, Tensor):
            raise TypeError(f"{factory.__name__}_like(): argument 'input' (position 1) must be "
                            f"Tensor, not {type(input).__name__}")
        if type(input) is not Tensor and '_level' in getattr(input, '__dict__', ()):
            from tensorplay.func._vmap import BatchedTensor, _wrap
            if isinstance(input, BatchedTensor):
                # under vmap: the batch's *_like, batched as the input (these factories are
                # Python composites, so no op reaches vmap's rule for them)
                return _wrap(like(input._value, *args, dtype=dtype, device=device,
                                  requires_grad=requires_grad, memory_format=memory_format, **kw),
                             input._level)
        dtype = dtype if dtype is not None else input.dtype
        device = device if device is not None else input.device
        strides = _like_strides(input, memory_format)
        if strides is None:
            return factory(input.shape, *args, dtype=dtype, device=device,
                           requires_grad=requires_grad, **kw)
        # the input's layout: an empty tensor with its strides, filled like the factory
        out = _C.empty_strided(tuple(input.shape), strides, dtype=dtype, device=device)
        out.copy_(factory(input.shape, *args, dtype=dtype, device=device, **kw)) \
            if factory is not _C.empty else None
        if requires_grad:
            out.requires_grad_(True)
        return out
    like.__name__ = factory.__name__ + "_like"
    like.__doc__ = f"``{factory.__name__}`` with the shape (and by default dtype, device) of ``input``."
    return like


zeros_like = _like(_C.zeros)
ones_like = _like(_C.ones)
empty_like = _like(_C.empty)
full_like = _like(_C.full)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` (default 0) below ``end`` in steps of ``step``."""
    if end is None:
        start, end = 0, start
    return _C.arange(start, end, step, out=out, dtype=dtype, device=device,
                     requires_grad=requires_grad)
