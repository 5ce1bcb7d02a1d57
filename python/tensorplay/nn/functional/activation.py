"""Linear maps, activations, the softmax family and dropout (dropout draws PyTorch's
masks, docs/random.md)."""
import math
import warnings

import tensorplay as tp
from tensorplay import _C
from tensorplay.nn.functional._common import _op


# ================================================================== linear
def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    if _C._autocast_armed():
        input, weight, bias = _C._autocast_args("linear", input, weight, bias)
    if input.dim() == 2 and bias is not None:
        return tp.addmm(bias, input, weight.t())
    if input.dim() > 2:  # fold the leading dims: one GEMM forward and one per gradient
        lead = tuple(input.shape[:-1])
        flat = input.reshape((-1, input.size(-1)))
        out = tp.addmm(bias, flat, weight.t()) if bias is not None else tp.mm(flat, weight.t())
        return out.reshape(lead + (weight.size(0),))
    out = tp.matmul(input, weight.t())
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T W_k x2 + b_k over the last dims (leading dims broadcast)."""
    if _C._autocast_armed():
        input1, input2, weight, bias = _C._autocast_args("bilinear", input1, input2, weight,
                                                         bias)
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    out = tp.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias


# ================================================================== activations
def _where_between(x, lo, hi):
    return (x > lo) & (x < hi)


def threshold(input, threshold, value, inplace=False):
    out = tp.where(input > threshold, input, tp.full((), value, dtype=input.dtype))
    return _maybe_inplace(input, out, inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, True)


def _maybe_inplace(input, out, inplace):
    if inplace:
        return input.copy_(out)
    return out


def relu(input, inplace=False):
    if inplace:
        return input.relu_() if hasattr(input, "relu_") else input.copy_(tp.relu(input))
    return tp.relu(input)


def relu_(input):
    return relu(input, inplace=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    # gradient flows only strictly inside (min_val, max_val), as PyTorch's hardtanh_backward
    lo = tp.full((), min_val, dtype=input.dtype)
    hi = tp.full((), max_val, dtype=input.dtype)
    out = tp.where(input <= min_val, lo, tp.where(input >= max_val, hi, input))
    return _maybe_inplace(input, out, inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input, alpha=1.0, inplace=False):
    return _maybe_inplace(input, _C._elu(input, alpha, 1.0, 1.0), inplace)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return _maybe_inplace(input, _C._elu(input, alpha, scale, 1.0), inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _maybe_inplace(input, _C._elu(input, alpha, 1.0, 1.0 / alpha), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, _C._leaky_relu(input, negative_slope), inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def prelu(input, weight):
    if _C._autocast_armed():
        input, weight = _C._autocast_args("prelu", input, weight)
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.size(1) if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = {channels}.")
        shape = [1] * input.dim()
        if input.dim() >= 2:
            shape[1] = channels
        weight = weight.reshape(shape)
    return tp.where(input > 0, input, weight * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slopes = tp.empty(tuple(input.shape), dtype=input.dtype, device=input.device).uniform_(lower, upper)
    out = tp.where(input >= 0, input, input * slopes)
    return _maybe_inplace(input, out, inplace)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.size(dim)
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} "
                           f"is size {n}")
    a, b = input.split(n // 2, dim)
    return a * tp.sigmoid(b)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        return _C._gelu_tanh(input)
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _C._gelu(input)


def silu(input, inplace=False):
    return _maybe_inplace(input, _C._silu(input), inplace)


def mish(input, inplace=False):
    return _maybe_inplace(input, _C._mish(input), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _C._softplus(input, beta, threshold)


def logsigmoid(input):
    return tp.clamp(input, max=0) - tp.log1p(tp.exp(-tp.abs(input)))


def hardsigmoid(input, inplace=False):
    return _maybe_inplace(input, _C._hardsigmoid(input), inplace)


def hardswish(input, inplace=False):
    return _maybe_inplace(input, _C._hardswish(input), inplace)


def softsign(input):
    return input / (1 + tp.abs(input))


def tanhshrink(input):
    return input - tp.tanh(input)


def hardshrink(input, lambd=0.5):
    return tp.where((input > lambd) | (input < -lambd), input, tp.zeros((), dtype=input.dtype))


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    zero = tp.zeros((), dtype=input.dtype)
    return tp.where(input > lambd, input - lambd, tp.where(input < -lambd, input + lambd, zero))


def tanh(input):
    return tp.tanh(input)


def sigmoid(input):
    return tp.sigmoid(input)


# ================================================================== softmax family
def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.dim())
    if dtype is not None:
        input = input.to(dtype)
    fused = _op("softmax")
    if fused is not None:
        return fused(input, dim)
    shifted = input - input.amax(dim, keepdim=True).detach()
    e = tp.exp(shifted)
    return e / e.sum(dim, keepdim=True)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim())
    if dtype is not None:
        input = input.to(dtype)
    fused = _op("log_softmax")
    if fused is not None:
        return fused(input, dim)
    return input - tp.logsumexp(input, dim, keepdim=True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    return softmax(-input if dtype is None else -input.to(dtype), dim)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    gumbels = -tp.empty_like(logits).exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = softmax(gumbels, dim)
    if hard:
        index = y_soft.argmax(dim, keepdim=True)
        y_hard = tp.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


# ================================================================== dropout
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


# The vmap levels running in any thread: tp.func._vmap replaces this by its own dict when it
# loads, so eager dropout pays one truthiness test, not an import and a call (1.3 us).
_VMAP_ACTIVE = {}


def _in_vmap():
    from tensorplay.func._vmap import in_vmap  # (tp.func imports nn)
    return in_vmap()


def _dropout_noise(input, p, noise_shape):
    """The mask's Bernoulli(1 - p) draws, in the input's memory order as PyTorch draws them.
    Under vmap: an out-of-place bernoulli of a template shaped like the mask (the input, or
    its first element of each feature map), which vmap batches by its randomness flag; an
    in-place draw into a fresh unbatched tensor is refused for randomness='different'."""
    if _VMAP_ACTIVE and _in_vmap():
        template = input.detach()
        if noise_shape is not None:
            for d in range(2, template.dim()):
                template = template.narrow(d, 0, 1)
        return tp.bernoulli(template, 1 - p)
    if noise_shape is None:
        noise = tp.empty_like(input)  # PyTorch's preserve_format: the input's layout
    else:
        noise = tp.empty(noise_shape, dtype=input.dtype, device=input.device)
    return noise.bernoulli_(1 - p)


def _dropout_impl(input, p, training, inplace, noise_shape=None, alpha=False):
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(tp.zeros((), dtype=input.dtype)) if inplace else \
            input * tp.zeros((), dtype=input.dtype)
    noise = _dropout_noise(input, p, noise_shape)
    if alpha:
        alpha_ = 1.7580993408473766
        a = 1.0 / math.sqrt((alpha_ * alpha_ * p + 1) * (1 - p))
        b = noise.add(-1).mul_(alpha_ * a).add_(alpha_ * a * p)
        noise.mul_(a)
        return (input.mul_(noise) if inplace else input * noise).add_(b) if inplace else \
            input * noise + b
    noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p (one Bernoulli(1 - p) draw per element, in
    memory order), scaling the rest by 1 / (1 - p). On CUDA (0 < p < 1) this is one fused
    kernel, native_dropout, as in PyTorch."""
    _check_p(p)
    if training and input.is_cuda and 0 < p < 1 and input.numel() > 0:
        out = tp.native_dropout(input, p, True)[0]
        if not inplace:
            return out
        input.copy_(out)
        return input
    return _dropout_impl(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True)


def _feature_shape(input, batched_dims):
    shape = list(input.shape)
    return tuple(shape[:batched_dims] + [1] * (len(shape) - batched_dims))


def _feature_dropout(input, p, training, inplace, expected, name, alpha=False):
    _check_p(p)
    d = input.dim()
    if d not in expected:
        raise RuntimeError(f"{name}: Expected {expected[0]}D or {expected[1]}D input, but "
                           f"received a {d}D input.")
    batched = d == expected[1]
    if not batched:
        input = input.unsqueeze(0)
    if p == 0 or not training or input.numel() == 0:
        out = input
    else:
        out = _dropout_impl(input, p, training, inplace, _feature_shape(input, 2), alpha)
    return out if batched else out.squeeze(0)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, (2, 3), "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release.", stacklevel=2)
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    return _dropout_impl(input, p, training, inplace, _feature_shape(input, 2))


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, (4, 5), "dropout3d")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    return _dropout_impl(input, p, training, inplace, _feature_shape(input, 2), alpha=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def selu_(input):
    return selu(input, True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)
