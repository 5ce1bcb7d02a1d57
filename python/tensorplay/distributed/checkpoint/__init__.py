"""tensorplay.distributed.checkpoint: save / load of state dicts holding DTensors, plain
tensors and other objects, one file per rank plus a metadata file.

Note [Distributed checkpoints]. Keys are the state dict's flattened paths (``"b.c"``,
``"lst.0"``; a list or tuple is walked only if it holds tensors). Each rank writes the blocks
it owns to ``__<rank>_0.distcp`` (a tensorplay.save file of plain tensors and pickled
objects): a Shard DTensor's local block (with its offset in the global tensor), a Replicate
DTensor from mesh rank 0 only, plain tensors and objects from rank 0 only. Rank 0 gathers
the ranks' entries and writes ``.metadata``: per key the global size and dtype and every
saved chunk (offsets, sizes, file). Loading is a plan per rank: the region its destination
covers (its DTensor block, or the whole tensor) is filled from the chunks that overlap it,
so any world size and layout reads any checkpoint. Errors are exchanged: every rank raises
CheckpointException with each failing rank's exception, as PyTorch does.
"""
import dataclasses
import os
import pickle
import traceback

import tensorplay as tp

from ..tensor import DTensor, Partial, Shard
from ..tensor._api import _block

__all__ = ["save", "load", "CheckpointException", "Metadata", "TensorStorageMetadata",
           "ChunkStorageMetadata", "BytesStorageMetadata", "FileSystemWriter",
           "FileSystemReader", "state_dict"]

_METADATA = ".metadata"


class CheckpointException(BaseException):
    """Raised on every rank when some rank failed: ``failures`` maps a rank to its
    (exception, traceback summary)."""

    def __init__(self, msg, failures):
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self):
        return self._failures

    def __str__(self):
        lines = [f"CheckpointException ranks:{self._failures.keys()}"]
        for rank, (exc, tb) in self._failures.items():
            lines.append(f"Traceback (most recent call last): (RANK {rank})")
            lines.append("".join(traceback.format_list(tb)) if tb else "")
            lines.append("".join(traceback.format_exception_only(type(exc), exc)))
        return "\n".join(lines)


@dataclasses.dataclass
class ChunkStorageMetadata:
    offsets: tuple
    sizes: tuple


@dataclasses.dataclass
class TensorStorageMetadata:
    dtype: object
    size: tuple
    chunks: list


@dataclasses.dataclass
class BytesStorageMetadata:
    pass


@dataclasses.dataclass
class Metadata:
    """``state_dict_metadata``: key -> TensorStorageMetadata or BytesStorageMetadata;
    ``storage_data``: (key, chunk offsets) -> (file name, entry in the file)."""
    state_dict_metadata: dict
    planner_data: object = None
    storage_data: dict = None


class FileSystemWriter:
    """Where save writes: a directory (created if missing)."""

    def __init__(self, path, single_file_per_rank=True, sync_files=True, thread_count=1,
                 per_thread_copy_ahead=10_000_000, cache_staged_state_dict=False, overwrite=True):
        self.path = os.fspath(path)
        self.overwrite = overwrite


class FileSystemReader:
    """Where load reads: a directory written by save."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def read_metadata(self):
        with open(os.path.join(self.path, _METADATA), "rb") as f:
            return pickle.load(f)


# ---- state dict paths ----
def _holds_tensor(x):
    if isinstance(x, tp.Tensor):
        return True
    if isinstance(x, dict):
        return any(_holds_tensor(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_holds_tensor(v) for v in x)
    return False


def _flatten(obj, prefix="", out=None, parent=None, key=None):
    """[(path, value, container, key in container)] of the leaves."""
    if out is None:
        out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out, obj, k)
    elif isinstance(obj, (list, tuple)) and _holds_tensor(obj) and prefix:
        for i, v in enumerate(obj):
            _flatten(v, f"{prefix}.{i}", out, obj, i)
    else:
        out.append((prefix, obj, parent, key))
    return out


# ---- the process group ----
def _world(process_group, no_dist):
    import tensorplay.distributed as dist
    if no_dist or not dist.is_initialized():
        return None, 0, 1
    return process_group, dist.get_rank(process_group), dist.get_world_size(process_group)


def _all_gather_object(obj, pg, world):
    if world == 1:
        return [obj]
    import tensorplay.distributed as dist
    out = [None] * world
    dist.all_gather_object(out, obj, group=pg)
    return out


def _raise_failures(err, pg, world, what):
    """Every rank learns every rank's failure and raises one CheckpointException."""
    mine = None if err is None else (err, traceback.extract_tb(err.__traceback__))
    try:
        pickle.dumps(mine)
    except Exception:
        mine = (RuntimeError(repr(err)), mine[1])
    everyone = _all_gather_object(mine, pg, world)
    failures = {r: f for r, f in enumerate(everyone) if f is not None}
    if failures:
        raise CheckpointException(what, failures)


def _checkpoint_dir(checkpoint_id, storage):
    if storage is not None:
        return storage.path
    if checkpoint_id is None:
        raise RuntimeError("`checkpoint_id` must be specified when the storage writer or reader "
                           "is not given.")
    return os.fspath(checkpoint_id)


def _no_planner(planner):
    if planner is not None:
        raise NotImplementedError("tensorplay.distributed.checkpoint plans saves and loads itself; "
                                  "custom planners are not supported")


def _owned_chunk(value):
    """(offsets, local tensor) this rank saves for a DTensor, or None."""
    spec = value._spec
    p = spec.placements[0]
    mesh = spec.mesh
    if isinstance(p, Shard):
        local = value._local_tensor
        if local.numel() == 0:
            return None
        start, _ = _block(spec.shape[p.dim], mesh.size(), mesh.get_local_rank())
        offsets = [0] * len(spec.shape)
        offsets[p.dim] = start
        return tuple(offsets), local
    full = value.full_tensor() if isinstance(p, Partial) else value._local_tensor
    if mesh.get_local_rank() != 0:
        return None
    return (0,) * len(spec.shape), full


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist=False):
    """Writes ``state_dict`` to the directory ``checkpoint_id`` (Note [Distributed
    checkpoints]); every rank of the group calls it. Returns the Metadata."""
    path = _checkpoint_dir(checkpoint_id, storage_writer)
    _no_planner(planner)
    pg, rank, world = _world(process_group, no_dist)
    entries, err = {}, None
    try:
        if storage_writer is not None and not storage_writer.overwrite and \
                os.path.exists(os.path.join(path, _METADATA)):
            raise RuntimeError(f"Checkpoint already exists at {path} and overwrite=False")
        os.makedirs(path, exist_ok=True)
        fname = f"__{rank}_0.distcp"
        payload = {}
        for fqn, value, _, _ in _flatten(state_dict):
            if isinstance(value, DTensor):
                owned = _owned_chunk(value)
                meta = ("tensor", value.dtype, tuple(value.shape))
                chunks = []
                if owned is not None:
                    offsets, local = owned
                    name = f"{fqn}@{','.join(map(str, offsets))}"
                    payload[name] = local.detach().contiguous().cpu()
                    chunks.append((offsets, tuple(local.shape), fname, name))
                entries[fqn] = (meta, chunks)
            elif isinstance(value, tp.Tensor):
                meta = ("tensor", value.dtype, tuple(value.shape))
                chunks = []
                if rank == 0:
                    payload[fqn] = value.detach().contiguous().cpu()
                    chunks.append(((0,) * value.dim(), tuple(value.shape), fname, fqn))
                entries[fqn] = (meta, chunks)
            else:
                chunks = []
                if rank == 0:
                    payload[fqn] = ("__object__", pickle.dumps(value))
                    chunks.append(((), (), fname, fqn))
                entries[fqn] = (("bytes",), chunks)
        tp.save(payload, os.path.join(path, fname))
    except Exception as e:
        err = e
    _raise_failures(err, pg, world, "save failed")
    everyone = _all_gather_object(entries, pg, world)
    metadata = _merge(everyone)
    err = None
    if rank == 0:
        try:
            tmp = os.path.join(path, _METADATA + ".tmp")
            with open(tmp, "wb") as f:
                pickle.dump(metadata, f)
            os.replace(tmp, os.path.join(path, _METADATA))
        except Exception as e:
            err = e
    _raise_failures(err, pg, world, "save failed writing metadata")
    return metadata


def _merge(per_rank):
    sd_meta, storage = {}, {}
    for entries in per_rank:
        for fqn, (meta, chunks) in entries.items():
            if meta[0] == "bytes":
                m = sd_meta.setdefault(fqn, BytesStorageMetadata())
            else:
                m = sd_meta.setdefault(fqn, TensorStorageMetadata(meta[1], meta[2], []))
            for offsets, sizes, fname, name in chunks:
                if isinstance(m, TensorStorageMetadata):
                    m.chunks.append(ChunkStorageMetadata(offsets, sizes))
                storage[(fqn, offsets)] = (fname, name)
    return Metadata(sd_meta, None, storage)


def _region(value):
    """(offsets, destination tensor) this rank fills: its DTensor block or the tensor."""
    if isinstance(value, DTensor):
        spec = value._spec
        p = spec.placements[0]
        local = value._local_tensor
        offsets = [0] * len(spec.shape)
        if isinstance(p, Shard):
            offsets[p.dim], _ = _block(spec.shape[p.dim], spec.mesh.size(),
                                       spec.mesh.get_local_rank())
        elif isinstance(p, Partial):
            raise ValueError("load: a Partial DTensor has no definite local value to load into")
        return tuple(offsets), local
    return (0,) * value.dim(), value


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist=False):
    """Fills ``state_dict`` in place from the checkpoint in ``checkpoint_id``: tensors and
    DTensor blocks are copied into, other values replaced. Any world size and layout may
    read any checkpoint (Note [Distributed checkpoints])."""
    path = _checkpoint_dir(checkpoint_id, storage_reader)
    _no_planner(planner)
    pg, rank, world = _world(process_group, no_dist)
    err = None
    try:
        metadata = FileSystemReader(path).read_metadata()
        files = {}

        def read(fqn, offsets):
            fname, name = metadata.storage_data[(fqn, offsets)]
            if fname not in files:
                files[fname] = tp.load(os.path.join(path, fname), weights_only=False)
            return files[fname][name]

        for fqn, value, parent, key in _flatten(state_dict):
            m = metadata.state_dict_metadata.get(fqn)
            if m is None:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {fqn}.")
            if not isinstance(value, tp.Tensor):
                if not isinstance(m, BytesStorageMetadata):
                    raise ValueError(f"load: {fqn} is a tensor in the checkpoint but "
                                     f"{type(value).__name__} in the state dict")
                obj = pickle.loads(read(fqn, ())[1])
                if isinstance(parent, tuple):
                    raise ValueError(f"load: cannot replace {fqn} inside a tuple")
                if parent is None:
                    raise ValueError("load: the state dict must be a dict")
                parent[key] = obj
                continue
            if not isinstance(m, TensorStorageMetadata):
                raise ValueError(f"load: {fqn} is not a tensor in the checkpoint")
            if tuple(value.shape) != tuple(m.size):
                raise ValueError(f"Size mismatch between saved {tp.Size(m.size)} and current: "
                                 f"{value.shape} for {fqn}")
            offsets, dest = _region(value)
            with tp.no_grad():
                for c in m.chunks:
                    lo = [max(a, b) for a, b in zip(offsets, c.offsets)]
                    hi = [min(a + s, b + t) for a, s, b, t in
                          zip(offsets, dest.shape, c.offsets, c.sizes)]
                    if any(h <= low for low, h in zip(lo, hi)) and dest.dim():
                        continue
                    src = read(fqn, tuple(c.offsets))
                    d, s = dest, src
                    for dim, (low, h) in enumerate(zip(lo, hi)):
                        d = d.narrow(dim, low - offsets[dim], h - low)
                        s = s.narrow(dim, low - c.offsets[dim], h - low)
                    d.copy_(s)
    except Exception as e:
        err = e
    _raise_failures(err, pg, world, "load failed")


# the older names
save_state_dict = save
load_state_dict = load

from . import state_dict  # noqa: E402,F401
