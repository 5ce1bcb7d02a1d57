"""safetensors files for TensorPlay tensors, written from the format's spec with the API of
the ``safetensors`` package's torch module: save / save_file / load / load_file / safe_open.

Layout: an 8-byte little-endian header length N, N bytes of JSON (``{"name": {"dtype": "F32",
"shape": [2, 3], "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}``, padded
with spaces to a multiple of 8), then the tensors' bytes back to back, little-endian, with
offsets counted from the end of the header. Every header is checked before any byte is used.
"""
import json
import os
import struct

import numpy as np

from tensorplay import _C, _dtype

__all__ = ["SafetensorError", "save", "save_file", "load", "load_file", "safe_open"]

# in the order of the format's dtype enum: files list tensors by descending dtype, then name
_DTYPES = {"BOOL": _dtype.bool, "U8": _dtype.uint8, "I8": _dtype.int8, "I16": _dtype.int16,
           "F16": _dtype.float16, "BF16": _dtype.bfloat16, "I32": _dtype.int32,
           "F32": _dtype.float32, "F64": _dtype.float64, "I64": _dtype.int64}
_NAMES = {dt: name for name, dt in _DTYPES.items()}
_RANK = {dt: i for i, dt in enumerate(_DTYPES.values())}
_MAX_HEADER = 100_000_000
_FRAMEWORKS = ("pt", "pytorch", "torch", "tp", "tensorplay")


class SafetensorError(ValueError):
    """A safetensors file or buffer whose header or layout is invalid."""


def _raw_bytes(t):
    """The bytes of a contiguous CPU tensor as a NumPy uint8 array sharing its memory."""
    return _C._from_buffer(t.data_ptr(), [t.nbytes], [1], _dtype.uint8, t).numpy()


def _extent(t):
    """The byte range [start, stop) of the storage that ``t`` reads."""
    if t.numel() == 0:
        return t.data_ptr(), t.data_ptr()
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()


def _shared_groups(tensors):
    """Sets of names whose tensors overlap in memory (the safetensors package refuses them:
    loading would give independent copies of what was one storage)."""
    by_storage = {}
    for name, t in tensors.items():
        if t._storage_nbytes:
            by_storage.setdefault((t._storage_ptr, t._storage_nbytes), []).append(name)
    groups = []
    for names in by_storage.values():
        spans = sorted((*_extent(tensors[n]), n) for n in names)
        group, stop = {spans[0][2]}, spans[0][1]
        for start, end, name in spans[1:]:
            if start < stop:
                group.add(name)
            else:
                groups.append(group)
                group = {name}
            stop = max(stop, end)
        groups.append(group)
    return [g for g in groups if len(g) > 1]


def _serialize(tensors, metadata):
    """(header bytes, [(array of bytes), ...]) of a file holding ``tensors``."""
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"save: tensor names must be str, got {type(name).__name__}")
        if not isinstance(t, _C.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received "
                             f"{type(t)}")
        if t.device.type != "cpu":
            raise RuntimeError(f"save: only CPU tensors can be saved (got a {t.device} tensor)")
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("save: metadata must be a dict of str to str")
    shared = _shared_groups(tensors)
    if shared:
        raise RuntimeError(
            "Some tensors share memory, this will lead to duplicate memory on disk and potential "
            f"differences when loading them again: {shared}.\nA potential way to correctly save "
            "your model is to save only one of the tensors sharing memory and to slice or "
            "clone it again after loading.")
    header = {} if metadata is None else {"__metadata__": metadata}
    chunks, offset = [], 0
    for name in sorted(tensors, key=lambda n: (-_RANK[tensors[n].dtype], n)):
        t = tensors[name]
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. "
                "It either means you are trying to save tensors which are reference of each "
                "other in which case it's recommended to save only the full tensors, and reslice "
                "at load time, or simply call `.contiguous()` on your tensor to pack it before "
                "saving.")
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + t.nbytes]}
        chunks.append(_raw_bytes(t))
        offset += t.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, chunks


def save(tensors, metadata=None):
    """The safetensors bytes of a dict of contiguous tensors that do not share memory.

        data = tensorplay.safetensors.save({"w": tp.ones(2, 3)}, metadata={"format": "pt"})
    """
    header, chunks = _serialize(tensors, metadata)
    return b"".join([header, *(c.tobytes() for c in chunks)])


def save_file(tensors, filename, metadata=None):
    """Writes ``tensors`` (a dict of contiguous tensors that do not share memory) to the
    safetensors file ``filename``."""
    header, chunks = _serialize(tensors, metadata)
    with open(filename, "wb") as f:
        f.write(header)
        for c in chunks:
            f.write(c)


def _error(message):
    return SafetensorError(f"Error while deserializing header: {message}")


def _parse_header(prefix, total):
    """``(entries, metadata, data_start)`` from a file's first bytes ``prefix`` (at least the
    whole header when its length allows) and its size ``total``. ``entries`` maps each name
    to (dtype, shape, begin, end) with begin/end relative to ``data_start``."""
    if total < 8:
        raise _error("header too small")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > _MAX_HEADER:
        raise _error("header too large")
    if n > total - 8:
        raise _error("invalid header length")
    try:
        header = json.loads(bytes(prefix[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise _error(f"invalid JSON in header: {e}") from None
    if not isinstance(header, dict):
        raise _error("the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        raise _error("__metadata__ must map str to str")
    entries = {}
    for name, info in header.items():
        if not (isinstance(info, dict) and {"dtype", "shape", "data_offsets"} <= info.keys()):
            raise _error(f"tensor `{name}` needs dtype, shape and data_offsets")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if dtype not in _DTYPES:
            raise _error(f"tensor `{name}` has dtype {dtype!r}, which TensorPlay does not have"
                         if isinstance(dtype, str) else f"tensor `{name}` has an invalid dtype")
        if not (isinstance(shape, list) and isinstance(offsets, list) and len(offsets) == 2
                and all(type(v) is int and v >= 0 for v in (*shape, *offsets))):
            raise _error(f"invalid shape or data_offsets for tensor `{name}`")
        numel = 1
        for s in shape:
            numel *= s
        if offsets[1] - offsets[0] != numel * _DTYPES[dtype].itemsize:
            raise _error(f"invalid shape, data type, or offset for tensor `{name}`")
        entries[name] = (_DTYPES[dtype], shape, offsets[0], offsets[1])
    end = 0
    for name, (_, _, begin, stop) in sorted(entries.items(), key=lambda e: e[1][2:]):
        if begin != end:
            raise _error(f"invalid offset for tensor `{name}`")
        end = stop
    if end != total - 8 - n:
        raise _error("incomplete metadata, file not fully covered")
    return entries, metadata, 8 + n


def _tensor(array, dtype, shape):
    """A tensor of ``dtype`` and ``shape`` over ``array`` (uint8, contiguous, owned)."""
    strides, step = [], dtype.itemsize
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return _C._from_buffer(array.__array_interface__["data"][0], list(shape), strides[::-1],
                           dtype, array)


def load(data):
    """The tensors of safetensors bytes ``data``, as a dict sorted by name."""
    view = memoryview(data).cast("B")
    entries, _, start = _parse_header(view, len(view))
    return {name: _tensor(np.frombuffer(view, np.uint8, end - begin, start + begin).copy(),
                          dtype, shape)
            for name, (dtype, shape, begin, end) in sorted(entries.items())}


def _check_device(device):
    dev = device if isinstance(device, _C.device) else _C.device(device)
    if dev.type != "cpu":
        raise RuntimeError(f"safetensors: device {dev} arrives with the CUDA backend")


class safe_open:
    """A safetensors file opened for reading tensors one at a time.

        with tensorplay.safetensors.safe_open("model.safetensors", framework="pt") as f:
            w = f.get_tensor("weight")
    """

    def __init__(self, filename, framework, device="cpu"):
        if framework not in _FRAMEWORKS:
            raise SafetensorError(f"framework {framework} is invalid")
        _check_device(device)
        self._file = open(filename, "rb")
        try:
            total = os.fstat(self._file.fileno()).st_size
            prefix = self._file.read(8)
            if len(prefix) == 8:
                n = struct.unpack("<Q", prefix)[0]
                prefix += self._file.read(min(n, _MAX_HEADER))
            self._entries, self._metadata, self._start = _parse_header(prefix, total)
        except BaseException:
            self._file.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._file.close()

    def keys(self):
        """The tensor names, sorted."""
        return sorted(self._entries)

    def offset_keys(self):
        """The tensor names in the order of their data in the file."""
        return sorted(self._entries, key=lambda n: self._entries[n][2])

    def metadata(self):
        """The file's ``__metadata__`` dict, or None."""
        return self._metadata

    def get_tensor(self, name):
        """Reads the tensor ``name`` into its own memory."""
        if name not in self._entries:
            raise SafetensorError(f"File does not contain tensor {name}")
        dtype, shape, begin, end = self._entries[name]
        array = np.empty(end - begin, dtype=np.uint8)
        self._file.seek(self._start + begin)
        if self._file.readinto(array) != len(array):
            raise SafetensorError(f"the file ended inside tensor {name}")
        return _tensor(array, dtype, shape)


def load_file(filename, device="cpu"):
    """The tensors of a safetensors file, as a dict sorted by name.

        state = tensorplay.safetensors.load_file("model.safetensors")
    """
    with safe_open(filename, framework="pt", device=device) as f:
        return {name: f.get_tensor(name) for name in f.keys()}
