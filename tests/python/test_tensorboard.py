"""tp.utils.tensorboard.SummaryWriter: the event files it writes, read back with our own
reader (always) and TensorBoard's EventAccumulator (when the tensorboard package is
installed), and compared with what PyTorch's SummaryWriter writes for the same calls."""
import importlib.util
import os
import struct
import zlib

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.utils.tensorboard import SummaryWriter, read_events
from tensorplay.utils.tensorboard._reader import parse_graph_def
from tensorplay.utils.tensorboard._record import encode_record, masked_crc32c, read_records

HAS_TB = importlib.util.find_spec("tensorboard") is not None
needs_tb = pytest.mark.skipif(not HAS_TB, reason="the tensorboard package is not installed")

HIST = np.linspace(-2.0, 3.0, 101)
IMG = (np.arange(3 * 4 * 5).reshape(3, 4, 5) / 59.0).astype(np.float32)


def _write_all(writer_cls, tensor, logdir):
    w = writer_cls(str(logdir))
    for step in range(3):
        w.add_scalar("loss/train", 1.0 / (step + 1), step)
    w.add_scalar("acc", tensor(0.75), 3)
    w.add_scalars("run", {"a": 1.0, "b": 2.0}, 1)
    w.add_histogram("hist", tensor(HIST), 2)
    w.add_histogram("hist5", HIST, 2, bins=5)
    w.add_image("img", tensor(IMG), 4)
    w.add_images("imgs", tensor(np.stack([IMG[:1]] * 3)), 5)
    w.add_text("note", "hello **world**", 6)
    w.add_hparams({"lr": 0.1, "bs": 32, "opt": "sgd", "flag": True}, {"hparam/acc": 0.9},
                  run_name="hp", hparam_domain_discrete={"opt": ["sgd", "adam"]})
    w.close()


def _summaries(logdir):
    out = {}
    for e in read_events(logdir):
        for v in e.get("summary", []):
            out.setdefault(v["tag"], []).append((e["step"], v))
    return out


def _png_pixels(png):
    """Decodes the PNGs written here (8-bit, no interlace, filter 0 rows)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    i, idat, hdr = 8, b"", None
    while i < len(png):
        (n,) = struct.unpack(">I", png[i:i + 4])
        kind, data = png[i + 4:i + 8], png[i + 8:i + 8 + n]
        assert struct.unpack(">I", png[i + 8 + n:i + 12 + n])[0] == zlib.crc32(kind + data)
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat += data
        i += 12 + n
    w, h, depth, color = hdr[:4]
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * channels)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, channels)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("tb")
    _write_all(SummaryWriter, tp.tensor, d / "tp")
    torch = pytest.importorskip("torch")
    if HAS_TB:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
        _write_all(TorchWriter, torch.tensor, d / "torch")
    return d


def test_records_and_file_layout(written):
    files = os.listdir(written / "tp")
    events = [f for f in files if f.startswith("events.out.tfevents.")]
    assert len(events) == 1
    assert sorted(set(files) - set(events)) == ["hp", "run_a", "run_b"]
    first = read_events(written / "tp" / events[0])[0]
    assert first["file_version"] == "brain.Event:2" and first["step"] == 0
    # the framing itself: length, masked CRC of it, data, masked CRC of data
    rec = encode_record(b"abc")
    assert rec[:8] == struct.pack("<Q", 3) and rec[12:15] == b"abc"
    assert struct.unpack("<I", rec[15:])[0] == masked_crc32c(b"abc")
    assert masked_crc32c(b"") == 0xA282EAD8 and masked_crc32c(b"123456789") != 0
    bad = tmp = written / "bad"
    tmp.write_bytes(rec[:-1] + bytes([rec[-1] ^ 1]))
    with pytest.raises(ValueError, match="checksum"):
        read_records(bad)


def test_values_read_back(written):
    s = _summaries(written / "tp")
    assert [(st, v["simple_value"]) for st, v in s["loss/train"]] == \
        [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    assert s["acc"][0][0] == 3 and s["acc"][0][1]["simple_value"] == 0.75
    assert _summaries(written / "tp" / "run_b")["run"][0][1]["simple_value"] == 2.0
    h = s["hist"][0][1]["histo"]
    assert h["num"] == 101 and h["min"] == -2.0 and h["max"] == 3.0
    assert h["sum"] == pytest.approx(HIST.sum()) and sum(h["bucket"]) == 101
    img = s["img"][0][1]["image"]
    assert (img["height"], img["width"], img["colorspace"]) == (4, 5, 3)
    px = _png_pixels(img["encoded_image_string"])
    np.testing.assert_array_equal(px, (IMG.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8))
    assert s["imgs"][0][1]["image"]["width"] == 15        # three tiles in a row
    text = s["note/text_summary"][0][1]
    assert text["tensor"]["string_val"] == [b"hello **world**"]
    assert text["metadata"]["plugin_name"] == "text"


@needs_tb
def test_same_content_as_pytorch_writer(written):
    ours, theirs = _summaries(written / "tp"), _summaries(written / "torch")
    assert set(ours) == set(theirs)
    for tag in ours:
        for (s1, a), (s2, b) in zip(ours[tag], theirs[tag]):
            assert s1 == s2
            if "image" in a:        # PNG bytes depend on the encoder; sizes do not
                a, b = dict(a), dict(b)
                pa = _png_pixels(a.pop("image")["encoded_image_string"])
                assert pa.shape[:2] == (b.pop("image")["height"], 0 + pa.shape[1])
            if "histo" in a:
                for k in a["histo"]:
                    np.testing.assert_allclose(a["histo"][k], b["histo"][k])
                continue
            assert a == b, tag
    hp_ours, hp_theirs = read_events(written / "tp" / "hp"), read_events(written / "torch" / "hp")
    from tensorplay.utils.tensorboard import _proto as pb

    def start_entries(events):
        v = events[2]["summary"][0]
        assert v["tag"] == "_hparams_/session_start_info"
        return sorted(pb.parse(pb.parse(v["metadata"]["content"])[3][0])[1])
    assert start_entries(hp_ours) == start_entries(hp_theirs)
    for i in (1, 3, 4):       # experiment, session end, metric: byte for byte
        assert hp_ours[i]["summary"] == hp_theirs[i]["summary"]


@needs_tb
def test_tensorboard_event_accumulator_reads_them(written):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(written / "tp"), size_guidance={"images": 0, "histograms": 0})
    acc.Reload()
    tags = acc.Tags()
    assert {"loss/train", "acc"} <= set(tags["scalars"])
    assert {"hist", "hist5"} <= set(tags["histograms"]) and {"img", "imgs"} <= set(tags["images"])
    assert [(e.step, round(e.value, 4)) for e in acc.Scalars("loss/train")] == \
        [(0, 1.0), (1, 0.5), (2, 0.3333)]
    assert acc.Histograms("hist")[0].histogram_value.num == 101
    assert acc.Images("img")[0].width == 5


class _Net(tp.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = tp.nn.Linear(4, 8)
        self.block = tp.nn.Sequential(tp.nn.ReLU(), tp.nn.Linear(8, 2))

    def forward(self, x):
        return self.block(self.fc1(x) + 1).sum(dim=1)


def _graph(tmp_path, model, *inputs):
    w = SummaryWriter(str(tmp_path))
    w.add_graph(model, *inputs)
    w.close()
    raw = [e["graph_def"] for e in read_events(tmp_path) if "graph_def" in e]
    assert len(raw) == 1
    return raw[0], parse_graph_def(raw[0])


def test_add_graph_of_module_and_graph_module(tmp_path):
    raw, nodes = _graph(tmp_path / "m", _Net(), tp.randn(3, 4))
    by = {n["name"]: n for n in nodes}
    assert by["input/x"]["op"] == "IO Node"
    assert by["_Net/fc1"]["op"] == "Linear" and by["_Net/fc1"]["input"] == ["input/x"]
    assert by["_Net/block/1"]["op"] == "Linear" and by["_Net/block/0"]["op"] == "ReLU"
    assert by["_Net/add"]["op"] == "operator.add"
    assert by["output/output"]["input"][0].startswith("_Net/sum")
    assert "_output_shapes" in by["_Net/block/1"]["attr"]
    gm = tp.fx.symbolic_trace(_Net())
    _, nodes2 = _graph(tmp_path / "gm", gm)
    assert [n["op"] for n in nodes2] == [n["op"] for n in nodes]
    if HAS_TB:
        from tensorboard.compat.proto import graph_pb2
        g = graph_pb2.GraphDef.FromString(raw)
        shapes = g.node[[n.name for n in g.node].index("_Net/block/1")].attr["_output_shapes"]
        assert [d.size for d in shapes.list.shape[0].dim] == [3, 2]


def test_purge_step_default_logdir_suffix_and_queue(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_x", purge_step=7, filename_suffix=".tp", max_queue=100,
                      flush_secs=1000)
    logdir = w.get_logdir()
    assert logdir.startswith("runs" + os.sep) and logdir.endswith("_x")
    path = os.path.join(logdir, os.listdir(logdir)[0])
    assert path.endswith(".tp")
    size = os.path.getsize(path)
    w.add_scalar("a", 1.0, 8)
    assert os.path.getsize(path) == size            # queued, not written yet
    w.flush()
    events = read_events(path)
    assert events[1]["step"] == 7 and events[2]["session_log"] == 1    # SessionLog START
    assert events[-1]["summary"][0]["tag"] == "a"
    w.close()
    w.add_scalar("b", 2.0, 9)                        # a closed writer opens a new file
    w.close()
    assert len(os.listdir(logdir)) == 2


def test_errors_as_pytorch(tmp_path):
    w = SummaryWriter(str(tmp_path))
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        w.add_scalar("x", tp.ones(2))
    with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
        w.add_hparams([], {})
    with pytest.raises(ValueError, match="value should be one of int, float, str, bool"):
        w.add_hparams({"a": [1]}, {})
    with pytest.raises(ValueError, match="The input has no element."):
        w.add_histogram("h", np.array([]))
    w.close()
