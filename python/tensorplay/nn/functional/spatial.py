"""Padding, pixel/channel shuffles, interpolation and spatial transformers
(affine_grid, grid_sample)."""
import math
import warnings

import tensorplay as tp
from tensorplay.nn.functional._common import _op
from tensorplay.nn.functional.conv_pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d


# ================================================================== padding, shuffles
def _pad_index(n, before, after, mode):
    idx = list(range(-before, n + after))
    out = []
    for i in idx:
        if mode == "reflect":
            if n == 1:
                j = 0
            else:
                period = 2 * (n - 1)
                j = i % period
                j = j if j < n else period - j
        elif mode == "replicate":
            j = min(max(i, 0), n - 1)
        else:  # circular
            j = i % n
        out.append(j)
    return tp.tensor(out, dtype=tp.int64)


def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 dims: pad = (left, right, top, bottom, ...)."""
    # PyTorch's checks and error classes (RuntimeError; NotImplementedError for a
    # non-constant mode whose pad length does not fit the input's dims)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length {} and input of dimension {}".format(
                               len(pad), input.dim()))
    if mode != "constant":
        if mode not in ("reflect", "replicate", "circular"):
            raise NotImplementedError(f"Unrecognised padding mode {mode}")
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        if len(pad) // 2 not in (1, 2, 3) or input.dim() not in (len(pad) // 2 + 1, len(pad) // 2 + 2):
            raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.")
    if mode == "constant" and _op("constant_pad_nd") is not None:
        return _op("constant_pad_nd")(input, list(pad), 0.0 if value is None else value)
    if mode in ("reflect", "replicate") and (value is None or value == 0):
        n = len(pad) // 2
        kernel = _op(f"{'reflection' if mode == 'reflect' else 'replication'}_pad{n}d")
        if kernel is not None and input.dim() in (n + 1, n + 2):
            return kernel(input, list(pad))
    if mode == "constant":
        fill = 0.0 if value is None else value
        shape = list(input.shape)
        slices = [slice(None)] * input.dim()
        src = input
        for k in range(len(pad) // 2):
            d = input.dim() - 1 - k
            lo, hi = pad[2 * k], pad[2 * k + 1]
            if lo < 0 or hi < 0:  # negative padding crops
                src = src.narrow(d, max(-lo, 0), src.size(d) - max(-lo, 0) - max(-hi, 0))
            shape[d] = input.shape[d] + lo + hi
            if shape[d] < 0:
                raise RuntimeError(f"The input size {input.shape[d]}, plus negative padding {lo} "
                                   f"and {hi} resulted in a negative output size, which is invalid."
                                   " Check dimension {d} of your input.")
            slices[d] = slice(max(lo, 0), max(lo, 0) + src.size(d))
        out = tp.full(tuple(shape), fill, dtype=input.dtype)
        out[tuple(slices)] = src
        return out
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unsupported padding mode: {mode}")
    out = input
    for k in range(len(pad) // 2):
        d = input.dim() - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        n = out.size(d)
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} "
                               f"of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        out = out.index_select(d, _pad_index(n, lo, hi, mode))
    return out


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = tuple(input.shape)
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    n = len(lead)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = tuple(input.shape)
    if h % r or w % r:
        raise RuntimeError("pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} and input.size(-1)={w}")
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    n = len(lead)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    n, c, *rest = tuple(input.shape)
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    x = input.reshape((n, groups, c // groups) + tuple(rest))
    return x.transpose(1, 2).reshape(tuple(input.shape))


# ================================================================== interpolation
def _interp_scale(n_in, n_out, align_corners, scale):
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _weights_shape(x, d, n):
    shape = [1] * x.dim()
    shape[d] = n
    return tuple(shape)


def _interp_dim(x, d, n_out, mode, align_corners, scale):
    """Resamples dim d of x to n_out points (separable: one dim at a time)."""
    import numpy as np
    n_in = x.size(d)
    s = np.float32(_interp_scale(n_in, n_out, align_corners, scale))
    dst = np.arange(n_out, dtype=np.float32)
    if mode in ("nearest", "nearest-exact"):
        src = np.floor((dst + np.float32(0.5)) * s) if mode == "nearest-exact" else np.floor(dst * s)
        idx = np.minimum(src.astype(np.int64), n_in - 1)
        return x.index_select(d, tp.from_numpy(idx))
    if align_corners:
        src = s * dst
    else:
        src = s * (dst + np.float32(0.5)) - np.float32(0.5)
    if mode == "cubic":
        i0 = np.floor(src).astype(np.int64)
        t = (src - i0).astype(np.float32)
        A = np.float32(-0.75)

        def near(v):  # |v| <= 1
            return ((A + 2) * v - (A + 3)) * v * v + 1

        def far(v):  # 1 < |v| < 2
            return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A
        coeffs = [far(t + 1), near(t), near(1 - t), far(2 - t)]
        out = None
        for k, c in enumerate(coeffs):
            idx = np.clip(i0 - 1 + k, 0, n_in - 1)
            term = x.index_select(d, tp.from_numpy(idx)) * \
                tp.from_numpy(c.astype(np.float32)).reshape(_weights_shape(x, d, n_out)).to(x.dtype)
            out = term if out is None else out + term
        return out
    src = np.maximum(src, np.float32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    l1 = (src - i0).astype(np.float32)
    l0 = (np.float32(1) - l1).astype(np.float32)
    w0 = tp.from_numpy(l0).reshape(_weights_shape(x, d, n_out)).to(x.dtype)
    w1 = tp.from_numpy(l1).reshape(_weights_shape(x, d, n_out)).to(x.dtype)
    return x.index_select(d, tp.from_numpy(i0)) * w0 + x.index_select(d, tp.from_numpy(i1)) * w1


_INTERP_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial dims (all dims after N, C) by `size` or `scale_factor`."""
    n = input.dim() - 2
    if n < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                         f"{input.dim()}D) for the modes: nearest | linear | bilinear | bicubic "
                         f"| trilinear | area | nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    else:
        if align_corners is None:
            align_corners = False
        if _INTERP_DIMS.get(mode) != n:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{_INTERP_DIMS.get(mode, '?') + 2}D input")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out_size = list(size) if isinstance(size, (list, tuple)) else [size] * n
        scales = [None] * n
    elif scale_factor is not None:
        scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * n
        out_size = [int(math.floor(input.size(i + 2) * s)) for i, s in enumerate(scales)]
        if recompute_scale_factor:
            scales = [None] * n
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode == "area":
        return {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[n](
            input, out_size)
    kind = "cubic" if mode == "bicubic" else ("linear" if mode in _INTERP_DIMS else mode)
    if kind not in ("nearest", "nearest-exact", "linear", "cubic"):
        raise NotImplementedError(f"Input Error: unsupported mode {mode}")
    out = input
    for i in range(n):
        out = _interp_dim(out, i + 2, out_size[i], kind, bool(align_corners), scales[i])
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ================================================================== spatial transformers
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                  "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                  "documentation of grid_sample for details.")


def _linspace_from_neg_one(num_steps, align_corners, dtype, device=None):
    if num_steps <= 1:
        return tp.zeros((1,), dtype=dtype, device=device)
    r = tp.linspace(-1, 1, num_steps, dtype=dtype, device=device)
    return r if align_corners else r * (num_steps - 1) / num_steps


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3)
    (or (N, 3, 4)), in grid_sample's normalised coordinates."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {theta.shape}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                                  f"transforms, respectively. Got size {size}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the "
                      "documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, k = size[0], len(spatial)
    if theta.shape[0] != n:
        raise RuntimeError(f"affine_grid: expected theta with batch size {n} for size {list(size)}, "
                           f"but got theta of shape {list(theta.shape)}")
    # base points (x, y[, z], 1), x fastest, times theta^T (on theta's device)
    axes = [_linspace_from_neg_one(m, align_corners, theta.dtype, theta.device) for m in reversed(spatial)]
    cols = []
    for i, a in enumerate(axes):
        shape = [1] * k
        shape[k - 1 - i] = spatial[k - 1 - i]
        cols.append(a.reshape(tuple(shape)).expand(*spatial))
    cols.append(tp.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = tp.stack(cols, -1).reshape((1, -1, k + 1))
    return tp.matmul(base, theta.transpose(1, 2)).reshape((n,) + tuple(spatial) + (k,))


_GRID_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_GRID_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples input (N, C, H, W) or (N, C, D, H, W) at the normalised points of grid
    (N, H', W', 2) or (N, D', H', W', 3): (-1, -1) is the top-left corner (pixel centre with
    align_corners=True). mode: bilinear (trilinear for 5-D), nearest, or bicubic (4-D only);
    padding_mode: what points outside the input read (zeros, border, reflection).

    >>> F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False), align_corners=False)
    """
    if mode not in _GRID_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return tp.grid_sampler(input, grid, _GRID_MODES[mode], _GRID_PADDINGS[padding_mode], bool(align_corners))


native_channel_shuffle = channel_shuffle
