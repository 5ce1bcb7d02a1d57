"""tp.save / tp.load: checkpoints in PyTorch's zip format (torch.load reads ours, we read
torch.save's without importing torch), plus reading PyTorch's legacy pre-1.6 format.

The archive holds ``<name>/data.pkl`` (the pickle; tensors refer to storages by persistent
id), one uncompressed ``<name>/data/<key>`` record per storage with its data 64-byte aligned,
and small ``byteorder`` / ``version`` / ``.format_version`` / ``.storage_alignment`` /
``.data/serialization_id`` records, in torch.save's order. See docs/architecture.md,
"Serialization"; the pickle's vocabulary and the weights-only rules are in _torch_pickle.py.
"""
import contextlib
import io
import os
import pickle
import secrets
import struct
import sys
import zipfile

import numpy as np

from tensorplay import _C
from tensorplay._creation import from_numpy
from tensorplay._dtype import uint8
from tensorplay._tensor import UntypedStorage
from tensorplay.autograd.grad_mode import no_grad
from tensorplay._torch_pickle import (LoadedStorage, StorageType, add_safe_globals,
                                      clear_safe_globals, get_safe_globals, pickler_class,
                                      safe_globals, unpickler_class, weights_only_message)

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

_ALIGNMENT = 64
_ZIP64_FROM = 1 << 30  # records above get ZIP64 headers; zipfile adds none to smaller ones
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip local file header, 30 bytes
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_CUDA_UNAVAILABLE = (
    "Attempting to deserialize object on a CUDA device but tensorplay.cuda.is_available() is "
    "False. If you are running on a CPU-only machine, please use tensorplay.load with "
    "map_location=tensorplay.device('cpu') to map your storages to the CPU.")


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


@contextlib.contextmanager
def _opened(f, mode):
    if _is_path(f):
        with open(f, mode) as fh:
            yield fh
        return
    if "w" in mode and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a "
                             "'write' attribute")
    if "r" in mode and not hasattr(f, "seek"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. You can only "
                             "tensorplay.load from a file that is seekable. Please pre-load the "
                             "data into a buffer like io.BytesIO and try to load from it instead.")
    yield f


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True):
    """Saves ``obj`` (tensors, Parameters, state_dicts, containers, picklable objects) to
    ``f`` (a path or a writable binary file) in PyTorch's zip format: ``torch.load`` reads it,
    and views sharing a storage are written once and stay views of one storage when loaded.

        tp.save(model.state_dict(), "model.pt")
    """
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("save: the legacy (pre-1.6) format is not written; "
                                  "tensorplay.load still reads it")
    data_pkl = io.BytesIO()
    pickler = pickler_class(pickle_module)(data_pkl, pickle_protocol)
    pickler.dump(obj)  # before opening f: an unpicklable object leaves no file behind
    name = os.path.splitext(os.path.basename(os.fsdecode(f)))[0] if _is_path(f) else "archive"
    with _opened(f, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        def record(key, data):
            info = zipfile.ZipInfo(f"{name}/{key}")
            info.file_size = len(data)
            zip64 = info.file_size > _ZIP64_FROM
            # pad the local header's extra field so that the data starts 64-byte aligned
            data_at = (zf.start_dir + _LOCAL_HEADER.size + len(info.filename.encode("utf-8"))
                       + 4 + (20 if zip64 else 0))
            pad = -data_at % _ALIGNMENT
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            with zf.open(info, "w", force_zip64=zip64) as out:
                out.write(data)

        record("data.pkl", data_pkl.getvalue())
        record(".format_version", b"1")
        record(".storage_alignment", str(_ALIGNMENT).encode())
        record("byteorder", sys.byteorder.encode())
        for saved in pickler.storages.values():  # in key order, as torch.save writes them
            record(f"data/{saved.key}", saved.numpy_bytes())
        record("version", b"3\n")
        record(".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())


def _bytes_of(storage):
    """The whole storage behind a tp.UntypedStorage as a 1-D uint8 tensor."""
    t = storage._t
    with no_grad():
        return t.detach().as_strided([t._storage_nbytes // t.element_size()], [1], 0).view(uint8)


def _default_restore(data, location):
    location = str(location)
    if location == "cpu":
        return data
    if location.startswith("cuda"):
        from tensorplay import cuda
        if not cuda.is_available():
            raise RuntimeError(_CUDA_UNAVAILABLE)
        device = _C.device(location)
        if device.index is not None and device.index >= cuda.device_count():
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {device.index} but "
                               f"tensorplay.cuda.device_count() is {cuda.device_count()}. Please use "
                               "tensorplay.load with map_location to map your storages to an "
                               "existing device.")
        return data.to(device)
    raise RuntimeError("don't know how to restore data location of tensorplay.UntypedStorage "
                       f"(tagged with {location})")


def _restore_location(map_location):
    """``restore(data, location) -> data``: where a storage saved at ``location`` goes."""
    if map_location is None:
        return _default_restore
    if isinstance(map_location, dict):
        return lambda data, location: _default_restore(data, map_location.get(location, location))
    if isinstance(map_location, (str, bytes, _C.device)):
        target = map_location.decode() if isinstance(map_location, bytes) else str(map_location)
        return lambda data, location: _default_restore(data, target)

    def restore(data, location):
        result = map_location(UntypedStorage(data), location)
        if result is None:
            return _default_restore(data, location)
        if not isinstance(result, UntypedStorage):
            raise TypeError(f"load: map_location returned {type(result).__name__}, expected a "
                            "tensorplay.UntypedStorage or None")
        return _bytes_of(result)
    return restore


def _storage_pid(pid, length):
    """(storage_type, key, location, numel) of a storage persistent id."""
    if not (isinstance(pid, tuple) and len(pid) == length and pid[0] == "storage"
            and isinstance(pid[1], StorageType) and isinstance(pid[2], str)
            and isinstance(pid[3], str) and type(pid[4]) is int and pid[4] >= 0):
        raise pickle.UnpicklingError("unsupported persistent id encountered")
    if length == 6 and pid[5] is not None:  # a legacy storage view
        raise RuntimeError("load: storage views (written by PyTorch before 0.4) are not supported")
    return pid[1:5]


def _read_into(fh, offset, array):
    fh.seek(offset)
    view, done = memoryview(array), 0
    while done < len(view):
        n = fh.readinto(view[done:])
        if not n:
            raise RuntimeError("load: the file ends inside a storage record")
        done += n


class _ZipReader:
    """Storage records of a zip checkpoint, read on demand (or mapped with ``mmap``)."""

    def __init__(self, fh, mmap_path):
        self.fh = fh
        self.zf = zipfile.ZipFile(fh)
        names = self.zf.namelist()
        if not names or "/" not in names[0]:
            raise RuntimeError("load: file in archive is not in a subdirectory")
        self.prefix = names[0].split("/", 1)[0] + "/"
        if self.prefix + "data.pkl" not in self.zf.NameToInfo:
            if self.prefix + "constants.pkl" in self.zf.NameToInfo:
                raise RuntimeError("load: this is a TorchScript archive (torch.jit.save); "
                                   "tensorplay.load reads torch.save checkpoints only")
            raise RuntimeError(f"load: the archive has no {self.prefix}data.pkl record")
        order = self.zf.NameToInfo.get(self.prefix + "byteorder")
        self.byteorder = self.zf.read(order).decode() if order else sys.byteorder
        if self.byteorder not in ("little", "big"):
            raise ValueError(f"Unknown endianness type: {self.byteorder}")
        # copy-on-write, as PyTorch's MAP_PRIVATE: writes to loaded tensors never reach the file
        self.mmap = np.memmap(mmap_path, dtype=np.uint8, mode="c") if mmap_path else None

    def data_pkl(self):
        return self.zf.open(self.prefix + "data.pkl")

    def storage_bytes(self, key, nbytes, itemsize):
        info = self.zf.NameToInfo.get(f"{self.prefix}data/{key}")
        if info is None:
            raise RuntimeError(f"load: the archive has no record for storage {key!r}")
        if info.file_size != nbytes:
            raise RuntimeError(f"load: storage {key!r} should hold {nbytes} bytes, its record "
                               f"holds {info.file_size}")
        if info.compress_type != zipfile.ZIP_STORED:
            array = np.frombuffer(bytearray(self.zf.read(info)), dtype=np.uint8)
        else:
            self.fh.seek(info.header_offset)
            header = _LOCAL_HEADER.unpack(self.fh.read(_LOCAL_HEADER.size))
            if header[0] != b"PK\x03\x04":
                raise RuntimeError(f"load: bad local header for storage {key!r}")
            offset = info.header_offset + _LOCAL_HEADER.size + header[10] + header[11]
            if self.mmap is not None:
                array = self.mmap[offset:offset + nbytes]
            else:
                array = np.empty(nbytes, dtype=np.uint8)
                _read_into(self.fh, offset, array)
        if self.byteorder != sys.byteorder and itemsize > 1:
            array = array.view(f"u{itemsize}").byteswap().view(np.uint8)
        return from_numpy(array)


def _no_storage(pid):
    raise pickle.UnpicklingError("unsupported persistent id encountered")


def _unpickle(unpickler, weights_only):
    try:
        return unpickler.load()
    except pickle.UnpicklingError as e:
        if weights_only:
            raise pickle.UnpicklingError(weights_only_message(str(e))) from None
        raise


def _storage_loader(pid_length, read_bytes, restore, storages):
    """``persistent_load`` for storages: one LoadedStorage per key, its bytes from
    ``read_bytes(key, nbytes, itemsize)``, placed by ``restore``."""
    def load_storage(pid):
        storage_type, key, location, numel = _storage_pid(pid, pid_length)
        storage = storages.get(key)
        if storage is None:
            itemsize = storage_type.itemsize
            data = restore(read_bytes(key, numel * itemsize, itemsize), location)
            storage = storages[key] = LoadedStorage(data, storage_type)
        elif storage.dtype != storage_type.dtype:
            raise RuntimeError(f"load: storage {key!r} is declared with two dtypes")
        return storage
    return load_storage


def _load_legacy(fh, restore, unpickler_cls, weights_only, pickle_load_args):
    """PyTorch's pre-1.6 format: magic, protocol and system-info pickles, the object pickle,
    the list of storage keys, then each storage as an int64 element count and its bytes."""
    def unpickle(load_storage=_no_storage):
        return _unpickle(unpickler_cls(fh, load_storage, **pickle_load_args), weights_only)

    if unpickle() != _LEGACY_MAGIC:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = unpickle()
    if protocol != _LEGACY_PROTOCOL:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    unpickle()  # system info: the writer's byte order and C type sizes
    start = fh.tell()
    file_size = fh.seek(0, io.SEEK_END)
    fh.seek(start)

    def allocate(key, nbytes, itemsize):  # filled once the object pickle is read
        if nbytes > file_size:
            raise RuntimeError(f"load: storage {key!r} is larger than the file")
        return from_numpy(np.empty(nbytes, dtype=np.uint8))

    storages = {}
    result = unpickle(_storage_loader(6, allocate, restore, storages))
    keys = unpickle()
    if not isinstance(keys, list):
        raise RuntimeError("load: corrupt legacy checkpoint (no storage key list)")
    for key in keys:
        storage = storages.get(key) if isinstance(key, str) else None
        if storage is None:
            raise RuntimeError(f"load: storage key {key!r} not found in the checkpoint")
        count = fh.read(8)
        itemsize = storage.storage_type.itemsize
        if len(count) != 8 or struct.unpack("<q", count)[0] * itemsize != storage._t.numel():
            raise RuntimeError(f"load: storage {key!r} does not match its declared size")
        _read_into(fh, fh.tell(), storage._t.numpy())
    return result


def _load_from_bytes(data):
    """A tensor pickled by Tensor.__reduce_ex__ (``save``'s bytes)."""
    return load(io.BytesIO(data), weights_only=False)


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Loads what ``save`` (or ``torch.save``) wrote to ``f`` (a path or a seekable binary
    file) as TensorPlay tensors; never imports torch.

    ``weights_only=True`` (the default) unpickles only tensors, Parameters, dtypes, Size,
    device, containers, primitives and the globals allowed with ``add_safe_globals``; other
    globals raise ``pickle.UnpicklingError``. ``weights_only=False`` loads any pickle: only
    do that with files you trust. ``map_location`` (None, "cpu", a device, a dict of
    locations, or ``fn(storage, location)``) says where storages go; ``mmap=True`` maps the
    file's storage records instead of reading them (``f`` must be a path).

        state = tp.load("model.pt", map_location="cpu")
    """
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if mmap and not _is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    pickle_load_args.setdefault("encoding", "utf-8")
    unpickler_cls = unpickler_class(pickle_module or pickle, weights_only)
    restore = _restore_location(map_location)
    with _opened(f, "rb") as fh:
        start = fh.tell()
        is_zip = fh.read(4) == b"PK\x03\x04"
        fh.seek(start)
        if not is_zip:
            if mmap:
                raise RuntimeError("mmap can only be used with files saved with "
                                   "`save(_use_new_zipfile_serialization=True)`")
            return _load_legacy(fh, restore, unpickler_cls, weights_only, pickle_load_args)
        reader = _ZipReader(fh, f if mmap else None)
        storage_loader = _storage_loader(5, reader.storage_bytes, restore, {})
        with reader.data_pkl() as pkl:
            return _unpickle(unpickler_cls(pkl, storage_loader, **pickle_load_args), weights_only)
