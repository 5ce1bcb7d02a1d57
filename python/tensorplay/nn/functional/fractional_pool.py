"""Fractional max pooling (Graham, 2014): max over kernel-sized windows whose starts advance
by a pseudo-random mix of floor and ceil of input/output, one draw per sample and channel.

Note [fractional pooling draws]: without _random_samples the draws are tp.rand(N, C, k) in
the input's dtype, as PyTorch draws them, and the window starts follow PyTorch's arithmetic
in that dtype (alpha = (in - pool) / (out - 1); start_i = int((i + u) * alpha) - int(u * alpha);
the last window ends at the input's end), so seeded runs pick the same windows. The samples'
last axis is (w, h) in 2-D and (t, h, w) in 3-D, PyTorch's order.

The pooling itself gathers every window (N, C, out..., kernel...) from the flattened input,
picks the maximum (the last NaN where there is one, else the first maximum, as PyTorch's
kernel), and gathers the output through those indices, so autograd scatters the gradient to
the chosen element as PyTorch's backward does.
"""
import tensorplay as tp
from tensorplay.nn.functional._common import Tensor, _scalar_name

_AXES = {2: ('height', 'width'), 3: ('time', 'height', 'width')}


def _tuple(value, k, name, what):
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = tuple(value) * k
        if len(value) != k:
            raise RuntimeError(f"{name}: {what} must either be a single Int or tuple of "
                               f"{'Ints' if k == 2 else 'three Ints'}")
        return tuple(int(v) for v in value)
    return (int(value),) * k


def _window_starts(u, in_size, out_size, pool):
    """(N, C, out_size) int64 window starts from the draws u (N, C), in u's dtype."""
    n, c = u.shape
    last = tp.full((n, c, 1), in_size - pool, dtype=tp.int64, device=u.device)
    if out_size <= 1:
        return last[..., :out_size]
    alpha = tp.full((), in_size - pool, dtype=u.dtype, device=u.device) / \
        tp.full((), out_size - 1, dtype=u.dtype, device=u.device)
    steps = tp.arange(out_size - 1, dtype=u.dtype, device=u.device)
    starts = ((steps + u.unsqueeze(-1)) * alpha).trunc().long() - (u * alpha).trunc().long().unsqueeze(-1)
    return tp.cat([starts, last], -1)


def _check(name, input, kernel, out, samples):
    k = len(kernel)
    if input.dim() not in (k + 1, k + 2):
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    for d in range(1 if input.dim() == k + 2 else 0, input.dim()):
        if input.size(d) == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {d} being "
                               f"empty.")
    if min(kernel) <= 0:
        raise RuntimeError(f"{name}(): kernel_size must be greater than zero, but got {kernel}")
    if min(out) < 0:
        raise RuntimeError(f"{name}(): output_size must be non-negative, but got {out}")
    spatial = tuple(input.shape[-k:])
    # Note [fractional pooling size checks]: PyTorch lets the 2-D windows reach the input's
    # end (out + pool - 1 <= in, height first) but asks the 3-D ones to stop short of it
    # (out + pool - 1 < in, checked time, width, height); both are kept.
    order = (0, 1) if k == 2 else (0, 2, 1)
    for d in order:
        fits = out[d] + kernel[d] - 1 <= spatial[d] if k == 2 else out[d] + kernel[d] - 1 < spatial[d]
        if not fits:
            axis = _AXES[k][d]
            raise RuntimeError(f"{name}(): pool {axis} {kernel[d]} too large relative to input "
                               f"{axis} {spatial[d]}")
    if samples.dim() != 3:
        raise RuntimeError(f"{name}(): Expect _random_samples to have 3 dimensions, got "
                           f"{samples.dim()}")
    batch = input.size(0) if input.dim() == k + 2 else 1
    if samples.size(2) != k:
        raise RuntimeError(f"{name}(): Expect _random_samples.size(2) equals to {k}; got "
                           f"{samples.size(2)}.")
    if samples.size(0) < batch:
        raise RuntimeError(f"{name}(): Expect _random_samples.size(0) no less then input batch "
                           f"size.")
    if samples.size(1) != input.size(-k - 1):
        raise RuntimeError(f"{name}(): Expect _random_samples.size(1) equals to input channel "
                           f"size.")
    if samples.dtype != input.dtype:
        raise RuntimeError(f"{name}(): Expect _random_samples to have the same dtype as input")


def _window_index(samples, spatial, out, kernel):
    """(N, C, out..., window) flat indices into each plane / volume of every window's elements."""
    k = len(kernel)
    n, c = samples.size(0), samples.size(1)
    draw_of = (1, 0) if k == 2 else (0, 1, 2)  # the draws' axis order: (w, h) / (t, h, w)
    flat, stride = None, 1
    for d in reversed(range(k)):
        starts = _window_starts(samples[:, :, draw_of[d]], spatial[d], out[d], kernel[d])
        rows = (starts.unsqueeze(-1) + tp.arange(kernel[d], device=samples.device)) * stride
        shape = [n, c] + [1] * (2 * k)  # this axis's (out, kernel) pair in (out..., kernel...)
        shape[2 + d], shape[2 + k + d] = out[d], kernel[d]
        rows = rows.reshape(tuple(shape))
        flat = rows if flat is None else flat + rows
        stride *= spatial[d]
    return flat.expand(*((n, c) + tuple(out) + tuple(kernel))).reshape((n, c) + tuple(out) + (-1,))


def _argmax_in_windows(xf, index):
    """The flat index of each window's maximum: its last NaN if it has one, else its first
    largest element (PyTorch's kernel keeps a later element when it is larger or NaN)."""
    window = index.size(-1)
    with tp.no_grad():
        vals = xf.gather(2, index.reshape((xf.size(0), xf.size(1), -1))).reshape(tuple(index.shape))
        nan = vals.isnan()
        pos = tp.arange(window, device=xf.device)
        last_nan = tp.where(nan, pos, tp.full((), -1, dtype=tp.int64, device=xf.device)).amax(-1)
        best = tp.where(nan, tp.full((), float('-inf'), dtype=vals.dtype, device=xf.device),
                        vals).argmax(-1)
        choice = tp.where(last_nan >= 0, last_nan, best)
        return index.gather(-1, choice.unsqueeze(-1)).squeeze(-1)


def _fractional_max_pool(name, input, kernel_size, output_size, output_ratio, samples):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    k = 2 if name.endswith('2d') else 3
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    kernel = _tuple(kernel_size, k, name, 'kernel_size')
    if output_size is None:
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * k
        if len(ratio) == 1:
            ratio = tuple(ratio) * k
        if len(ratio) != k:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             f"of Ints.")
        output_size = [int(input.size(d - k) * ratio[d]) for d in range(k)]
    out = _tuple(output_size, k, name, 'output_size')
    if not input.is_floating_point() and (samples is None or samples.dtype == input.dtype):
        raise NotImplementedError(f'"{name}" not implemented for \'{_scalar_name(input.dtype)}\'')
    if samples is None:  # Note [fractional pooling draws]
        batch = 1 if input.dim() == k + 1 else input.size(0)
        samples = tp.rand(batch, input.size(-k - 1), k, dtype=input.dtype, device=input.device)
    _check(name, input, kernel, out, samples)
    unbatched = input.dim() == k + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c, spatial = x.size(0), x.size(1), tuple(x.shape[2:])
    xf = x.reshape((n, c, -1))
    indices = _argmax_in_windows(xf, _window_index(samples[:n], spatial, out, kernel))
    output = xf.gather(2, indices.reshape((n, c, -1))).reshape((n, c) + out)
    if unbatched:
        return output.squeeze(0), indices.squeeze(0)
    return output, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """2-D fractional max pooling of input (N, C, H, W) or (C, H, W) to output_size (or
    output_ratio of the input size); returns (output, indices into each H*W plane)."""
    return _fractional_max_pool('fractional_max_pool2d', input, kernel_size, output_size,
                                output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """3-D fractional max pooling of input (N, C, T, H, W) or (C, T, H, W); returns (output,
    indices into each T*H*W volume)."""
    return _fractional_max_pool('fractional_max_pool3d', input, kernel_size, output_size,
                                output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-D fractional max pooling; (output, indices) when return_indices, else the output."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-D fractional max pooling; (output, indices) when return_indices, else the output."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]
