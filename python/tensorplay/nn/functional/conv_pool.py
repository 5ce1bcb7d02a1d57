"""Convolution, pooling and unfold/fold, in the C++ kernels (csrc/ops/nn_conv.cpp,
nn_pool.cpp, nn_pad.cpp)."""
import tensorplay as tp
from tensorplay.nn.functional._common import _pair, _require
from tensorplay.nn.functional.activation import relu


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _require("conv1d")(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _require("conv2d")(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _require("conv3d")(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _require("conv_transpose1d")(input, weight, bias, stride, padding, output_padding,
                                        groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _require("conv_transpose2d")(input, weight, bias, stride, padding, output_padding,
                                        groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _require("conv_transpose3d")(input, weight, bias, stride, padding, output_padding,
                                        groups, dilation)


def _max_pool(n):
    def pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
        stride = kernel_size if stride is None or stride == [] else stride
        if return_indices:
            return _require(f"max_pool{n}d_with_indices")(input, kernel_size, stride, padding,
                                                          dilation, ceil_mode)
        return _require(f"max_pool{n}d")(input, kernel_size, stride, padding, dilation, ceil_mode)
    pool.__name__ = f"max_pool{n}d"
    return pool


max_pool1d, max_pool2d, max_pool3d = _max_pool(1), _max_pool(2), _max_pool(3)


def max_pool1d_with_indices(*args, **kw):
    return max_pool1d(*args, **kw, return_indices=True)


def max_pool2d_with_indices(*args, **kw):
    return max_pool2d(*args, **kw, return_indices=True)


def max_pool3d_with_indices(*args, **kw):
    return max_pool3d(*args, **kw, return_indices=True)


def _max_unpool(n):
    def unpool(input, indices, kernel_size, stride=None, padding=0, output_size=None):
        k = _pair(kernel_size, n)
        s = _pair(stride if stride is not None else kernel_size, n)
        p = _pair(padding, n)
        default = [(input.size(input.dim() - n + i) - 1) * s[i] + k[i] - 2 * p[i] for i in range(n)]
        if output_size is None:
            size = default
        else:
            size = list(output_size)[-n:]
        extra = (s, p) if n == 3 else ()  # max_unpool3d's op also takes stride and padding
        return _require(f"max_unpool{n}d")(input, indices, size, *extra)
    unpool.__name__ = f"max_unpool{n}d"
    return unpool


max_unpool1d, max_unpool2d, max_unpool3d = _max_unpool(1), _max_unpool(2), _max_unpool(3)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    stride = kernel_size if stride is None else stride
    return _require("avg_pool1d")(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = kernel_size if stride is None else stride
    return _require("avg_pool2d")(input, kernel_size, stride, padding, ceil_mode,
                                  count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    stride = kernel_size if stride is None else stride
    return _require("avg_pool3d")(input, kernel_size, stride, padding, ceil_mode,
                                  count_include_pad, divisor_override)


def adaptive_avg_pool1d(input, output_size):
    return _require("adaptive_avg_pool1d")(input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _require("adaptive_avg_pool2d")(input, _fill_none(input, output_size, 2))


def adaptive_avg_pool3d(input, output_size):
    return _require("adaptive_avg_pool3d")(input, _fill_none(input, output_size, 3))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, idx = _require("adaptive_max_pool1d")(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, idx = _require("adaptive_max_pool2d")(input, _fill_none(input, output_size, 2))
    return (out, idx) if return_indices else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive max pooling over the last three dimensions of a 4-D or 5-D input: output cell
    (i, j, k) takes the max of the input box [floor(i D / oD), ceil((i + 1) D / oD)) x ...
    Built from adaptive_max_pool2d: the max over each depth bin first, then over the
    height-width bins; the indices are flat positions in D*H*W."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(input.shape)}")
    for d in range(input.dim() - 3, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"adaptive_max_pool3d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    out_d, out_h, out_w = _fill_none(input, output_size, 3)
    depth, height, width = input.shape[-3:]
    values, indices = [], []
    for i in range(out_d):
        start, end = (i * depth) // out_d, -((-(i + 1) * depth) // out_d)
        slab, which = input.narrow(-3, start, end - start).max(-3)   # first max along depth
        pooled, hw = adaptive_max_pool2d(slab, (out_h, out_w), True)
        values.append(pooled)
        if return_indices:
            depth_at = which.flatten(-2).gather(-1, hw.flatten(-2)).view(hw.shape)
            indices.append((start + depth_at) * (height * width) + hw)
    out = tp.stack(values, -3)
    return (out, tp.stack(indices, -3)) if return_indices else out


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


def _fill_none(input, output_size, n):
    size = _pair(output_size, n)
    return [input.size(input.dim() - n + i) if s is None else s for i, s in enumerate(size)]


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (tp.sign(out) * relu(tp.abs(out))).mul(kernel_size).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kw, kh = _pair(kernel_size, 2)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (tp.sign(out) * relu(tp.abs(out))).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kw, kh = _pair(kernel_size, 3)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (tp.sign(out) * relu(tp.abs(out))).mul(kd * kw * kh).pow(1.0 / norm_type)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _require("im2col")(input, _pair(kernel_size, 2), _pair(dilation, 2), _pair(padding, 2),
                              _pair(stride, 2))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _require("col2im")(input, _pair(output_size, 2), _pair(kernel_size, 2),
                              _pair(dilation, 2), _pair(padding, 2), _pair(stride, 2))


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)
