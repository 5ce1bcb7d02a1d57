"""tp.save / tp.load against torch.save / torch.load, in both directions: every dtype, views
sharing a storage, strided / 0-dim / empty tensors, Parameters, containers, the zip layout,
weights-only refusals (a malicious checkpoint), safe globals, map_location, mmap, the legacy
format, nn state_dicts, and corrupt files (clear errors, never a crash)."""
import collections
import copy
import inspect
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import types
import zipfile

import numpy as np
import pytest
import torch

import tensorplay as tp

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")


def _values(name, n):
    if name == "bool":
        return [bool(i % 3) for i in range(n)]
    if name == "uint8":
        return [(7 * i) % 251 for i in range(n)]
    return [(i % 7) - 3 for i in range(n)]


def _sample(lib):
    """The same checkpoint contents built with torch or tensorplay."""
    sd = collections.OrderedDict()
    for name in DTYPES:
        sd[f"t_{name}"] = lib.tensor(_values(name, 12), dtype=getattr(lib, name)).reshape(3, 4)
    base = lib.arange(24, dtype=lib.float32).reshape(4, 6)
    sd["base"] = base
    sd["row"] = base[1]                # a view with a storage offset
    sd["transposed"] = base.t()        # non-contiguous
    sd["stepped"] = base[::2, 1::3]    # strided with an offset
    sd["scalar"] = lib.tensor(3.5, dtype=lib.float64)
    sd["empty"] = lib.empty(0, 3)
    sd["leaf"] = lib.ones(2, requires_grad=True)
    sd["param"] = lib.nn.Parameter(lib.arange(6, dtype=lib.float32).reshape(2, 3))
    sd["frozen"] = lib.nn.Parameter(lib.ones(3, dtype=lib.float16), requires_grad=False)
    sd["nested"] = {"list": [sd["row"], (1, 2.5, "x", None, True)], "size": lib.Size([2, 3]),
                    "dtype": lib.bfloat16, "device": lib.device("cpu"), "bytes": b"ab\x00",
                    "set": {1, 2}, "complex": 1 + 2j, "bytearray": bytearray(b"z")}
    sd._metadata = collections.OrderedDict([("", {"version": 1}), ("layer", {"version": 2})])
    return sd


def _describe(x):
    """A JSON-able description of checkpoint contents that reads the same for torch and
    tensorplay objects (also run, as source, in a subprocess that has no torch)."""
    kind = type(x).__name__
    if hasattr(x, "storage_offset"):
        return {"kind": kind, "dtype": str(x.dtype).rsplit(".", 1)[-1], "shape": list(x.shape),
                "stride": list(x.stride()), "offset": x.storage_offset(),
                "requires_grad": x.requires_grad, "values": x.detach().tolist()}
    if isinstance(x, dict):
        return {"kind": kind, "items": [[k, _describe(v)] for k, v in x.items()],
                "meta": _describe(getattr(x, "_metadata", None))}
    if isinstance(x, (list, tuple)):
        return {"kind": kind, "items": [_describe(v) for v in x]}
    if kind in ("dtype", "device"):
        return {"kind": kind, "str": str(x).rsplit(".", 1)[-1]}
    if isinstance(x, (set, bytes, bytearray, complex)):
        return {"kind": kind, "repr": repr(sorted(x) if isinstance(x, set) else x)}
    return x


def _records(data):
    """{name without the archive prefix: bytes} and the prefix of a zip checkpoint."""
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    prefix = names[0].split("/")[0]
    return {n.split("/", 1)[1]: z.read(n) for n in names}, prefix, names


def _saved(save, obj, **kw):
    buf = io.BytesIO()
    save(obj, buf, **kw)
    return buf.getvalue()


def _same_memory(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# ---- torch.save -> tp.load ----------------------------------------------------------------

def test_torch_checkpoint_loads_without_torch(tmp_path):
    path = tmp_path / "torch.pt"
    torch.save(_sample(torch), path)
    script = "\n".join([
        "import json, sys",
        "sys.modules['torch'] = None  # any import of torch now fails",
        "import tensorplay as tp",
        inspect.getsource(_describe),
        f"obj = tp.load({str(path)!r})",
        "assert sys.modules['torch'] is None",
        "print(json.dumps(_describe(obj)))",
    ])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    want = json.loads(json.dumps(_describe(_sample(torch))))
    for d in (got, want):  # Parameter / Size / dtype / device: same names in both libraries
        assert d["kind"] == "OrderedDict"
    assert got == want


def test_torch_checkpoint_values_and_types():
    loaded = tp.load(io.BytesIO(_saved(torch.save, _sample(torch))))
    assert _describe(loaded) == _describe(_sample(torch))
    assert type(loaded) is collections.OrderedDict
    assert type(loaded["param"]) is tp.nn.Parameter and loaded["param"].requires_grad
    assert type(loaded["frozen"]) is tp.nn.Parameter and not loaded["frozen"].requires_grad
    assert type(loaded["base"]) is tp.Tensor and loaded["leaf"].is_leaf
    nested = loaded["nested"]
    assert type(nested["size"]) is tp.Size and nested["dtype"] is tp.bfloat16
    assert nested["device"] == tp.device("cpu") and nested["bytes"] == b"ab\x00"


def test_torch_views_stay_views_of_one_storage():
    loaded = tp.load(io.BytesIO(_saved(torch.save, _sample(torch))))
    base, row, transposed, stepped = (loaded[k] for k in ("base", "row", "transposed", "stepped"))
    assert base._storage_ptr == row._storage_ptr == transposed._storage_ptr == stepped._storage_ptr
    assert loaded["nested"]["list"][0] is row  # the same object, as pickled
    base[1, 1] = 100.0
    assert row[1].item() == 100.0 and transposed[1, 1].item() == 100.0
    base[2, 4] = -5.0
    assert stepped[1, 1].item() == -5.0
    assert loaded["t_int8"]._storage_ptr != base._storage_ptr


def test_torch_parameter_with_attributes_and_tensor_attributes():
    p = torch.nn.Parameter(torch.ones(2))
    p.note = "kept"
    loaded = tp.load(io.BytesIO(_saved(torch.save, [p])))[0]
    assert type(loaded) is tp.nn.Parameter and loaded.note == "kept" and loaded.requires_grad
    t = torch.ones(2)
    t.note = "lost"
    with pytest.raises(RuntimeError, match="cannot hold attributes"):
        tp.load(io.BytesIO(_saved(torch.save, t)))


@pytest.mark.parametrize("dtype, name", [(torch.complex32, "torch.ComplexHalfStorage"),
                                         (torch.uint16, "torch.storage.UntypedStorage")])
def test_torch_dtypes_tensorplay_lacks_raise(dtype, name):
    data = _saved(torch.save, torch.ones(2, dtype=dtype))
    with pytest.raises(RuntimeError, match="no TensorPlay equivalent|which TensorPlay"):
        tp.load(io.BytesIO(data))


# ---- tp.save -> torch.load ----------------------------------------------------------------

def test_tensorplay_checkpoint_loads_in_torch_weights_only():
    loaded = torch.load(io.BytesIO(_saved(tp.save, _sample(tp))), weights_only=True)
    assert _describe(loaded) == _describe(_sample(torch))
    assert type(loaded["param"]) is torch.nn.Parameter and loaded["param"].requires_grad
    assert type(loaded["nested"]["size"]) is torch.Size
    assert loaded["nested"]["dtype"] is torch.bfloat16


def test_tensorplay_views_load_as_views_in_torch():
    loaded = torch.load(io.BytesIO(_saved(tp.save, _sample(tp))), weights_only=True)
    assert _same_memory(loaded["base"], loaded["row"])
    assert _same_memory(loaded["base"], loaded["stepped"])
    loaded["base"][1, 1] = 100.0
    assert loaded["transposed"][1, 1].item() == 100.0


def test_tensorplay_round_trip_keeps_views():
    loaded = tp.load(io.BytesIO(_saved(tp.save, _sample(tp))))
    assert _describe(loaded) == _describe(_sample(tp))
    loaded["base"][3, 5] = 42.0
    assert loaded["transposed"][5, 3].item() == 42.0
    # saved again, the storage is still written once
    records, _, _ = _records(_saved(tp.save, {k: loaded[k] for k in ("base", "row", "stepped")}))
    assert sorted(k for k in records if k.startswith("data/")) == ["data/0"]


def test_parameter_with_attributes_and_pickle_protocol_4():
    p = tp.nn.Parameter(tp.ones(2, 2))
    p.note = "kept"
    for protocol in (2, 4):  # torch's weights-only unpickler has no FRAME opcode (protocol 4)
        loaded = torch.load(io.BytesIO(_saved(tp.save, {"p": p}, pickle_protocol=protocol)),
                            weights_only=protocol == 2)
        assert loaded["p"].note == "kept" and loaded["p"].requires_grad
        assert tp.load(io.BytesIO(_saved(tp.save, {"p": p}, pickle_protocol=protocol)))["p"].note \
            == "kept"


def test_zip_layout_matches_torch(tmp_path):
    obj_tp, obj_torch = _sample(tp), _sample(torch)
    tp.save(obj_tp, tmp_path / "model.v1.pt")
    torch.save(obj_torch, tmp_path / "torch.pt")
    ours, prefix, names = _records((tmp_path / "model.v1.pt").read_bytes())
    theirs, _, _ = _records((tmp_path / "torch.pt").read_bytes())
    assert prefix == "model.v1"
    assert _records(_saved(tp.save, obj_tp))[1] == "archive"
    assert [n.split("/", 1)[1] for n in names] == list(theirs)  # same records, same order
    for key in theirs:
        if key.startswith("data/") or key in ("version", "byteorder", ".format_version",
                                              ".storage_alignment"):
            assert ours[key] == theirs[key], key
    assert len(ours[".data/serialization_id"]) == 40
    with open(tmp_path / "model.v1.pt", "rb") as f:
        for info in zipfile.ZipFile(f).infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            f.seek(info.header_offset)
            header = struct.unpack("<4s2B4HL2L2H", f.read(30))
            assert (info.header_offset + 30 + header[10] + header[11]) % 64 == 0, info.filename


def test_pickle_module():
    pure = types.SimpleNamespace(Pickler=pickle._Pickler, Unpickler=pickle.Unpickler)
    data = _saved(tp.save, {"w": tp.ones(2)}, pickle_module=pure)
    assert torch.load(io.BytesIO(data))["w"].tolist() == [1, 1]
    assert tp.load(io.BytesIO(data), pickle_module=pure, weights_only=False)["w"].tolist() == [1, 1]
    with pytest.raises(TypeError, match="pure-Python pickler"):
        tp.save(tp.ones(1), io.BytesIO(),
                pickle_module=types.SimpleNamespace(Pickler=pickle.Pickler))  # the C pickler


def test_save_errors_leave_no_file(tmp_path):
    path = tmp_path / "x.pt"
    with pytest.raises((pickle.PicklingError, TypeError, AttributeError)):
        tp.save({"f": lambda: 1}, path)
    assert not path.exists()
    with pytest.raises(AttributeError, match="file-like object with a 'write'"):
        tp.save(tp.ones(1), 5)
    with pytest.raises(AttributeError, match="seekable"):
        tp.load(5)
    with pytest.raises(NotImplementedError, match="legacy"):
        tp.save(tp.ones(1), io.BytesIO(), _use_new_zipfile_serialization=False)
    a = np.zeros(4, dtype=np.float32)
    with pytest.raises(RuntimeError, match="same data as different types"):
        tp.save([tp.from_numpy(a), tp.from_numpy(a.view(np.int32))], io.BytesIO())


# ---- nn state_dicts -----------------------------------------------------------------------

def _net(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(12, 4))


def test_state_dict_interchange(tmp_path):
    x = np.random.default_rng(0).standard_normal((5, 2, 4, 4)).astype(np.float32)
    for src_lib, dst_lib, save, load in ((torch, tp, torch.save, tp.load),
                                         (tp, torch, tp.save, torch.load)):
        src, dst = _net(src_lib), _net(dst_lib)
        src(src_lib.tensor(x))  # train mode: moves the running statistics
        src.eval()
        save(src.state_dict(), tmp_path / "net.pt")
        state = load(tmp_path / "net.pt")
        assert list(state) == list(src.state_dict())
        assert int(state["1.num_batches_tracked"]) == 1
        dst.load_state_dict(state)
        dst.eval()
        want = src(src_lib.tensor(x)).detach().tolist()
        got = dst(dst_lib.tensor(x)).detach().tolist()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---- weights_only -------------------------------------------------------------------------

class _Run:
    """Pickles as a call of ``func(*args)``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


class _Pid:
    """Pickles as the persistent id ``pid``."""

    def __init__(self, pid):
        self.pid = pid


class _PidPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _Pid) else None


def _checkpoint(obj, records=None, prefix="archive"):
    """A zip checkpoint (no alignment) whose data.pkl pickles ``obj``."""
    pkl = io.BytesIO()
    _PidPickler(pkl, protocol=2).dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(f"{prefix}/data.pkl", pkl.getvalue())
        for key, data in (records or {}).items():
            z.writestr(f"{prefix}/data/{key}", data)
        z.writestr(f"{prefix}/version", b"3\n")
    out.seek(0)
    return out


def test_malicious_checkpoint_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    evil = [
        (_Run(os.system, f"touch {marker}"), "whose module posix is blocked"),
        (_Run(exec, f"open({str(marker)!r}, 'w').close()"),
         "Unsupported global: GLOBAL builtins.exec"),
    ]
    for obj, message in evil:
        for f in (_checkpoint({"w": obj}), io.BytesIO(pickle.dumps(obj, protocol=2))):
            with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as e:
                tp.load(f)
            assert message in str(e.value)
            assert not marker.exists()
    # the same file with weights_only=False (the user's explicit choice) does run the code
    tp.load(_checkpoint({"w": evil[1][0]}), weights_only=False)
    assert marker.exists()


class _Config:
    def __init__(self, lr):
        self.lr = lr


def test_safe_globals_and_weights_only_false():
    data = _saved(tp.save, {"cfg": _Config(0.5), "w": tp.ones(2)})
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {__name__}._Config"):
        tp.load(io.BytesIO(data))
    assert tp.load(io.BytesIO(data), weights_only=False)["cfg"].lr == 0.5
    with tp.serialization.safe_globals([_Config]):
        assert _Config in tp.serialization.get_safe_globals()
        assert tp.load(io.BytesIO(data))["cfg"].lr == 0.5
    assert _Config not in tp.serialization.get_safe_globals()
    tp.serialization.add_safe_globals([(_Config, f"{__name__}._Config")])
    try:
        assert tp.load(io.BytesIO(data))["cfg"].lr == 0.5
    finally:
        tp.serialization.clear_safe_globals()
    assert tp.serialization.get_safe_globals() == []
    with tp.serialization.safe_globals([os.system]):  # blocked modules stay blocked
        with pytest.raises(pickle.UnpicklingError, match="is blocked"):
            tp.load(_checkpoint(_Run(os.system, "true")))
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        tp.load(io.BytesIO(data), pickle_module=pickle)
    assert tp.load(io.BytesIO(data), pickle_module=pickle, weights_only=False)["cfg"].lr == 0.5


def test_weights_only_false_maps_torch_globals():
    loaded = tp.load(io.BytesIO(_saved(torch.save, _sample(torch))), weights_only=False)
    assert _describe(loaded) == _describe(_sample(torch))
    with pytest.raises(RuntimeError, match="torch.nn.modules.linear.Linear"):
        tp.load(io.BytesIO(_saved(torch.save, torch.nn.Linear(2, 2))), weights_only=False)


# ---- corrupt checkpoints ------------------------------------------------------------------

def _tensor_at(size, stride, offset=0, numel=4, dtype_storage=torch.FloatStorage, key="0"):
    pid = _Pid(("storage", dtype_storage, key, "cpu", numel))
    return _Run(torch._utils._rebuild_tensor_v2, pid, offset, size, stride, False,
                collections.OrderedDict())


@pytest.mark.parametrize("obj, records, error, match", [
    (_tensor_at((2,), (1,)), {"0": b"\0" * 8}, RuntimeError, "should hold 16 bytes"),
    (_tensor_at((2,), (1,)), {}, RuntimeError, "no record for storage"),
    (_tensor_at((5,), (1,)), {"0": b"\0" * 16}, RuntimeError, "need a storage of 5"),
    (_tensor_at((2,), (1,), offset=3), {"0": b"\0" * 16}, RuntimeError, "need a storage"),
    (_tensor_at((2 ** 40, 2 ** 40), (2 ** 40, 1)), {"0": b"\0" * 16}, RuntimeError,
     "need a storage"),  # the element count overflows int64
    (_tensor_at((2,), (-1,), offset=1), {"0": b"\0" * 16}, RuntimeError, "negative"),
    (_tensor_at((2,), (1,), offset=-1), {"0": b"\0" * 16}, RuntimeError, "negative"),
    (_tensor_at((2, 2), (1,)), {"0": b"\0" * 16}, RuntimeError, "invalid tensor layout"),
    (_tensor_at(("a",), (1,)), {"0": b"\0" * 16}, RuntimeError, "invalid tensor layout"),
    (_Run(torch._utils._rebuild_tensor_v2, 5, 0, (1,), (1,), False, None), {},
     TypeError, "expected a typed storage"),
    (_Run(torch._utils._rebuild_tensor_v3, 5, 0, (1,), (1,), False, None, torch.float32), {},
     TypeError, "expected a storage"),
    (_Pid(("storage", "x", "0", "cpu", 1)), {}, pickle.UnpicklingError, "persistent id"),
    (_Pid(("storage", torch.FloatStorage, "0", "cpu", -1)), {}, pickle.UnpicklingError,
     "persistent id"),
])
def test_corrupt_checkpoints_raise(obj, records, error, match):
    with pytest.raises(error, match=match):
        tp.load(_checkpoint(obj, records))


def test_bad_archives_and_garbage():
    with pytest.raises(RuntimeError, match="no archive/data.pkl"):
        tp.load(io.BytesIO(_rename(_checkpoint(1), "x.pkl")))
    with pytest.raises(RuntimeError, match="TorchScript"):
        tp.load(io.BytesIO(_rename(_checkpoint(1), "constants.pkl")))
    flat = io.BytesIO()
    with zipfile.ZipFile(flat, "w") as z:
        z.writestr("data.pkl", pickle.dumps(1))
    flat.seek(0)
    with pytest.raises(RuntimeError, match="not in a subdirectory"):
        tp.load(flat)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        tp.load(io.BytesIO(b"garbage12345"))
    with pytest.raises(RuntimeError, match="Invalid magic number"):
        tp.load(io.BytesIO(pickle.dumps(1234)))


def _rename(f, new_name):
    """The bytes of zip ``f`` with its data.pkl renamed."""
    src = zipfile.ZipFile(f)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n in src.namelist():
            z.writestr(n.replace("data.pkl", new_name), src.read(n))
    return out.getvalue()


# ---- map_location, mmap, byte order, legacy -----------------------------------------------

def _rewrite(data, change):
    """Checkpoint bytes with ``change(name, bytes) -> bytes`` applied to every record."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for n in src.namelist():
            z.writestr(n, change(n.split("/", 1)[1], src.read(n)))
    return out.getvalue()


def test_map_location():
    data = _saved(tp.save, {"w": tp.arange(4.0)})
    cuda = _rewrite(data, lambda n, b: b if n != "data.pkl" else
                    b.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"))
    assert torch.load(io.BytesIO(cuda), map_location="cpu")["w"].tolist() == [0, 1, 2, 3]
    if not tp.cuda.is_available():  # test_cuda.py loads onto a GPU
        with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
            tp.load(io.BytesIO(cuda))
        with pytest.raises(RuntimeError, match="on a CUDA device"):
            tp.load(io.BytesIO(data), map_location="cuda")
    seen = []

    def keep(storage, location):
        seen.append((type(storage).__name__, storage.nbytes(), location))
        return storage

    for ml in ("cpu", b"cpu", tp.device("cpu"), {"cuda:0": "cpu"}, {"cuda:0": tp.device("cpu")},
               keep, lambda storage, location: None if location == "cpu" else storage):
        f = io.BytesIO(data if ml == "cpu" or isinstance(ml, (bytes, tp.device)) else cuda)
        assert tp.load(f, map_location=ml)["w"].tolist() == [0, 1, 2, 3]
    assert seen == [("UntypedStorage", 16, "cuda:0")]
    with pytest.raises(RuntimeError, match="tagged with xla"):
        tp.load(io.BytesIO(data), map_location={"cpu": "xla"})
    with pytest.raises(TypeError, match="not callable"):
        tp.load(io.BytesIO(data), map_location=5)


def test_mmap(tmp_path):
    path = tmp_path / "m.pt"
    for save in (tp.save, torch.save):
        save({"w": torch.arange(6.0).reshape(2, 3) if save is torch.save else
              tp.arange(6.0).reshape(2, 3)}, path)
        before = path.read_bytes()
        loaded = tp.load(path, mmap=True)
        assert loaded["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
        loaded["w"][0, 0] = 9.0  # copy-on-write: the file keeps its bytes
        assert loaded["w"][0, 0].item() == 9.0 and path.read_bytes() == before
    with pytest.raises(ValueError, match="file path"):
        tp.load(io.BytesIO(before), mmap=True)


def test_big_endian_checkpoint():
    obj = {"f": tp.tensor([1.5, -2.0]), "i": tp.tensor([1, 258], dtype=tp.int16),
           "b": tp.tensor([True, False])}
    sizes = {"0": 4, "1": 2, "2": 1}

    def to_big(name, data):
        if name == "byteorder":
            return b"big"
        if name.startswith("data/"):
            return np.frombuffer(data, f"u{sizes[name[5:]]}").byteswap().tobytes()
        return data

    big = _rewrite(_saved(tp.save, obj), to_big)
    for load in (tp.load, torch.load):
        loaded = load(io.BytesIO(big))
        assert loaded["f"].tolist() == [1.5, -2.0] and loaded["i"].tolist() == [1, 258]
        assert loaded["b"].tolist() == [True, False]


def test_legacy_format():
    obj = _sample(torch)
    data = _saved(torch.save, obj, _use_new_zipfile_serialization=False)
    assert not data.startswith(b"PK")
    loaded = tp.load(io.BytesIO(data))
    assert _describe(loaded) == _describe(obj)
    loaded["base"][0, 1] = 7.0
    assert loaded["transposed"][1, 0].item() == 7.0
    with pytest.raises(ValueError, match="file path"):
        tp.load(io.BytesIO(data), mmap=True)
    with pytest.raises(RuntimeError, match="storage key|does not match|inside a storage"):
        tp.load(io.BytesIO(data[:-3]))


def test_plain_pickle_matches_torch():
    """pickle.dumps / loads (and copy.copy) of tensors, Parameters, views, dtypes, Size and
    devices: what torch gives back (each tensor by value with its whole storage, so views come
    back apart; a non-leaf as a leaf), also of a module and an optimizer holding them."""
    ours, ref = (pickle.loads(pickle.dumps(_sample(lib))) for lib in (tp, torch))
    assert _describe(ours) == _describe(ref)
    assert type(ours["param"]) is tp.nn.Parameter and type(ours["frozen"]) is tp.nn.Parameter
    ours["base"][1, 0] = 100.0
    assert ours["row"][0].item() == 6.0  # no longer a view of base
    for lib in (tp, torch):
        y = pickle.loads(pickle.dumps(lib.ones(2, requires_grad=True) * 2))
        assert y.is_leaf and y.requires_grad and y.grad_fn is None
        c = copy.copy(lib.arange(6.0).reshape(2, 3).t())
        assert c.stride() == (1, 3) and c.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    for lib in (tp, torch):
        assert pickle.loads(pickle.dumps(lib.device("cuda", 1))) == lib.device("cuda:1")
        assert pickle.loads(pickle.dumps(lib.channels_last)) is lib.channels_last
    model = pickle.loads(pickle.dumps(tp.nn.Sequential(tp.nn.Linear(3, 2), tp.nn.LayerNorm(2))))
    assert type(model[0].weight) is tp.nn.Parameter and model[1].bias.tolist() == [0.0, 0.0]



def test_bit_flipped_files_never_crash():
    # hostile and damaged files (issue 33): random byte corruptions of a checkpoint and of a
    # safetensors file load or raise an exception; none may crash the process or hang
    import random
    from tensorplay.safetensors import load as st_load, save as st_save
    buf = io.BytesIO()
    tp.save({'w': tp.randn(4, 3), 'b': tp.arange(5), 'n': {'x': tp.ones(2, dtype=tp.float16)}}, buf)
    rng = random.Random(0)
    for data, load in ((buf.getvalue(), lambda b: tp.load(io.BytesIO(b))),
                       (st_save({'w': tp.randn(4, 3), 'i': tp.arange(6)}), st_load)):
        raised = 0
        for _ in range(300):
            b = bytearray(data)
            for _ in range(rng.choice([1, 2, 8])):
                b[rng.randrange(len(b))] = rng.randrange(256)
            try:
                load(bytes(b))
            except Exception:
                raised += 1
        assert raised > 0  # the corruptions were seen
