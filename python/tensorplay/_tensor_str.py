"""Text rendering of tensors, matching PyTorch's ``repr(t)`` / ``str(t)``.

The renderer only relies on a small tensor interface (``shape``, ``dim()``,
``numel()``, ``dtype``, ``device``, ``requires_grad``, ``grad_fn`` and
``tolist()``), so it works on any object that provides it.  All element
formatting is done on the plain Python numbers returned by ``tolist()``.
"""

import contextlib
import math

__all__ = ["tensor_repr", "set_printoptions", "get_printoptions", "printoptions"]

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

# Dtypes that never get a ``dtype=`` suffix on non-empty tensors (the default
# floating dtype is added at render time).
_IMPLICIT_DTYPES = ("int64", "bool")
_DEFAULT_COMPLEX = {"float32": "complex64", "float64": "complex128"}


class _PrintOptions:
    """Current global print options (module-level singleton ``_OPTS``)."""

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None


_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None,
                     linewidth=None, profile=None, sci_mode=None):
    """Set options for printing tensors (same arguments as PyTorch).

    Args:
        precision: digits after the decimal point for floats (default 4).
        threshold: total element count above which output is summarised
            with ``...`` (default 1000).
        edgeitems: items kept at the start and end of each summarised
            dimension (default 3).
        linewidth: characters per line used for wrapping (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; sets the four
            options above, which explicit arguments then override.  Any other
            value is ignored, as in PyTorch.
        sci_mode: ``True``/``False`` forces scientific notation on/off;
            ``None`` picks automatically.  Like PyTorch, every call resets it
            to the value passed (so omitting it restores automatic mode).
    """
    if profile in _PROFILES:
        for name, value in _PROFILES[profile].items():
            setattr(_OPTS, name, value)
    if precision is not None:
        _OPTS.precision = precision
    if threshold is not None:
        _OPTS.threshold = threshold
    if edgeitems is not None:
        _OPTS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTS.linewidth = linewidth
    _OPTS.sci_mode = sci_mode


def get_printoptions():
    """Return the current print options as a dict (a copy)."""
    return dict(vars(_OPTS))


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager that applies ``set_printoptions(**kwargs)`` temporarily."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


# ---------------------------------------------------------------------------
# Element formatting
# ---------------------------------------------------------------------------

class _ElementFormatter:
    """Chooses a common width and style (int / fixed / scientific) for a set of
    element values and formats single elements accordingly."""

    def __init__(self, values, is_float):
        self.is_float = is_float
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not is_float:
            for v in values:
                self.width = max(self.width, len(str(v)))
            return
        self._scan_floats(values)

    def _scan_floats(self, values):
        # Only finite non-zero values decide the style; nan/inf/0 are ignored.
        finite = [v for v in values if v != 0 and math.isfinite(v)]
        if not finite:
            return  # only zeros/nan/inf: integer style, even if sci_mode is forced
        magnitudes = [abs(v) for v in finite]
        lo, hi = min(magnitudes), max(magnitudes)
        wide_range = hi / lo > 1000.0 or hi > 1.0e8
        self.int_mode = all(v == math.ceil(v) for v in finite)
        self.sci_mode = wide_range or (not self.int_mode and lo < 1.0e-4)
        if _OPTS.sci_mode is not None:  # a user-forced mode wins
            self.sci_mode = _OPTS.sci_mode
        for v in finite:
            self.width = max(self.width, len(self._style(v)))

    def _style(self, value):
        """Unpadded text of a float element in the chosen style."""
        if self.sci_mode:
            return f"{value:.{_OPTS.precision}e}"
        if self.int_mode:
            text = f"{value:.0f}"
            return text + "." if math.isfinite(value) else text
        return f"{value:.{_OPTS.precision}f}"

    def format(self, value):
        """Format one element, right-aligned to the common width."""
        text = self._style(value) if self.is_float else str(value)
        return text.rjust(self.width)


class _ComplexFormatter:
    """Complex elements: the real parts and the imaginary parts each get their own common
    width and style; an element is the padded real part, the sign and the imaginary part
    with its padding dropped, then ``j`` (``  1.5000+2.0000e+00j``)."""

    def __init__(self, values):
        self.real = _ElementFormatter([v.real for v in values], True)
        self.imag = _ElementFormatter([v.imag for v in values], True)
        self.width = self.real.width + self.imag.width + 1  # the line-wrapping width

    def format(self, value):
        imag = (self.imag.format(value.imag) + "j").lstrip()
        sign = "" if imag[0] in "+-" else "+"
        return self.real.format(value.real) + sign + imag


# ---------------------------------------------------------------------------
# Nested-list helpers
# ---------------------------------------------------------------------------

def _flatten(data, ndim, out):
    """Append every scalar of a nested list with ``ndim`` levels to ``out``."""
    if ndim == 0:
        out.append(data)
    else:
        for item in data:
            _flatten(item, ndim - 1, out)
    return out


def _visible_values(data, ndim, edge):
    """Flat list of the values that remain visible after summarisation."""
    if ndim == 0:
        return [data]
    if ndim == 1:
        # Note: with edge == 0, data[-0:] is the whole row (PyTorch does the same).
        return list(data[:edge]) + list(data[-edge:]) if len(data) > 2 * edge else list(data)
    if edge == 0:
        return []
    rows = data[:edge] + data[-edge:] if len(data) > 2 * edge else data
    out = []
    for row in rows:
        out.extend(_visible_values(row, ndim - 1, edge))
    return out


def _render_row(row, indent, summarize, fmt):
    """Render a 1-d list, wrapping to the line width."""
    edge = _OPTS.edgeitems
    per_line = max(1, int(math.floor((_OPTS.linewidth - indent) / (fmt.width + 2))))
    if summarize and not edge:
        cells = ["..."]
    elif summarize and len(row) > 2 * edge:
        cells = ([fmt.format(v) for v in row[:edge]] + [" ..."]
                 + [fmt.format(v) for v in row[-edge:]])
    else:
        cells = [fmt.format(v) for v in row]
    lines = [", ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _render(data, ndim, indent, summarize, fmt):
    """Render a nested list with ``ndim`` levels starting at column ``indent``."""
    if ndim == 0:
        return fmt.format(data)
    if ndim == 1:
        return _render_row(data, indent, summarize, fmt)
    edge = _OPTS.edgeitems
    if summarize and len(data) > 2 * edge:
        head = [_render(d, ndim - 1, indent + 1, summarize, fmt) for d in data[:edge]]
        tail = [_render(d, ndim - 1, indent + 1, summarize, fmt) for d in data[len(data) - edge:]]
        parts = head + ["..."] + tail
    else:
        parts = [_render(d, ndim - 1, indent + 1, summarize, fmt) for d in data]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _append_suffixes(text, suffixes, indent):
    """Append ``, key=value`` suffixes, moving one to a new line if it would
    overflow the line width, then close the parenthesis."""
    # Length of the last line plus 2 (this mirrors PyTorch's bookkeeping).
    line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_len + len(suffix) + 2 > _OPTS.linewidth:
            text += ",\n" + " " * indent + suffix
            line_len = indent + len(suffix)
        else:
            text += ", " + suffix
            line_len += len(suffix) + 2
    return text + ")"


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------

def _dtype_name(dtype):
    return str(dtype).split(".")[-1]


def _body(t, indent):
    """The bracketed element text of a non-empty tensor."""
    ndim = t.dim()
    data = t.tolist()
    summarize = t.numel() > _OPTS.threshold
    shown = _visible_values(data, ndim, _OPTS.edgeitems) if summarize else _flatten(data, ndim, [])
    if getattr(t.dtype, 'is_complex', False):
        fmt = _ComplexFormatter(shown)
    else:
        fmt = _ElementFormatter(shown, bool(t.dtype.is_floating_point))
    return _render(data, ndim, indent, summarize, fmt)


def tensor_repr(t, default_dtype_name="float32"):
    """Return the PyTorch-style text for tensor ``t`` (used for repr and str).

    ``default_dtype_name`` is the name of the current default floating dtype
    (e.g. ``"float32"``); tensors of that dtype, ``int64`` and ``bool`` get no
    ``dtype=`` suffix unless they are empty.
    """
    prefix = "tensor("
    indent = len(prefix)
    name = _dtype_name(t.dtype)
    # the default complex type goes with the default floating type
    defaults = (default_dtype_name, _DEFAULT_COMPLEX.get(default_dtype_name))
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.device.type == "meta":  # no values to show: PyTorch's placeholder
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
        if name not in defaults:
            suffixes.append(f"dtype={t.dtype}")
    elif t.numel() == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if name not in defaults:
            suffixes.append(f"dtype={t.dtype}")
    else:
        if not _OPTS.edgeitems:
            suffixes.append(f"size={tuple(t.shape)}")
        if name not in defaults and name not in _IMPLICIT_DTYPES:
            suffixes.append(f"dtype={t.dtype}")
        body = _body(t, indent)
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn.name().rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    from tensorplay.autograd import forward_ad
    if forward_ad._current_level >= 0:
        tangent = forward_ad.unpack_dual(t).tangent
        if tangent is not None:
            suffixes.append(f"tangent={tangent}")
    return _append_suffixes(prefix + body, suffixes, indent)
