"""Reads TensorBoard event files back into plain Python (the checks of the tests, and a way
to look at what a SummaryWriter wrote without TensorBoard)."""
import os

from tensorplay.utils.tensorboard import _proto as pb
from tensorplay.utils.tensorboard._record import read_records


def _first(fields, n, default=None):
    return fields.get(n, [default])[-1]


def _histo(raw):
    f = pb.parse(raw)
    out = {k: pb.as_double(_first(f, n, b"\0" * 8))
           for k, n in (("min", 1), ("max", 2), ("num", 3), ("sum", 4), ("sum_squares", 5))}
    out["bucket_limit"] = [x for r in f.get(6, []) for x in pb.unpack_doubles(r)]
    out["bucket"] = [x for r in f.get(7, []) for x in pb.unpack_doubles(r)]
    return out


def _tensor(raw):
    f = pb.parse(raw)
    shape = [pb.parse(d).get(1, [0])[0] for d in pb.parse(_first(f, 2, b"")).get(2, [])]
    out = {"dtype": _first(f, 1, 0), "shape": shape}
    if 8 in f:
        out["string_val"] = list(f[8])
    if 5 in f:
        out["float_val"] = [x for r in f[5] for x in pb.unpack_floats(r)]
    if 6 in f:
        out["double_val"] = [x for r in f[6] for x in pb.unpack_doubles(r)]
    if 4 in f:
        out["tensor_content"] = f[4][-1]
    return out


def _value(raw):
    f = pb.parse(raw)
    out = {"tag": _first(f, 1, b"").decode()}
    if 2 in f:
        out["simple_value"] = pb.as_float(f[2][-1])
    if 4 in f:
        img = pb.parse(f[4][-1])
        out["image"] = {"height": _first(img, 1, 0), "width": _first(img, 2, 0),
                        "colorspace": _first(img, 3, 0),
                        "encoded_image_string": _first(img, 4, b"")}
    if 5 in f:
        out["histo"] = _histo(f[5][-1])
    if 8 in f:
        out["tensor"] = _tensor(f[8][-1])
    if 9 in f:
        plugin = pb.parse(_first(pb.parse(f[9][-1]), 1, b""))
        out["metadata"] = {"plugin_name": _first(plugin, 1, b"").decode(),
                           "content": _first(plugin, 2, b"")}
    return out


def parse_event(raw):
    """One Event as a dict: wall_time, step, and the one of file_version, graph_def (bytes),
    summary (a list of value dicts) or session_log (its status) it holds."""
    f = pb.parse(raw)
    out = {"wall_time": pb.as_double(_first(f, 1, b"\0" * 8)),
           "step": pb.as_int64(_first(f, 2, 0))}
    if 3 in f:
        out["file_version"] = f[3][-1].decode()
    if 4 in f:
        out["graph_def"] = f[4][-1]
    if 5 in f:
        out["summary"] = [_value(v) for v in pb.parse(f[5][-1]).get(1, [])]
    if 7 in f:
        out["session_log"] = _first(pb.parse(f[7][-1]), 1, 0)
    return out


def read_events(path):
    """Every event of an event file, or of all event files in a directory (not its
    subdirectories), in order."""
    path = os.fspath(path)
    if os.path.isdir(path):
        files = sorted(os.path.join(path, n) for n in os.listdir(path)
                       if "tfevents" in n and os.path.isfile(os.path.join(path, n)))
    else:
        files = [path]
    return [parse_event(r) for p in files for r in read_records(p)]


def parse_graph_def(raw):
    """A GraphDef as a list of node dicts (name, op, input, attr keys)."""
    nodes = []
    for n in pb.parse(raw).get(1, []):
        f = pb.parse(n)
        attrs = {}
        for entry in f.get(5, []):
            e = pb.parse(entry)
            attrs[_first(e, 1, b"").decode()] = pb.parse(_first(e, 2, b""))
        nodes.append({"name": _first(f, 1, b"").decode(), "op": _first(f, 2, b"").decode(),
                      "input": [i.decode() for i in f.get(3, [])], "attr": attrs})
    return nodes
