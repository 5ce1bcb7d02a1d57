"""Statistics and numerical integration composed from existing ops: cov, corrcoef,
histogram, histogramdd, trapezoid / trapz, cumulative_trapezoid, cdist, vander."""
import builtins
import warnings

from tensorplay import _C, linalg
from tensorplay._shape_ops import _KERNEL_DTYPE_NAMES
from tensorplay import return_types

Tensor = _C.Tensor


def _require_tensor(fn, name, value, pos=1):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(value).__name__}")


def _dtype_name(dtype):
    return _KERNEL_DTYPE_NAMES[str(dtype).split('.')[-1]]


def _check_weights(kind, w, num_obs, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got "
                           f"{kind} with {w.dim()} dimensions")
    if w.numel() != num_obs:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {num_obs}")
    if integral and w.is_floating_point():
        raise RuntimeError(f"cov(): expected {kind} to have integral dtype but got {kind} "
                           f"with {_dtype_name(w.dtype)} dtype")
    if not integral and not w.is_floating_point():
        raise RuntimeError(f"cov(): expected {kind} to have floating point dtype but got "
                           f"{kind} with {_dtype_name(w.dtype)} dtype")
    if bool((w < 0).any()):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows of ``input`` (a 1-D input is one
    variable), observations in the columns; ``fweights`` (integer repeat counts) and
    ``aweights`` (float importance) weight the observations.

        >>> tp.cov(tp.tensor([[0., 1., 2.], [2., 1., 0.]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    _require_tensor('cov', 'input', input)
    if input.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if input.device.type == 'meta':
        raise NotImplementedError("cov(): data-dependent checks, not supported on the meta device "
                                  "(as in PyTorch)")
    if input.dim() > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    num_obs = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights('fweights', fweights, num_obs, True)
        w = fweights
    if aweights is not None:
        _check_weights('aweights', aweights, num_obs, False)
        w = aweights if w is None else w * aweights
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(_C.get_default_dtype() if w is None or not w.is_floating_point() else w.dtype)
    if w is None:
        avg = x.mean(1)
        norm = num_obs - correction
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.")
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    centred = x - avg.unsqueeze(1)
    weighted = (centred if w is None else centred * w).t()
    if weighted.is_complex():  # E[(x - mean) conj(y - mean)]
        weighted = weighted.conj()
    return (centred.mm(weighted) / norm).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in the rows of ``input`` (the
    covariance matrix normalised by the standard deviations, clipped to [-1, 1])."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.is_complex() else d).sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    if c.is_complex():  # each part clipped to [-1, 1], as PyTorch (|c| may still exceed 1)
        return _C.complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


def _edges_along(x, y, dim):
    """The spacings of sample points ``x`` (1-D, or shaped like ``y``) along ``dim`` of ``y``."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x.shape[0] - 1
        return x.diff().reshape(shape)
    return x.diff(dim=dim)


def _wrap_dim(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _check_not_bool(name, y):
    if y.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: sample points ``x`` (tensor) or a constant
    spacing ``dx`` (default 1).

        >>> tp.trapezoid(tp.tensor([1., 2., 4.]))
        tensor(4.5000)
    """
    _require_tensor('trapezoid', 'y', y)
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx "
                        "cannot both be given")
    dim = _wrap_dim(dim, y.dim())
    if y.shape[dim] == 0:
        return y.new_zeros(tuple(y.shape[:dim]) + tuple(y.shape[dim + 1:]))
    _check_not_bool('trapezoid', y)
    left, right = y.narrow(dim, 0, y.shape[dim] - 1), y.narrow(dim, 1, y.shape[dim] - 1)
    if isinstance(x, Tensor):
        return (_edges_along(x, y, dim) * (left + right)).sum(dim) / 2.0
    spacing = 1 if x is None and dx is None else (dx if dx is not None else x)
    return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * spacing


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal-rule integral along ``dim`` (one value fewer than ``y``)."""
    _require_tensor('cumulative_trapezoid', 'y', y)
    if isinstance(x, Tensor):  # PyTorch's order: the dim, then x's and y's dtypes, then x's length
        dim = _wrap_dim(dim, y.dim())
        if y.dtype == _C.bool or x.dtype == _C.bool:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool is not supported")
        n = y.shape[dim]
        if x.dim() == 1:
            if x.shape[0] != n:
                raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each sample point")
            shape = [1] * y.dim()
            shape[dim] = n
            x = x.reshape(shape)
        elif x.dim() < y.dim():
            x = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
        m = x.shape[dim]
        spacing = x.narrow(dim, min(1, m), max(m - 1, 0)) - x.narrow(dim, 0, max(m - 1, 0))
        total = y.narrow(dim, 0, max(n - 1, 0)) + y.narrow(dim, min(1, n), max(n - 1, 0))
        return (spacing * total / 2.).cumsum(dim)
    _check_not_bool('cumulative_trapezoid', y)
    dim = _wrap_dim(dim, y.dim())
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim, keepdim=True).narrow(dim, 0, 0) * 1.0
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    spacing = 1 if x is None and dx is None else (dx if dx is not None else x)
    return (spacing / 2.0 * (left + right)).cumsum(dim)


def cdist(x1, x2, p=2.0, compute_mode='use_mm_for_euclid_dist_if_necessary'):
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M): a (..., P, R) tensor (batch dimensions broadcast)."""
    _require_tensor('cdist', 'x1', x1)
    _require_tensor('cdist', 'x2', x2, 2)
    # PyTorch's order: the ranks and the columns, then (its cdist_impl) the dtypes and p; empty
    # rows or batches give an empty result and no columns zeros, both of x1's dtype, before its
    # kernel's dispatch refuses a half type or a second dtype
    for name, t in (('X1', x1), ('X2', x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (('X1', x1), ('X2', x2)):
        if not t.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_dtype_name(t.dtype)}")
    if not p >= 0:  # NaN too
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in ('use_mm_for_euclid_dist_if_necessary', 'use_mm_for_euclid_dist',
                            'donot_use_mm_for_euclid_dist', None):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    if r1 == 0 or r2 == 0 or x1.shape[-1] == 0 or 0 in x1.shape[:-2] or 0 in x2.shape[:-2]:
        # an empty sum per pair (zeros) or no pairs, still recorded for autograd as PyTorch's
        return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).sum(-1).to(x1.dtype)
    for t in (x1, x2):
        if t.dtype in (_C.float16, _C.bfloat16):
            raise NotImplementedError(f'"cdist" not implemented for \'{_dtype_name(t.dtype)}\'')
    if x1.dtype != x2.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_name(x1.dtype)} but found {_dtype_name(x2.dtype)}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return linalg.vector_norm(diff, p, dim=-1)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns x**(N-1), ..., x**0 (reversed with
    ``increasing``); integer and bool inputs give int64."""
    _require_tensor('vander', 'x', x)
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    base = x if x.is_floating_point() else x.to(_C.int64)
    if n == 0:
        return base.new_empty((x.shape[0], 0))
    cols = [base.new_ones((x.shape[0], 1))]
    if n > 1:
        cols.append(base.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1))
    result = _C.cat(cols, 1)
    return result if increasing else result.flip(1)


def _bin_index(values, edges):
    """The bin of each value (-1 outside [edges[0], edges[-1]]; the last edge falls in the
    last bin)."""
    nbins = edges.shape[0] - 1
    idx = _C.searchsorted(edges, values, right=True) - 1
    idx = idx.clamp(max=nbins - 1)
    outside = (values < edges[0]) | (values > edges[-1]) | values.isnan()
    return idx.masked_fill(outside, -1)


def _edges(values, bins, lo_hi, dtype, d):
    if isinstance(bins, Tensor):
        if bins.dtype != dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the "
                               f"same dtype, but got input with dtype {_dtype_name(dtype).lower()} "
                               f"and bins for dimension {d} with dtype "
                               f"{_dtype_name(bins.dtype).lower()}")
        return bins
    if lo_hi is None:
        lo, hi = (values.min().item(), values.max().item()) if values.numel() else (0.0, 0.0)
    else:
        lo, hi = lo_hi
        if lo > hi:
            raise RuntimeError(f"histogramdd: min should not exceed max, but got min {lo} max "
                               f"{hi} in dimension 0")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _C.linspace(lo, hi, bins + 1, dtype=dtype)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """A D-dimensional histogram of the points in the rows of ``input`` (..., D): bin counts
    (or summed ``weight``) and the bin edges of each dimension."""
    _require_tensor('histogramdd', 'input', input)
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{_dtype_name(input.dtype)}'")
    D = input.shape[-1]
    points = input.reshape(-1, D)
    if isinstance(bins, int):
        bins = [bins] * D
    if len(bins) != D:
        raise RuntimeError(f"histogramdd: expected {D} sequences of bin edges for each of the "
                           f"{D} dimensions of the input, but got {len(bins)}")
    if range is not None and len(range) != 2 * D:
        raise RuntimeError(f"histogramdd: for a {D}-dimensional histogram range should have "
                           f"{2 * D} elements, but got {len(range)}")
    edges, flat, inside, counts = [], None, None, []
    for d in builtins.range(D):
        if not isinstance(bins[d], Tensor) and bins[d] <= 0:
            raise RuntimeError(f"histogramdd: bins must be > 0, but got {bins[d]} for "
                               f"dimension {d}")
        e = _edges(points[:, d], bins[d], None if range is None else range[2 * d:2 * d + 2],
                   input.dtype, d)
        idx = _bin_index(points[:, d], e)
        nb = e.shape[0] - 1
        ok = idx >= 0
        flat = idx if flat is None else flat * nb + idx
        inside = ok if inside is None else inside & ok
        edges.append(e)
        counts.append(nb)
    size = 1
    for nb in counts:
        size *= nb
    w = points.new_ones(points.shape[0]) if weight is None else weight.reshape(-1).to(input.dtype)
    hist = _C.bincount(flat.masked_fill(~inside, 0), weights=w.masked_fill(~inside, 0),
                       minlength=size).to(input.dtype).reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = counts[d]
            hist = hist / e.diff().reshape(shape)
    return return_types.histogramdd(hist, edges)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """A histogram of the values of ``input``: ``bins`` equal bins over ``range`` (default:
    the input's min and max), or the bin edges given as a 1-D tensor. Returns (hist,
    bin_edges)."""
    _require_tensor('histogram', 'input', input)
    if isinstance(bins, Tensor) and bins.dim() != 1:
        raise RuntimeError(f"torch.histogram: bins tensor should have one dimension, but got "
                           f"{bins.dim()} dimensions")
    hist, edges = histogramdd(input.reshape(-1, 1), [bins], range=range, weight=weight,
                              density=density)
    if out is not None:
        out[0].copy_(hist)
        out[1].copy_(edges[0])
        hist, edges = out
        return return_types.histogram(hist, edges)
    return return_types.histogram(hist, edges[0])



def _gradient_along(f, d, spacing, edge_order):
    """The derivative estimate of ``f`` along dim ``d``: second-order central differences
    inside, one-sided differences of order ``edge_order`` at the two ends; ``spacing`` a
    number (uniform step) or a 1-D tensor of coordinates."""
    n = f.shape[d]
    if n < edge_order + 1:
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")

    def part(start, length):
        return f.narrow(d, start, length)

    def along(v):  # a 1-D tensor of per-position factors, shaped to broadcast along d
        shape = [1] * f.dim()
        shape[d] = v.shape[0]
        return v.reshape(shape)

    if isinstance(spacing, Tensor):
        x = spacing.to(f.dtype) if not spacing.is_floating_point() else spacing
        dx = x.diff()
        if n > 2:
            dx1, dx2 = dx[:n - 2], dx[1:n - 1]
            a = -dx2 / (dx1 * (dx1 + dx2))
            b = (dx2 - dx1) / (dx1 * dx2)
            c = dx1 / (dx2 * (dx1 + dx2))
            inner = along(a) * part(0, n - 2) + along(b) * part(1, n - 2) + along(c) * part(2, n - 2)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / dx[0]
            last = (part(n - 1, 1) - part(n - 2, 1)) / dx[n - 2]
        else:
            h1, h2 = dx[0], dx[1]
            first = (-(2 * h1 + h2) / (h1 * (h1 + h2)) * part(0, 1) + (h1 + h2) / (h1 * h2) * part(1, 1)
                     - h1 / (h2 * (h1 + h2)) * part(2, 1))
            h1, h2 = dx[n - 3], dx[n - 2]
            last = (h2 / (h1 * (h1 + h2)) * part(n - 3, 1) - (h1 + h2) / (h1 * h2) * part(n - 2, 1)
                    + (2 * h2 + h1) / (h2 * (h1 + h2)) * part(n - 1, 1))
    else:
        h = spacing
        if n > 2:
            inner = (part(2, n - 2) - part(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(n - 1, 1) - part(n - 2, 1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2 * part(1, 1) - 0.5 * part(2, 1)) / h
            last = (0.5 * part(n - 3, 1) - 2 * part(n - 2, 1) + 1.5 * part(n - 1, 1)) / h
    return _C.cat([first, inner, last] if n > 2 else [first, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates the gradient of a function sampled in ``input``, one tensor per dimension in
    ``dim`` (all by default): central differences inside, one-sided at the edges.
    ``spacing``: a number (the step of every dimension), one number per dimension, or one
    1-D tensor of sample coordinates per dimension.

        >>> tp.gradient(tp.tensor([1., 2., 4., 8.]))
        (tensor([1.0000, 1.5000, 3.0000, 4.0000]),)
    """
    _require_tensor('gradient', 'input', input)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(builtins.range(input.dim())) if dim is None else list(dim)
    dims = [_wrap_dim(d, input.dim()) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(
                "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but got "
                f"a list of length {len(spacing)}" if dim is None else
                f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                f"dim arguments to have the same length, but got a spacing argument of length "
                f"{len(spacing)} and a dim argument of length {len(dims)}.")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    f = input if input.is_floating_point() else input.to(_C.get_default_dtype())
    if input.dtype == _C.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    return tuple(_gradient_along(f, d, s, edge_order) for d, s in zip(dims, steps))
