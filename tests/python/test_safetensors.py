"""tensorplay.safetensors against the safetensors package (torch API): byte-identical files,
interchange in both directions for every dtype, refusal of shared / non-contiguous tensors,
and header validation (corrupt files raise SafetensorError, never crash)."""
import json
import struct

import pytest
import safetensors
import safetensors.torch as st
import torch

import tensorplay as tp
import tensorplay.safetensors as ts

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")


def _tensors(lib):
    out = {}
    for i, name in enumerate(DTYPES):
        values = [bool(v % 2) if name == "bool" else (v * 3) % 100 - (0 if name == "uint8" else 40)
                  for v in range(i, i + 6)]
        out[f"t_{name}"] = lib.tensor(values, dtype=getattr(lib, name)).reshape(2, 3)
    out["scalar"] = lib.tensor(2.5)
    out["empty"] = lib.zeros(0, 4, dtype=lib.float16)
    out["zé"] = lib.ones(3, dtype=lib.bfloat16)  # non-ASCII name
    return out


def _same(ours, theirs):
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        a, b = ours[name], theirs[name]
        assert str(a.dtype).rsplit(".")[-1] == str(b.dtype).rsplit(".")[-1], name
        assert list(a.shape) == list(b.shape) and a.tolist() == b.tolist(), name


@pytest.mark.parametrize("metadata", [None, {}, {"note": "é"}])
def test_bytes_identical_to_the_package(metadata):
    ours = ts.save(_tensors(tp), metadata=metadata)
    assert ours == st.save(_tensors(torch), metadata=metadata)
    assert struct.unpack("<Q", ours[:8])[0] % 8 == 0


def test_metadata_order_is_free():
    # the package keeps __metadata__ in a hash map, so only the parsed headers can agree
    meta = {"format": "pt", "b": "1", "a": "2"}
    ours, theirs = ts.save(_tensors(tp), metadata=meta), st.save(_tensors(torch), metadata=meta)
    n = struct.unpack("<Q", ours[:8])[0]
    assert json.loads(ours[8:8 + n]) == json.loads(theirs[8:8 + n])
    assert ours[8 + n:] == theirs[8 + n:]


def test_ours_load_in_the_package(tmp_path):
    path = tmp_path / "ours.safetensors"
    ts.save_file(_tensors(tp), path, metadata={"k": "v"})
    _same(_tensors(tp), st.load_file(path))
    with safetensors.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"k": "v"}
    _same(_tensors(tp), st.load(ts.save(_tensors(tp))))


def test_package_files_load_in_ours(tmp_path):
    path = tmp_path / "theirs.safetensors"
    st.save_file(_tensors(torch), path, metadata={"format": "pt"})
    loaded = ts.load_file(path)
    assert list(loaded) == sorted(loaded)
    _same(loaded, _tensors(torch))
    with ts.safe_open(path, framework="pt") as f:
        assert f.keys() == sorted(_tensors(torch)) and f.metadata() == {"format": "pt"}
        assert f.get_tensor("t_bfloat16").dtype is tp.bfloat16
        with pytest.raises(ts.SafetensorError, match="does not contain tensor nope"):
            f.get_tensor("nope")
    from_bytes = ts.load(st.save(_tensors(torch)))
    _same(from_bytes, _tensors(torch))
    assert list(from_bytes) == sorted(from_bytes)


def test_loaded_tensors_own_their_memory(tmp_path):
    path = tmp_path / "x.safetensors"
    ts.save_file({"a": tp.zeros(3), "b": tp.zeros(3)}, path)
    loaded = ts.load_file(path)
    loaded["a"][0] = 5.0
    assert loaded["b"].tolist() == [0, 0, 0] and ts.load_file(path)["a"].tolist() == [0, 0, 0]


def test_save_refusals_match_the_package():
    for lib, save in ((tp, ts.save), (torch, st.save)):
        a = lib.arange(6.0)
        with pytest.raises(RuntimeError, match="Some tensors share memory"):
            save({"x": a, "y": a[:2]})
        with pytest.raises(RuntimeError, match="share memory"):
            save({"x": a, "y": a})
        with pytest.raises(ValueError, match="non contiguous tensor: `x`"):
            save({"x": a.reshape(2, 3).t()})
        with pytest.raises(ValueError, match="Expected a dict"):
            save([a])
        with pytest.raises(ValueError, match="Key `x` is invalid"):
            save({"x": 1})
        with pytest.raises(TypeError):
            save({1: a})
        with pytest.raises(TypeError):
            save({"x": a}, metadata={"k": 1})
        # disjoint slices of one storage are accepted, as by the package
        assert len(save({"x": a[:3], "y": a[3:]})) == len(st.save({"x": torch.zeros(3),
                                                                   "y": torch.zeros(3)}))


def _file(header, data=b""):
    text = json.dumps(header).encode() if isinstance(header, dict) else header
    return struct.pack("<Q", len(text)) + text + data


F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("data, match", [
    (b"", "header too small"),
    (struct.pack("<Q", 200_000_000) + b"{}", "header too large"),
    (struct.pack("<Q", 10) + b"{}", "invalid header length"),
    (_file(b'{"x": '), "invalid JSON"),
    (_file(b"[]"), "not a JSON object"),
    (_file(b'{"a": "\xff"}'), "invalid JSON"),
    (_file({"x": F32x2}, b"\0" * 4), "incomplete metadata"),
    (_file({"x": F32x2}, b"\0" * 12), "incomplete metadata"),
    (_file({"x": {**F32x2, "data_offsets": [0, 4]}}, b"\0" * 8), "invalid shape, data type"),
    (_file({"x": {**F32x2, "shape": [2 ** 62, 4]}}, b"\0" * 8), "invalid shape, data type"),
    (_file({"x": F32x2, "y": {**F32x2, "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
     "invalid offset"),
    (_file({"x": {**F32x2, "data_offsets": [8, 0]}}, b"\0" * 8), "invalid shape"),
    (_file({"x": {**F32x2, "dtype": "Q32"}}, b"\0" * 8), "dtype"),
    (_file({"x": {**F32x2, "dtype": "C64", "shape": [1]}}, b"\0" * 8), "which TensorPlay"),
    (_file({"x": {**F32x2, "shape": [-2]}}, b"\0" * 8), "invalid shape"),
    (_file({"x": {"dtype": "F32", "shape": [2]}}, b"\0" * 8), "needs dtype, shape"),
    (_file({"x": F32x2, "__metadata__": {"a": 1}}, b"\0" * 8), "__metadata__"),
])
def test_corrupt_headers_raise(data, match, tmp_path):
    with pytest.raises(ts.SafetensorError, match=match):
        ts.load(data)
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(ts.SafetensorError, match=match):
        ts.load_file(path)
    if match != "which TensorPlay":  # the package refuses the same files
        with pytest.raises(Exception):
            st.load(data)


def test_open_arguments(tmp_path):
    path = tmp_path / "x.safetensors"
    ts.save_file({"a": tp.ones(2)}, path)
    with pytest.raises(ts.SafetensorError, match="framework foo is invalid"):
        ts.safe_open(path, framework="foo")
    with pytest.raises(RuntimeError, match="cuda"):
        ts.load_file(path, device="cuda")
    assert ts.load_file(path, device=tp.device("cpu"))["a"].tolist() == [1, 1]
    with pytest.raises(FileNotFoundError):
        ts.load_file(tmp_path / "missing.safetensors")
