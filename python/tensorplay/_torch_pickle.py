"""PyTorch's pickle vocabulary for tp.save / tp.load: the globals a checkpoint names
(torch._utils._rebuild_tensor_v2, torch.FloatStorage, ...), written on save without
importing torch and mapped onto TensorPlay objects on load, plus the weights-only allowlist.

Note [Weights-only loading]
A pickle reaches a callable only through ``find_class`` (GLOBAL, STACK_GLOBAL, INST, OBJ and
EXT all go through it) or ``persistent_load``. The weights-only unpickler's ``find_class``
answers only the allowlist below and the user's safe globals, so REDUCE / NEWOBJ / BUILD can
only ever call those. The objects it hands out are safe to call with hostile arguments: the
rebuild functions check every size, stride and offset against the storage in Python integers
before making a view, and a ``LoadedStorage`` refuses BUILD (its ``__setstate__`` raises), so
a pickle can never point a tensor at memory it does not own.
"""
import codecs
import collections
import copy
import pickle

from tensorplay import _C
from tensorplay._dtype import ALL_DTYPES, COMPLEX_DTYPES, uint8
from tensorplay._tensor import Size, Tensor, UntypedStorage, _LEGACY_TYPE
from tensorplay.autograd.grad_mode import no_grad
from tensorplay.nn.parameter import Parameter


class TorchName:
    """A global named as PyTorch names it (``torch._utils._rebuild_tensor_v2``). The pickler
    writes it as a GLOBAL opcode, so saving needs no torch import."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args):  # pickle wants a callable reducer; the loader resolves the name
        raise TypeError(f"{self!r} is a name written into checkpoints, not a function")


REBUILD_TENSOR_V2 = TorchName("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = TorchName("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = TorchName("torch._utils", "_rebuild_parameter_with_state")
REBUILD_FROM_TYPE_V2 = TorchName("torch._tensor", "_rebuild_from_type_v2")
TORCH_SIZE = TorchName("torch", "Size")
TORCH_DEVICE = TorchName("torch", "device")
# torch.FloatStorage, torch.BFloat16Storage, ...: the storage type a persistent id names
STORAGE_NAMES = {dt: TorchName("torch", _LEGACY_TYPE[dt._name].replace("Tensor", "Storage"))
                 for dt in ALL_DTYPES + COMPLEX_DTYPES}


class SavedStorage:
    """One storage being saved: its record key and a tensor that keeps its bytes alive."""
    __slots__ = ("key", "tensor", "pid")

    def __init__(self, key, tensor):
        self.key, self.tensor = key, tensor
        numel = tensor._storage_nbytes // tensor.element_size()
        self.pid = ("storage", STORAGE_NAMES[tensor.dtype], key, str(tensor.device), numel)

    def numpy_bytes(self):
        """The whole storage as a NumPy uint8 array (sharing a CPU storage's memory; a GPU
        storage is copied to the host)."""
        t = self.tensor
        if t.device.type != "cpu":
            with no_grad():
                whole = t.detach().as_strided([t._storage_nbytes // t.element_size()], [1], 0)
                t = whole.cpu()
        return _C._from_buffer(t._storage_ptr, [t._storage_nbytes], [1], uint8, t).numpy()


def _save_torch_name(pickler, module, name, obj):
    """Writes a reference to the global ``module.name`` as Python's own pickler would."""
    if pickler.proto >= 4:
        pickler.save(module)
        pickler.save(name)
        pickler.write(pickle.STACK_GLOBAL)
    else:
        pickler.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
    pickler.memoize(obj)


def pickler_class(pickle_module):
    """A Pickler (built on ``pickle_module``'s) that writes tensors, storages, dtypes, Size
    and device as torch.save does and records the storages it met."""
    base = pickle._Pickler if pickle_module is pickle else pickle_module.Pickler
    if not (isinstance(base, type) and issubclass(base, pickle._Pickler)):
        raise TypeError("save: pickle_module.Pickler must be a pure-Python pickler (a subclass of "
                        "pickle._Pickler, as dill's is): TensorPlay writes PyTorch's global names "
                        "without importing torch")

    class TorchPickler(base):
        dispatch = copy.copy(base.dispatch)
        dispatch[TorchName] = lambda self, obj: _save_torch_name(self, obj.module, obj.name, obj)
        dispatch[_C.dtype] = lambda self, obj: _save_torch_name(self, "torch", obj._name, obj)

        def __init__(self, file, protocol):
            super().__init__(file, protocol)
            self.storages = {}  # (data pointer, nbytes) -> SavedStorage, in key order

        def persistent_id(self, obj):
            return obj.pid if type(obj) is SavedStorage else None

        def reducer_override(self, obj):
            if isinstance(obj, Tensor):
                return self._reduce_tensor(obj)
            if isinstance(obj, Size):
                return TORCH_SIZE, (tuple(obj),)
            if isinstance(obj, _C.device):
                return TORCH_DEVICE, (str(obj),)
            return NotImplemented

        def _storage(self, t):
            nbytes = t._storage_nbytes
            # an empty storage has no identity worth keeping: each gets its own record
            ident = (t._storage_ptr, nbytes) if nbytes else object()
            saved = self.storages.get(ident)
            if saved is None:
                saved = self.storages[ident] = SavedStorage(str(len(self.storages)), t)
            elif saved.tensor.dtype != t.dtype:
                raise RuntimeError("save: cannot save multiple tensors or storages that view the "
                                   "same data as different types")
            return saved

        def _reduce_tensor(self, t):
            state = getattr(t, "__dict__", None) or None
            if isinstance(t, Parameter):
                data = t.detach()
                if state is None:
                    return REBUILD_PARAMETER, (data, t.requires_grad, collections.OrderedDict())
                return REBUILD_PARAMETER_WITH_STATE, (data, t.requires_grad,
                                                      collections.OrderedDict(), state)
            args = (self._storage(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()),
                    t.requires_grad, collections.OrderedDict())
            bits = {k: True for k, on in (("conj", t.is_conj()), ("neg", t.is_neg())) if on}
            if bits:  # PyTorch's tensor metadata: the storage holds the unresolved values
                args += (bits,)
            if type(t) is Tensor:
                return REBUILD_TENSOR_V2, args
            return REBUILD_FROM_TYPE_V2, (REBUILD_TENSOR_V2, type(t), args, state or {})

    return TorchPickler


class StorageType:
    """What ``torch.FloatStorage`` (dtype float32) or ``torch.storage.UntypedStorage`` (dtype
    None: bytes) becomes on load; only persistent ids use it."""
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return self.name

    def __setstate__(self, state):
        raise pickle.UnpicklingError(f"load: a checkpoint may not set state on {self.name}")

    @property
    def itemsize(self):
        return 1 if self.dtype is None else self.dtype.itemsize


class LoadedStorage(UntypedStorage):
    """The bytes of one storage record (a 1-D uint8 tensor) and the StorageType its persistent
    id declared. Every tensor rebuilt over it is a view of one base tensor per dtype, so views
    that shared a storage when saved share one after loading."""

    def __init__(self, data, storage_type):
        super().__init__(data)
        self.storage_type = storage_type
        self.dtype = storage_type.dtype
        self._bases = {}

    def __setstate__(self, state):
        raise pickle.UnpicklingError("load: a checkpoint may not set state on a storage")

    def base(self, dtype):
        """The whole storage as a 1-D tensor of ``dtype``."""
        b = self._bases.get(dtype)
        if b is None:
            n, es = self._t.numel(), dtype.itemsize
            if n % es:
                raise RuntimeError(f"load: a storage of {n} bytes does not hold whole {dtype} "
                                   "elements")
            if self._t.data_ptr() % es:  # a foreign writer left the record misaligned
                self._t = self._t.clone()
            with no_grad():
                t = self._t
                if t.stride(0) != 1:  # empty or one byte: any stride; else not dense
                    t = t.as_strided([n], [1], t.storage_offset()) if n <= 1 else t.clone()
                b = self._bases[dtype] = t.view(dtype)
        return b


def _ints(values):
    return isinstance(values, (tuple, list)) and all(type(v) is int for v in values)


def _view(op, storage, storage_offset, size, stride, dtype):
    """``storage`` seen as a tensor of ``dtype``, after checking the layout fits in it."""
    if not isinstance(storage, LoadedStorage):
        raise TypeError(f"{op}: expected a storage, got {type(storage).__name__}")
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"{op}: expected a dtype, got {type(dtype).__name__}")
    if not (_ints(size) and _ints(stride) and len(size) == len(stride)
            and type(storage_offset) is int):
        raise RuntimeError(f"{op}: invalid tensor layout: size {size!r}, stride {stride!r}, "
                           f"storage offset {storage_offset!r}")
    if storage_offset < 0 or any(v < 0 for v in (*size, *stride)):
        raise RuntimeError(f"{op}: negative size, stride or storage offset: size {list(size)}, "
                           f"stride {list(stride)}, storage offset {storage_offset}")
    base = storage.base(dtype)
    needed = 0 if 0 in size else storage_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > base.numel():
        raise RuntimeError(f"{op}: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{storage_offset} need a storage of {needed} elements of {dtype}, "
                           f"but the storage holds {base.numel()}")
    with no_grad():  # a plain tensor over the storage, not a view remembering a base
        return base.as_strided(list(size), list(stride), storage_offset)


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, LoadedStorage) or storage.dtype is None:
        raise TypeError(f"_rebuild_tensor: expected a typed storage, got {storage!r}")
    return _view("_rebuild_tensor", storage, storage_offset, size, stride, storage.dtype)


def _with_metadata(t, metadata):
    """Sets the conjugate / negative bits PyTorch saves as tensor metadata."""
    if metadata:
        if not isinstance(metadata, dict):
            raise TypeError(f"load: invalid tensor metadata {type(metadata).__name__}")
        if metadata.get("conj") and not t.is_conj():
            t = _C._conj(t)
        if metadata.get("neg") and not t.is_neg():
            t = _C._neg_view(t)
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    t = _with_metadata(_rebuild_tensor(storage, storage_offset, size, stride), metadata)
    t.requires_grad = requires_grad
    return t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    t = _with_metadata(_view("_rebuild_tensor_v3", storage, storage_offset, size, stride, dtype), metadata)
    t.requires_grad = requires_grad
    return t


def _set_state(obj, state):
    """Restores Python attributes saved with a tensor (a dict, or (dict, slots) as
    ``object.__getstate__`` returns them)."""
    if not state:
        return obj
    if isinstance(state, tuple) and len(state) == 2:
        items = {**(state[0] or {}), **(state[1] or {})}
    elif isinstance(state, dict):
        items = state
    else:
        raise TypeError(f"load: invalid tensor state {type(state).__name__}")
    if type(obj) is Tensor:
        raise RuntimeError(f"load: the checkpoint sets Python attributes {sorted(items)} on a "
                           "tensor; TensorPlay tensors cannot hold attributes (a Parameter can)")
    for k, v in items.items():
        setattr(obj, k, v)
    return obj


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, Tensor):
        raise TypeError(f"_rebuild_parameter: expected a tensor, got {type(data).__name__}")
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_tensor, _rebuild_parameter,
                    _rebuild_parameter_with_state):
        raise TypeError(f"_rebuild_from_type_v2: unexpected function {func!r}")
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise TypeError(f"_rebuild_from_type_v2: {new_type!r} is not a tensor type")
    ret = func(*args)
    if type(ret) is not new_type:
        ret = _C._make_subclass(new_type, ret, ret.requires_grad)
    return _set_state(ret, state)


def _torch_table():
    table = {
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.Size": Size,
        "torch.device": _C.device,
        "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.storage.UntypedStorage": StorageType("torch.storage.UntypedStorage", None),
    }
    for dt in ALL_DTYPES + COMPLEX_DTYPES:
        table[f"torch.{dt._name}"] = dt
        name = STORAGE_NAMES[dt].name
        table[f"torch.{name}"] = table[f"torch.cuda.{name}"] = StorageType(f"torch.{name}", dt)
    return table


_TORCH = _torch_table()
_ALLOWED = {**_TORCH,
            "collections.OrderedDict": collections.OrderedDict,
            "collections.Counter": collections.Counter,
            "builtins.set": set,
            "builtins.complex": complex,
            "builtins.bytearray": bytearray,
            "_codecs.encode": codecs.encode}  # how protocol-2 pickles spell bytes
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_PY2_MODULES = {"__builtin__": "builtins"}
_safe_globals = set()


def add_safe_globals(safe_globals):
    """Allows ``weights_only`` loads to use these globals: each entry is a class / function,
    or ``(obj, "module.name")`` when the checkpoint names it differently.

        tp.serialization.add_safe_globals([MyConfig])
    """
    _safe_globals.update(safe_globals)


def get_safe_globals():
    """The globals added by ``add_safe_globals``."""
    return list(_safe_globals)


def clear_safe_globals():
    """Forgets every global added by ``add_safe_globals``."""
    _safe_globals.clear()


class safe_globals:
    """Context manager adding safe globals for the duration of a ``with`` block.

        with tp.serialization.safe_globals([MyConfig]):
            tp.load("ckpt.pt")
    """

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = set(_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals.clear()
        _safe_globals.update(self._saved)


def _user_global(full):
    for entry in _safe_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, None)
        if name is None:
            name = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        if name == full:
            return obj
    return None


def _no_equivalent(full):
    return RuntimeError(f"load: the checkpoint names {full}, which has no TensorPlay equivalent")


def weights_only_global(module, name):
    """``find_class`` of the weights-only unpickler (Note [Weights-only loading])."""
    module = _PY2_MODULES.get(module, module)
    full = f"{module}.{name}"
    if module in _BLOCKED_MODULES:
        raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module "
                                     f"{module} is blocked.")
    obj = _user_global(full)
    if obj is None:
        obj = _ALLOWED.get(full)
    if obj is not None:
        return obj
    if module == "torch" or module.startswith("torch."):
        raise _no_equivalent(full)
    raise pickle.UnpicklingError(
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`tensorplay.serialization.add_safe_globals([{name}])` or the "
        f"`tensorplay.serialization.safe_globals([{name}])` context manager to allowlist this "
        "global if you trust this class/function.")


def weights_only_message(message):
    """The message of a refused weights-only load, wrapping the unpickler's."""
    return ("Weights only load failed. Re-running `tensorplay.load` with `weights_only` set to "
            "`False` will likely succeed, but it can result in arbitrary code execution. Do it "
            "only if you got the file from a trusted source.\n"
            f"WeightsUnpickler error: {message}")


def unpickler_class(pickle_module, weights_only):
    """An Unpickler whose storages come from ``load_storage(persistent_id)`` and whose globals
    are the weights-only allowlist, or (``weights_only=False``) anything, with PyTorch's
    names mapped onto TensorPlay."""
    base = pickle.Unpickler if weights_only else pickle_module.Unpickler

    class TorchUnpickler(base):
        def __init__(self, file, load_storage, **kwargs):
            super().__init__(file, **kwargs)
            self._load_storage = load_storage

        def persistent_load(self, pid):
            return self._load_storage(pid)

        def find_class(self, module, name):
            if weights_only:
                return weights_only_global(module, name)
            if module == "torch" or module.startswith("torch."):
                obj = _TORCH.get(f"{module}.{name}")
                if obj is None:
                    raise _no_equivalent(f"{module}.{name}")
                return obj
            return super().find_class(module, name)

    return TorchUnpickler
