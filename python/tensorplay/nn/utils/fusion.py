"""Folding an eval-mode BatchNorm into the convolution or linear layer before it."""
import copy

import tensorplay as tp
from tensorplay.nn.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _bn_defaults(bias, running_mean, bn_w, bn_b):
    zeros = tp.zeros_like(running_mean)
    return (zeros if bias is None else bias, tp.ones_like(running_mean) if bn_w is None else bn_w,
            zeros if bn_b is None else bn_b)


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The (weight, bias) Parameters of one convolution equal to ``conv`` followed by an
    eval-mode BatchNorm with running stats ``bn_rm``/``bn_rv`` and affine ``bn_w``/``bn_b``
    (``transpose``: the convolution is a ConvTranspose, whose output channels are dim 1)."""
    w_dtype = conv_w.dtype
    b_dtype = w_dtype if conv_b is None else conv_b.dtype
    conv_b, bn_w, bn_b = _bn_defaults(conv_b, bn_rm, bn_w, bn_b)
    inv_std = tp.rsqrt(bn_rv + bn_eps)
    shape = [1, -1] if transpose else [-1, 1]
    shape += [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of the eval-mode ``conv`` with the eval-mode BatchNorm ``bn`` folded in."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    assert bn.running_mean is not None and bn.running_var is not None
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                    bn.running_var, bn.eps, bn.weight, bn.bias,
                                                    transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The (weight, bias) Parameters of one Linear equal to ``linear`` followed by an
    eval-mode BatchNorm."""
    linear_b, bn_w, bn_b = _bn_defaults(linear_b, bn_rm, bn_w, bn_b)
    scale = bn_w * tp.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1)
    fused_b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of the eval-mode ``linear`` with the eval-mode BatchNorm ``bn`` folded in."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    assert linear.out_features == bn.num_features or bn.num_features == 1, \
        "To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1"
    assert bn.running_mean is not None and bn.running_var is not None
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean,
                                                      bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
