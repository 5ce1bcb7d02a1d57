"""Tensor methods written in Python, attached to the C++ class ``tensorplay._C.Tensor``.

The class is defined once, in C++ (hot methods and operators bound there); what reads
better in Python lives here. See docs/architecture.md, "The Python Tensor".
"""
import builtins

import numpy as np

from tensorplay import _C, _dtype, _tensor_str

Tensor = _C.Tensor
Tensor.__module__ = "tensorplay"


class Size(tuple):
    """The shape of a tensor: a tuple of ints (PyTorch's ``torch.Size``)."""
    __slots__ = ()  # C++ allocates instances directly (make_size); no __new__ here

    def __repr__(self):
        return f"tensorplay.Size([{', '.join(str(s) for s in self)}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    # concatenation and repetition give a Size, as PyTorch's (whose items must be ints)
    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _checked_size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _checked_size(tuple.__add__(other, self))

    def __mul__(self, n):
        r = tuple.__mul__(self, n)
        return r if r is NotImplemented else Size(r)

    __rmul__ = __mul__


def _checked_size(items):
    for i, s in enumerate(items):
        if not hasattr(s, "__index__"):  # ints and int-likes (not float)
            raise TypeError(f"tensorplay.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')")
    return Size(items)


_C._set_size_type(Size)

_NUMPY_TYPESTR = {"bool": "|b1", "uint8": "|u1", "int8": "|i1", "int16": "<i2", "int32": "<i4",
                  "int64": "<i8", "float16": "<f2", "float32": "<f4", "float64": "<f8",
                  "complex64": "<c8", "complex128": "<c16"}


def _method(fn):
    """Attaches ``fn`` to Tensor under its name without the ``tensor_`` prefix (the prefix
    keeps module-level names such as ``type`` from shadowing builtins here)."""
    setattr(Tensor, fn.__name__.removeprefix("tensor_"), fn)
    return fn


@_method
def __repr__(self):
    return _tensor_str.tensor_repr(self, _C.get_default_dtype()._name)


Tensor.__str__ = __repr__


@_method
def __format__(self, spec):
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


@_method
def __iter__(self):
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


@_method
def __contains__(self, element):
    if isinstance(element, (Tensor, builtins.int, builtins.float, builtins.bool)):
        return builtins.bool((self == element).numpy().any())
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                       f"{type(element)}.")


@_method
def __array__(self, dtype=None, copy=None):
    arr = self.numpy()
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError("__array__: copy=False, but converting the dtype needs a copy")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


class _ArrayView:
    """Exposes a CPU tensor's memory to NumPy through the array interface, keeping it alive."""

    def __init__(self, t):
        self._t = t
        item = t.element_size()
        self.__array_interface__ = {
            "data": (t.data_ptr(), False),
            "shape": tuple(t.shape),
            "strides": tuple(s * item for s in t.stride()),
            "typestr": _NUMPY_TYPESTR[t.dtype._name],
            "version": 3,
        }


@_method
def numpy(self, *, force=False):
    """A NumPy array sharing this tensor's memory."""
    if self.device.type != "cpu":
        if not force:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
    if self.requires_grad and not force:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                           "Use tensor.detach().numpy() instead.")
    if self.dtype._name == "bfloat16":
        raise TypeError("Got unsupported ScalarType BFloat16")
    if force and (self.is_conj() or self.is_neg()):
        self = self.detach().resolve_conj().resolve_neg()
    if self.is_conj():  # NumPy would read the storage's values (Note [Conjugate and negative bits])
        raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. "
                           "Use tensor.resolve_conj().numpy() instead.")
    if self.is_neg():
        raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. "
                           "Use tensor.resolve_neg().numpy() instead.")
    return np.asarray(_ArrayView(self))


@_method
def is_contiguous(self, *, memory_format=None):
    """Whether the elements are laid out densely in row-major (or the given) order."""
    if memory_format is None or memory_format is contiguous_format:
        return self._is_contiguous()
    if memory_format is channels_last or memory_format is channels_last_3d:
        if self.dim() != (4 if memory_format is channels_last else 5):
            return False
        from tensorplay._creation import _like_strides
        expected = _like_strides(self, memory_format)
        return all(sz == 1 or st == e for sz, st, e in zip(self.shape, self.stride(), expected))
    raise RuntimeError(f"is_contiguous: unsupported memory format {memory_format}")


def _relayout(self, memory_format):
    """A copy of self laid out in ``memory_format`` (gradients flow through the copy)."""
    from tensorplay._creation import _like_strides
    strides = _like_strides(self, memory_format)
    if strides is None:
        return _contiguous(self) if not self.is_contiguous() else _clone(self)
    out = _C.empty_strided(tuple(self.shape), strides, dtype=self.dtype, device=self.device)
    return out.copy_(self)


def _wants_relayout(memory_format):
    return memory_format is not None and memory_format is not preserve_format


_contiguous = Tensor.contiguous
_clone = Tensor.clone


@_method
def contiguous(self, memory_format=None):
    """Self if already laid out in ``memory_format`` (row-major by default), else a copy that is."""
    if memory_format is None or memory_format is contiguous_format:
        return _contiguous(self)
    if memory_format is preserve_format and not self.is_contiguous():
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if memory_format is preserve_format or self.is_contiguous(memory_format=memory_format):
        return self
    return _relayout(self, memory_format)


@_method
def clone(self, *, memory_format=None):
    """A copy with its own storage; ``preserve_format`` (the default) keeps a dense layout."""
    return _relayout(self, memory_format) if _wants_relayout(memory_format) else _clone(self)


class memory_format:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"tensorplay.{self._name}"

    def __reduce__(self):  # pickle and copy: the module's own object (its global name)
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


@_method
def to(self, *args, **kwargs):
    """Converts dtype and/or device: ``to(dtype)``, ``to(device, dtype)``, ``to(other)``."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    non_blocking = kwargs.pop("non_blocking", False)
    layout = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    bools = 0
    for a in args:
        if isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, builtins.bool):  # to(device, dtype, non_blocking, copy)
            bools += 1
            if bools == 1:
                non_blocking = a
            else:
                copy = a
        elif isinstance(a, (str, _C.device, builtins.int)):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: got {type(a).__name__}")
    if device is not None:
        try:
            dev = _C.device(device) if not isinstance(device, _C.device) else device
        except RuntimeError as e:
            raise RuntimeError(f"to: {e}") from None
        if dev.type != self.device.type or (dev.type == "cuda" and _cuda_index(dev) != self.device.index):
            if not _C._cuda_compiled and "cuda" in (dev.type, self.device.type) and \
                    not _python_dispatched(self):  # (fake tensors stand for CUDA ones anywhere)
                raise AssertionError("Torch not compiled with CUDA enabled")
            return _to_device(self, dev, dtype if dtype is not None else self.dtype, non_blocking)
    if self.device.type == "cuda":  # no CUDA conversion kernel yet: a converting copy
        if (dtype is None or dtype == self.dtype) and not copy:
            return self
        return _to_device(self, self.device, dtype if dtype is not None else self.dtype, non_blocking)
    return _converted(self, dtype if dtype is not None else self.dtype, copy, layout)


def _python_dispatched(t):
    """Whether ops on ``t`` reach Python (a dispatch mode is on, or ``t``'s class has its
    own __torch_dispatch__, as fake tensors do)."""
    return _C._len_torch_dispatch_stack() > 0 or \
        type(t).__torch_dispatch__ is not _disabled_torch_dispatch_impl


def _converted(self, dtype, copy, memory_format):
    """``self`` as ``dtype`` in ``memory_format``: self itself where PyTorch aliases (same
    dtype, no copy asked, and the layout self's strides suggest), else a copy laid out so."""
    if dtype == self.dtype and not copy and (self.is_conj() or self.is_neg()):
        out = self  # a conjugate view stays one (the op would resolve it: Note [Conjugate and negative bits])
    else:
        out = _C._to_dtype(self, dtype, copy)
    if not _wants_relayout(memory_format):
        return out
    aliased = not copy and dtype == self.dtype
    if aliased and _suggested_format(self) is memory_format:
        return out
    from tensorplay._creation import _like_strides
    want = _like_strides(self, memory_format)
    if not aliased and (out.is_contiguous() if want is None else list(out.stride()) == want):
        return out
    return _relayout(out, memory_format)


def _suggested_format(t):
    """The memory format t's strides suggest (PyTorch's suggest_memory_format): channels-last
    when channels are innermost and the other dims nest outward in order; else contiguous."""
    if t.dim() not in (4, 5) or t.stride(1) == 0:
        return contiguous_format
    bound = 0
    for d in [1] + list(range(t.dim() - 1, 1, -1)) + [0]:
        size, stride = t.shape[d], t.stride(d)
        if size == 0 or stride < bound or (d == 0 and bound == t.stride(1)):
            return contiguous_format
        bound = stride * size if size > 1 else stride
    return channels_last if t.dim() == 4 else channels_last_3d


def _caster(name, dt):
    def cast(self, memory_format=None):
        return _converted(self, dt, False, memory_format)
    cast.__name__ = name
    cast.__doc__ = f"``self.to({dt})``."
    setattr(Tensor, name, cast)


for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("bfloat16", _dtype.bfloat16), ("int", _dtype.int32), ("long", _dtype.int64),
                   ("short", _dtype.int16), ("char", _dtype.int8), ("byte", _dtype.uint8),
                   ("bool", _dtype.bool), ("cfloat", _dtype.complex64), ("cdouble", _dtype.complex128)):
    _caster(_name, _dt)

_LEGACY_TYPE = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
                "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
                "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
                "complex128": "ComplexDoubleTensor"}


@_method
def tensor_type(self, dtype=None, non_blocking=False):
    """With no argument, the legacy type name ("tensorplay.FloatTensor"); else ``to(dtype)``."""
    if dtype is None:
        return f"tensorplay.{_LEGACY_TYPE[self.dtype._name]}"
    if isinstance(dtype, str):
        for name, legacy in _LEGACY_TYPE.items():
            if dtype.endswith("." + legacy):
                return _C._to_dtype(self, getattr(_dtype, name), False)
        raise ValueError(f"invalid type: '{dtype}'")
    return _C._to_dtype(self, dtype, False)


def _cuda_index(dev):
    if dev.index is not None:
        return dev.index
    return _C._cuda_getDevice() if _C._cuda_compiled else 0  # (fake CUDA tensors: device 0)


def _to_device(self, dev, dtype, non_blocking):
    """A copy of ``self`` on ``dev`` (as ``dtype``): a dense layout like self's is kept."""
    if self.is_contiguous() or self.dim() == 0:
        out = _C.empty(tuple(self.shape), dtype=dtype, device=dev)
    else:
        out = _C.empty_strided(tuple(self.shape), _dense_strides(self), dtype=dtype, device=dev)
    out.copy_(self, non_blocking=builtins.bool(non_blocking))
    return out


def _dense_strides(t):
    """Contiguous strides in the order of t's strides (PyTorch's preserve_format)."""
    order = sorted(range(t.dim()), key=lambda d: (t.stride(d), t.shape[d]), reverse=True)
    strides = [0] * t.dim()
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= max(t.shape[d], 1)
    return tuple(strides)


@_method
def cpu(self, memory_format=None):
    if self.device.type == "cpu":
        return self
    return _to_device(self, _C.device("cpu"), self.dtype, False)


@_method
def cuda(self, device=None, non_blocking=False, memory_format=None):
    """A copy on the GPU ``device`` (default: the current one); self if already there."""
    if not _C._cuda_compiled:
        raise AssertionError("Torch not compiled with CUDA enabled")
    if device is None:
        dev = _C.device("cuda", _C._cuda_getDevice())
    elif isinstance(device, builtins.int):
        dev = _C.device("cuda", device)
    else:
        dev = _C.device(device) if not isinstance(device, _C.device) else device
        if dev.type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device, got {dev}")
    if self.device.type == "cuda" and self.device.index == _cuda_index(dev):
        return self
    return _to_device(self, dev, self.dtype, non_blocking)


@_method
def pin_memory(self, device=None):
    """A copy in page-locked host memory (self if already pinned)."""
    if not _C._cuda_compiled or not _C._cuda_getDeviceCount():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
    if _C._cuda_isPinned(self):
        return self
    return _C._cuda_pinMemory(self)


@_method
def is_pinned(self, device=None):
    """Whether self lives in page-locked host memory."""
    if not _C._cuda_compiled or self.device.type != "cpu":
        return False
    return _C._cuda_getDeviceCount() > 0 and _C._cuda_isPinned(self)


@_method
def record_stream(self, stream):
    """Marks self's memory as used by ``stream``: it is not reused before the work queued
    there (at the time self is freed) has finished."""
    if self.device.type != "cuda":
        raise RuntimeError("record_stream: expected a CUDA tensor")
    _C._cuda_recordStream(self, stream.cuda_stream, stream.device_index)


@_method
def requires_grad_(self, requires_grad=True):
    self.requires_grad = requires_grad
    return self


@_method
def where(self, condition, y):
    return _C.where(condition, self, y)


@_method
def clamp_min(self, min):
    return _C.clamp(self, min=min)


@_method
def clamp_max(self, max):
    return _C.clamp(self, max=max)


def _new_factory(factory):
    def new(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        return factory(size, **kw, dtype=self.dtype if dtype is None else dtype,
                       device=self.device if device is None else device,
                       requires_grad=requires_grad)
    return new


Tensor.new_empty = _new_factory(_C.empty)
Tensor.new_zeros = _new_factory(_C.zeros)
Tensor.new_ones = _new_factory(_C.ones)


@_method
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return _C.full(tuple(size), fill_value, dtype=self.dtype if dtype is None else dtype,
                   device=self.device if device is None else device, requires_grad=requires_grad)


@_method
def type_as(self, other):
    return self.to(other.dtype)


@_method
def __deepcopy__(self, memo):
    """A copy with its own storage (graph leaves only, as in PyTorch); subclasses
    (nn.Parameter) keep their class and attributes."""
    if id(self) in memo:
        return memo[id(self)]
    if self.grad_fn is not None:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment.  If you were attempting to "
                           "deepcopy a module, this may be because of a torch.nn.utils.weight_norm "
                           "usage, see https://github.com/pytorch/pytorch/pull/103001")
    import copy
    data = self.detach().clone()
    if type(self) is Tensor:
        new = data.requires_grad_(self.requires_grad)
    else:
        new = _C._make_subclass(type(self), data, self.requires_grad)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = copy.deepcopy(self.grad, memo)
    for k, v in getattr(self, "__dict__", {}).items():
        setattr(new, k, copy.deepcopy(v, memo))
    return new


def _disabled_torch_dispatch_impl(func, types, args=(), kwargs=None):
    """Tensor's own __torch_dispatch__: runs the op below the Python key (subclasses that do
    not override __torch_dispatch__ never reach it)."""
    with _C._DisablePythonDispatch():
        return func(*args, **(kwargs or {}))



Tensor.__torch_dispatch__ = _disabled_torch_dispatch_impl
_C._set_disabled_torch_dispatch(_disabled_torch_dispatch_impl)
_C._disabled_torch_dispatch_impl = _disabled_torch_dispatch_impl
Tensor._make_subclass = staticmethod(_C._make_subclass)
Tensor._make_wrapper_subclass = staticmethod(_C._make_wrapper_subclass)


@_method
def __reduce_ex__(self, proto):
    """pickle and copy.copy, as PyTorch's: the tensor by value, as ``tp.save`` writes it
    (dtype, shape, strides, storage offset, device, requires_grad, subclass; its whole
    storage), so views pickled together come back as separate storages. A non-leaf comes
    back as a leaf."""
    import io
    from tensorplay import serialization
    buf = io.BytesIO()
    serialization.save(self, buf)
    return serialization._load_from_bytes, (buf.getvalue(),)


def _reversed_dims(self):
    if self.dim() < 2:
        return self
    return _C.permute(self, list(range(self.dim() - 1, -1, -1)))


Tensor.T = property(_reversed_dims, doc="The tensor with its dims reversed (2-D: transpose).")


@_method
def untyped_storage(self):
    return UntypedStorage(self)


class UntypedStorage:
    """The bytes behind a tensor (shared by its views)."""

    def __init__(self, t):
        self._t = t

    def data_ptr(self):
        return self._t._storage_ptr

    def nbytes(self):
        return self._t._storage_nbytes

    def size(self):
        return self._t._storage_nbytes

    def __len__(self):
        return self._t._storage_nbytes


# ---- PyTorch 2.13's smaller Tensor names
def _has_multiple_dim_order(t):
    """Size-1 dims or equal neighbouring strides let several dim orders describe t."""
    strides = t.stride()
    return any(a == b for a, b in zip(strides, strides[1:])) or any(s == 1 for s in t.shape)


def _logical_to_physical_perm(t, ambiguity_check):
    """PyTorch's compute_elementwise_output_logical_to_physical_perm for one tensor: the dims
    from outermost to innermost (an insertion sort by stride, ties by size), and whether the
    order is ambiguous when ``ambiguity_check`` asks."""
    ndim = t.dim()
    if ndim == 0:
        return [], False
    if ndim == 1:
        return [0], False
    contiguous = t.is_contiguous()
    last = t.is_contiguous(memory_format=channels_last)
    if contiguous and not last:
        return list(range(ndim)), False
    if last and not contiguous:
        return [0, *range(2, ndim), 1], False
    shape, strides = t.shape, t.stride()

    def should_swap(a, b):
        def ge(x, y):
            return y == 0 or (x != 0 and (x >= y or x % y == 0))
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(shape[b], shape[a]) else 1
        if ge(sb, sa):
            return -1
        if ge(sa, sb):
            return 1
        return 0

    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        d1 = i
        for d0 in reversed(range(i)):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    ambiguous = ambiguity_check is not False and any(
        should_swap(perm[i], perm[i + 1]) != -1 for i in range(ndim - 1))
    return list(reversed(perm)), ambiguous


@_method
def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (a tuple). ``ambiguity_check=True``
    raises when several orders fit (size-1 dims, equal strides); a list of memory formats
    raises unless the tensor is laid out in exactly one of them."""
    if not isinstance(ambiguity_check, builtins.bool):
        if not isinstance(ambiguity_check, list) or not all(
                isinstance(f, memory_format) for f in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check_multiple = ambiguity_check if isinstance(ambiguity_check, builtins.bool) else True
    if check_multiple and _has_multiple_dim_order(self) and \
            builtins.sum(1 for f in formats if self.is_contiguous(memory_format=f)) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one "
                           "of the given memory formats.")
    perm, ambiguous = _logical_to_physical_perm(self, ambiguity_check)
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(perm)


Tensor.name = property(lambda self: None, doc="None: PyTorch 2.13's Tensor.name (named "
                       "dimensions are not supported).")


@_method
def module_load(self, other, assign=False):
    """How ``load_state_dict`` turns the state-dict value ``other`` into the new value of this
    parameter or buffer when tensors are swapped: ``other.detach()`` if ``assign``, else
    ``self.copy_(other).detach()``."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()
