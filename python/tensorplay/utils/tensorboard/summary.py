"""Summary protocol buffers (as bytes) for the SummaryWriter's ``add_*`` methods, with the
layouts TensorBoard's plugins read (scalars, histograms, images, text, hparams)."""
import struct
import zlib

import numpy as np

from tensorplay.utils.tensorboard import _proto as pb

# TensorFlow DataType numbers
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64, DT_BOOL = 1, 2, 3, 7, 9, 10

_HPARAMS_PLUGIN = "hparams"
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"


def make_np(x):
    """A NumPy array of a tensor (tensorplay's or anything with .numpy()), array or number."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (int, float, bool, np.number)):
        return np.array([x])
    if hasattr(x, "detach"):
        x = x.detach()
        if hasattr(x, "cpu"):
            x = x.cpu()
        return np.asarray(x.numpy() if hasattr(x, "numpy") else x.tolist())
    return np.asarray(x)


def _summary(*values):
    return b"".join(pb.blob(1, v) for v in values)


def _value(tag, metadata=None, simple_value=None, image=None, histo=None, tensor=None):
    return (pb.blob(1, tag) + pb.float32(2, simple_value) + pb.blob(4, image)
            + pb.blob(5, histo) + pb.blob(8, tensor) + pb.blob(9, metadata))


def _metadata(plugin_name, content=b""):
    return pb.blob(1, pb.blob(1, plugin_name) + pb.blob(2, content))


def _shape(dims):
    return b"".join(pb.blob(2, pb.uint(1, d)) for d in dims)


def _tensor(dtype, shape, string_val=None, float_val=None, double_val=None):
    out = pb.uint(1, dtype) + pb.blob(2, _shape(shape))
    if float_val is not None:
        out += pb.packed_floats(5, float_val)
    if double_val is not None:
        out += pb.packed_doubles(6, double_val)
    for s in string_val or ():
        out += pb.blob(8, s)
    return out


def scalar(name, tensor, new_style=False, double_precision=False):
    arr = make_np(tensor).squeeze()
    if arr.ndim != 0:
        raise AssertionError("Tensor should contain one element (0 dimensions). Was given "
                             f"size: {arr.size} and {arr.ndim} dimensions.")
    value = float(arr)
    if new_style:
        t = (_tensor(DT_DOUBLE, [], double_val=[value]) if double_precision
             else _tensor(DT_FLOAT, [], float_val=[value]))
        return _summary(_value(name, tensor=t, metadata=_metadata("scalars")))
    return _summary(_value(name, simple_value=value))


def default_bins():
    """TensorFlow's histogram bucket edges: +-1e-12 growing by 10% to 1e20, and 0."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0] + pos


def histogram_proto(values, bins, max_bins=None):
    """HistogramProto bytes of ``values`` (NumPy) cut at ``bins`` (np.histogram's argument),
    without the empty buckets at either end (as TensorFlow's histogram.cc)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins
        rem = len(counts) % sub
        if rem != 0:
            counts = np.pad(counts, (0, sub - rem))
        counts = counts.reshape(-1, sub).sum(axis=-1)
        new_limits = np.empty(counts.size + 1, limits.dtype)
        new_limits[:-1] = limits[:-1:sub]
        new_limits[-1] = limits[-1]
        limits = new_limits
    nonzero = np.cumsum(counts > 0)
    start, end = np.searchsorted(nonzero, [0, nonzero[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return histogram_raw_proto(values.min(), values.max(), len(values), values.sum(),
                               values.dot(values), limits.tolist(), counts.tolist())


def histogram_raw_proto(min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    return (pb.double(1, float(min)) + pb.double(2, float(max)) + pb.double(3, float(num))
            + pb.double(4, float(sum)) + pb.double(5, float(sum_squares))
            + pb.packed_doubles(6, [float(x) for x in bucket_limits])
            + pb.packed_doubles(7, [float(x) for x in bucket_counts]))


def histogram(name, values, bins, max_bins=None):
    values = make_np(values).astype(float)
    return _summary(_value(name, histo=histogram_proto(values, bins, max_bins)))


# ----------------------------------------------------------------------------- images

def encode_png(hwc):
    """PNG bytes of a uint8 array of shape (H, W, C), C in 1 (gray), 2, 3 (RGB) or 4 (RGBA)."""
    h, w, c = hwc.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = np.concatenate([np.zeros((h, 1), np.uint8), hwc.reshape(h, w * c)], axis=1)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def make_grid(imgs, ncols=8):
    """(N, 3, H, W) images side by side, ``ncols`` a row, as one (3, H', W') picture."""
    if imgs.shape[1] == 1:
        imgs = np.concatenate([imgs, imgs, imgs], 1)
    if imgs.ndim != 4 or imgs.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = imgs.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=imgs.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = imgs[i]
    return canvas


def convert_to_HWC(arr, input_format):
    if len(set(input_format)) != len(input_format):
        raise AssertionError("You can not use the same dimension shorthand twice. "
                             f"input_format: {input_format}")
    if arr.ndim != len(input_format):
        raise AssertionError("size of input tensor and input format are different. "
                             f"tensor shape: {arr.shape}, input_format: {input_format}")
    fmt = input_format.upper()
    if len(fmt) == 4:
        return make_grid(arr.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    hw = arr.transpose([fmt.find(c) for c in "HW"])
    return np.stack([hw, hw, hw], 2)


def image(tag, tensor, dataformats="NCHW"):
    arr = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if arr.dtype == np.uint8 else 255
    arr = (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    h, w, c = arr.shape
    img = pb.uint(1, h) + pb.uint(2, w) + pb.uint(3, c) + pb.blob(4, encode_png(arr))
    return _summary(_value(tag, image=img))


# ------------------------------------------------------------------------ text, hparams

def text(tag, text_string):
    t = _tensor(DT_STRING, [1], string_val=[text_string.encode("utf-8")])
    return _summary(_value(tag + "/text_summary", tensor=t, metadata=_metadata("text")))


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The experiment, session-start and session-end summaries of the hparams plugin."""
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or \
                not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")
    infos, start = [], b""
    for k, v in hparam_dict.items():
        if v is None:
            continue
        # (a bool is an int here, so it is logged as a number, as PyTorch's writer does)
        if isinstance(v, (int, float)):
            kind, val = 3, pb.double(2, float(v))
        elif isinstance(v, str):
            kind, val = 1, pb.blob(3, v)
        elif hasattr(v, "detach"):
            kind, val = 3, pb.double(2, float(make_np(v).reshape(-1)[0]))
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        start += pb.blob(1, pb.blob(1, k) + pb.blob(2, val))     # map<string, Value> entry
        info = pb.blob(1, k) + pb.uint(4, kind)
        if k in domains and not hasattr(v, "detach"):
            values = b"".join(pb.blob(1, pb.double(2, float(d)) if kind == 3 else pb.blob(3, d))
                              for d in domains[k])
            info += pb.blob(5, values)
        infos.append(info)
    metrics = [pb.blob(1, pb.blob(2, k)) for k in metric_dict]   # MetricInfo{name{tag}}

    def plugin(field, message):
        content = pb.blob(field, message)   # HParamsPluginData (version 0: not written)
        return _metadata(_HPARAMS_PLUGIN, content)
    experiment = b"".join(pb.blob(4, i) for i in infos) + b"".join(pb.blob(5, m) for m in metrics)
    exp = _summary(_value(EXPERIMENT_TAG, metadata=plugin(2, experiment)))
    ssi = _summary(_value(SESSION_START_INFO_TAG, metadata=plugin(3, start)))
    sei = _summary(_value(SESSION_END_INFO_TAG, metadata=plugin(4, pb.uint(1, 1))))
    return exp, ssi, sei
