"""nn.functional: the stateless forms of the layers and losses.

Most functions here are compositions of TensorPlay ops (autograd then follows for free);
where a fused C++ kernel exists (convolution, pooling, normalisation, softmax) the function
calls it. Random functions (dropout and friends) draw exactly as PyTorch does
(docs/random.md), so seeded runs match PyTorch's masks.
"""
import math
import numbers
import warnings

import tensorplay as tp
from tensorplay import _C

Tensor = _C.Tensor


def _op(name):
    return getattr(_C, name, None)


def _pair(x, n, name="argument"):
    if isinstance(x, (tuple, list)):
        if len(x) == 1:
            return tuple(x) * n
        return tuple(x)
    return (x,) * n


def _reduce(loss, reduction, op="loss"):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


# ================================================================== linear
def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
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
    out = tp.where(input > 0, input, alpha * tp.expm1(input))
    return _maybe_inplace(input, out, inplace)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    out = scale * tp.where(input > 0, input, alpha * tp.expm1(input))
    return _maybe_inplace(input, out, inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    out = tp.where(input > 0, input, alpha * tp.expm1(input / alpha))
    return _maybe_inplace(input, out, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = tp.where(input > 0, input, input * negative_slope)
    return _maybe_inplace(input, out, inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def prelu(input, weight):
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
    slopes = tp.empty(tuple(input.shape), dtype=input.dtype).uniform_(lower, upper)
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
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * input * (1.0 + tp.tanh(k * (input + 0.044715 * input * input * input)))
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return input * 0.5 * (1.0 + tp.erf(input * (1.0 / math.sqrt(2.0))))


def silu(input, inplace=False):
    return _maybe_inplace(input, input * tp.sigmoid(input), inplace)


def mish(input, inplace=False):
    return _maybe_inplace(input, input * tp.tanh(softplus(input)), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    scaled = input * beta
    return tp.where(scaled > threshold, input, tp.log1p(tp.exp(scaled)) / beta)


def logsigmoid(input):
    return tp.clamp(input, max=0) - tp.log1p(tp.exp(-tp.abs(input)))


def hardsigmoid(input, inplace=False):
    out = tp.where(input <= -3, tp.zeros((), dtype=input.dtype),
                   tp.where(input >= 3, tp.ones((), dtype=input.dtype), input / 6 + 0.5))
    return _maybe_inplace(input, out, inplace)


def hardswish(input, inplace=False):
    out = tp.where(input <= -3, tp.zeros((), dtype=input.dtype),
                   tp.where(input >= 3, input, input * (input + 3) / 6))
    return _maybe_inplace(input, out, inplace)


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
def _empty_like_preserving(input):
    """empty_like with PyTorch's preserve_format (a dense input's memory order)."""
    from tensorplay.random import _layout_donor
    from tensorplay._tensor import preserve_format
    donor = _layout_donor(input, preserve_format)
    if donor.is_contiguous():
        return tp.empty(tuple(input.shape), dtype=input.dtype)
    order = sorted(range(input.dim()), key=lambda d: -input.stride(d))
    base = tp.empty(tuple(input.shape[d] for d in order), dtype=input.dtype)
    inverse = [order.index(d) for d in range(input.dim())]
    return base.permute(*inverse)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(input, p, training, inplace, noise_shape=None, alpha=False):
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(tp.zeros((), dtype=input.dtype)) if inplace else \
            input * tp.zeros((), dtype=input.dtype)
    if noise_shape is None:
        noise = _empty_like_preserving(input)
    else:
        noise = tp.empty(noise_shape, dtype=input.dtype)
    noise.bernoulli_(1 - p)
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
    memory order), scaling the rest by 1 / (1 - p)."""
    _check_p(p)
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


# ================================================================== embeddings
def one_hot(tensor, num_classes=-1):
    if tensor.dtype != tp.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() > 0:
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = int(tensor.max().item()) + 1
        elif tensor.max().item() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    out = tp.zeros(tuple(tensor.shape) + (num_classes,), dtype=tp.int64)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    with tp.no_grad():
        idx = tp.unique(input.reshape(-1))
        rows = weight.index_select(0, idx)
        norms = tp.linalg.vector_norm(rows, norm_type, dim=1)
        scale = tp.where(norms > max_norm, max_norm / (norms + 1e-7), tp.ones_like(norms))
        weight.index_copy_(0, idx, rows * scale.unsqueeze(1))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the indices in `input` (no gradient to padding_idx's row)."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    if input.dtype not in (tp.int64, tp.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           "(while checking arguments for embedding)")
    if max_norm is not None:
        _embedding_renorm_(weight, input.contiguous(), max_norm, norm_type)
    w = weight
    if padding_idx is not None and weight.requires_grad:
        keep = tp.ones((weight.size(0), 1), dtype=weight.dtype)
        keep[padding_idx] = 0
        w = weight * keep + weight.detach() * (1 - keep)  # same values, no grad to the pad row
    if scale_grad_by_freq and weight.requires_grad:
        flat = input.reshape(-1)
        counts = tp.bincount(flat, minlength=weight.size(0)).to(weight.dtype).clamp(min=1)
        scale = 1.0 / counts.unsqueeze(1)
        w = w * scale + (w * (1 - scale)).detach()  # same values; row gradients / frequency
    return w.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.size(1),))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is "
                             "a mini-batch of fixed length sequences.")
        n, length = tuple(input.shape)
        offsets = tp.arange(0, n * length, length)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    rows = embedding(input, weight, padding_idx, max_norm, norm_type)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    offs = [int(o) for o in offsets.tolist()]
    if include_last_offset:
        bounds = list(zip(offs[:-1], offs[1:]))
    else:
        bounds = list(zip(offs, offs[1:] + [input.numel()]))
    keep = None
    if padding_idx is not None:
        pad = padding_idx if padding_idx >= 0 else weight.size(0) + padding_idx
        keep = (input != pad)
    outs = []
    for a, b in bounds:
        seg = rows[a:b]
        if keep is not None:
            k = keep[a:b]
            seg = seg[k]
        if seg.shape[0] == 0:
            outs.append(tp.zeros((weight.size(1),), dtype=weight.dtype))
        elif mode == "sum":
            outs.append(seg.sum(0))
        elif mode == "mean":
            outs.append(seg.mean(0))
        elif mode == "max":
            outs.append(seg.amax(0))
        else:
            raise ValueError("mode has to be one of sum, mean or max")
    return tp.stack(outs) if outs else tp.zeros((0, weight.size(1)), dtype=weight.dtype)


# ================================================================== distances
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = tp.linalg.vector_norm(input, p, dim=dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    x1, x2 = tp.broadcast_tensors(x1, x2)
    # PyTorch normalises each input by its clamped norm, then takes the dot product
    n1 = tp.linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clamp(min=eps)
    n2 = tp.linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = max(x1.dim(), x2.dim())
    return tp.linalg.vector_norm(x1 - x2 + eps, p, dim=d - 1 if d > 0 else None, keepdim=keepdim)


def pdist(input, p=2):
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.size(0)
    if n < 2:
        return tp.empty((0,), dtype=input.dtype)
    i, j = tp.triu_indices(n, n, 1) if hasattr(tp, "triu_indices") else _triu_indices(n)
    return tp.linalg.vector_norm(input[i] - input[j], p, dim=1)


def _triu_indices(n):
    rows, cols = [], []
    for a in range(n):
        for b in range(a + 1, n):
            rows.append(a)
            cols.append(b)
    return tp.tensor(rows, dtype=tp.int64), tp.tensor(cols, dtype=tp.int64)


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
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise ValueError("Padding length should be less than or equal to two times the input "
                         "dimension but got padding length {} and input of dimension {}".format(
                             len(pad), input.dim()))
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


# ================================================================== normalisation
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    fused = _op("batch_norm")
    if fused is not None:
        return fused(input, weight, bias, running_mean, running_var, training, momentum, eps)
    if training:
        size = input.numel() // input.size(1)
        if size == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
    dims = [0] + list(range(2, input.dim()))
    shape = [1, input.size(1)] + [1] * (input.dim() - 2)
    if training:
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        if running_mean is not None:
            n = input.numel() // input.size(1)
            with tp.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                running_var.mul_(1 - momentum).add_(var.detach() * (momentum * n / max(n - 1, 1)))
    else:
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * tp.rsqrt(var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    n, c = input.size(0), input.size(1)
    x = input.reshape((1, n * c) + tuple(input.shape[2:]))
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    out = batch_norm(x, rm, rv, w, b, use_input_stats, momentum, eps)
    if running_mean is not None and use_input_stats:
        with tp.no_grad():
            running_mean.copy_(rm.reshape((n, c)).mean(0))
            running_var.copy_(rv.reshape((n, c)).mean(0))
    return out.reshape(tuple(input.shape))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    fused = _op("layer_norm")
    if fused is not None:
        return fused(input, list(normalized_shape), weight, bias, eps)
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, keepdim=True, correction=0)
    out = (input - mean) * tp.rsqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    fused = _op("rms_norm")
    if fused is not None:
        return fused(input, list(normalized_shape), weight, eps)
    if eps is None:
        eps = tp.finfo(input.dtype).eps
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    out = input * tp.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    fused = _op("group_norm")
    if fused is not None:
        return fused(input, num_groups, weight, bias, eps)
    n, c = input.size(0), input.size(1)
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups="
                           f"{num_groups}")
    x = input.reshape((n, num_groups, -1))
    mean = x.mean(2, keepdim=True)
    var = x.var(2, keepdim=True, correction=0)
    out = ((x - mean) * tp.rsqrt(var + eps)).reshape(tuple(input.shape))
    shape = [1, c] + [1] * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = (input * input).unsqueeze(1)
    if dim == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = _sum_window(div, size, 2).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape((sizes[0], 1, sizes[1], sizes[2], -1))
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = _sum_window(div, size, 2).squeeze(1)
        div = div.reshape(sizes)
    div = (div * (alpha / size) + k) ** beta
    return input / div


def _sum_window(x, size, dim):
    n = x.size(dim) - size + 1
    return tp.stack([x.narrow(dim, i, n) for i in range(size)]).sum(0)


# ================================================================== attention
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if enable_gqa:
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    scores = tp.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        causal = tp.ones((L, S), dtype=tp.bool).tril()
        scores = scores.masked_fill(causal.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == tp.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return tp.matmul(weights, value)


# ================================================================== losses
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = tp.broadcast_tensors(input, target)
    loss = tp.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=2)
    input, target = tp.broadcast_tensors(input, target)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    input, target = tp.broadcast_tensors(input, target)
    if beta == 0.0:
        return _reduce(tp.abs(input - target), reduction)
    d = tp.abs(input - target)
    loss = tp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    input, target = tp.broadcast_tensors(input, target)
    d = tp.abs(input - target)
    loss = tp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(tp.log1p(tp.exp(-target * input)), reduction)


def _check_nll_shapes(input, target):
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1:
        if target.dim() != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif input.size(0) != target.size(0):
        raise ValueError(f"Expected input batch_size ({input.size(0)}) to match target "
                         f"batch_size ({target.size(0)}).")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n]] (per class weights; ignore_index skipped, and left out of the
    mean's denominator)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_nll_shapes(input, target)
    if target.dtype not in (tp.int64, tp.uint8, tp.int32, tp.int16, tp.int8):
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target.dtype)}")
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    c = input.size(1)
    valid = target != ignore_index
    safe = tp.where(valid, target, tp.zeros((), dtype=target.dtype)).to(tp.int64)
    if safe.numel() and (safe.min().item() < 0 or safe.max().item() >= c):
        bad = int(tp.where(valid & ((safe < 0) | (safe >= c)), target, tp.zeros((), dtype=target.dtype)).abs().max().item())
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = tp.ones((), dtype=input.dtype) if weight is None else weight.index_select(0, safe.reshape(-1)).reshape(tuple(safe.shape))
    w = w * valid.to(input.dtype)
    loss = -picked * w
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.expand_as(loss).sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _scalar_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "int64": "Long"}[str(dtype).split(".")[-1]]


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over dim 1 then the negative log-likelihood of the targets (class indices,
    or class probabilities of input's shape); label_smoothing mixes in the uniform target."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    c = input.size(class_dim)
    if not target.is_floating_point() and weight is None and label_smoothing <= 0 and \
            input.dim() in (1, 2) and _op("_cross_entropy_rows") is not None:
        logp = None
    else:
        logp = log_softmax(input, class_dim)
    if target.is_floating_point():  # probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected input batch_size and target batch_size to match when "
                               "target is probabilities")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        wshape = [1] * input.dim()
        wshape[class_dim] = c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -prod.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // c) if input.dim() > 1 else loss.sum()
        return _reduce(loss, reduction)
    fused = _op("_cross_entropy_rows")
    if fused is not None and weight is None and label_smoothing <= 0 and input.dim() in (1, 2) \
            and input.is_floating_point():
        # one fused pass: logsumexp(x_n) - x_n[t_n] (and softmax - onehot backward)
        x2, t1 = (input.unsqueeze(0), target.reshape((1,))) if input.dim() == 1 else (input, target)
        if t1.dim() != 1 or t1.size(0) != x2.size(0):
            _check_nll_shapes(input, target)
        rows = fused(x2, t1, ignore_index)
        if reduction == "none":
            return rows.squeeze(0) if input.dim() == 1 else rows
        if reduction == "sum":
            return rows.sum()
        if reduction == "mean":
            return rows.sum() / (t1 != ignore_index).sum().to(rows.dtype)
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    valid = target != ignore_index
    wshape = [1] * input.dim()
    wshape[class_dim] = c
    smooth = -(logp * weight.reshape(wshape)).sum(class_dim) if weight is not None \
        else -logp.sum(class_dim)
    smooth = smooth * valid.to(smooth.dtype)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        if weight is not None:
            safe = tp.where(valid, target, tp.zeros((), dtype=target.dtype)).to(tp.int64)
            denom = (weight.index_select(0, safe.reshape(-1)) * valid.reshape(-1).to(weight.dtype)).sum()
        else:
            denom = valid.sum().to(smooth.dtype)
        ret = smooth.sum() / denom
    return (1 - label_smoothing) * nll + ret * (label_smoothing / c)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_torch_size(target.shape)}) that is different "
                         f"to the input size ({_torch_size(input.shape)}) is deprecated. Please "
                         "ensure they have the same size.")
    log_x = tp.clamp(tp.log(input), min=-100)
    log_1mx = tp.clamp(tp.log(1 - input), min=-100)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _torch_size(shape):
    return "torch.Size([" + ", ".join(str(s) for s in shape) + "])"


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_torch_size(target.shape)}) must be the same as input "
                         f"size ({_torch_size(input.shape)})")
    softplus_neg = tp.log1p(tp.exp(-tp.abs(input))) + tp.clamp(-input, min=0)
    if pos_weight is not None:
        log_weight = 1 + (pos_weight - 1) * target
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = tp.exp(target) * (target - input)
    else:
        loss = tp.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.size(0) if input.dim() != 0 else loss.sum()
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = tp.exp(input) - target * input
    else:
        loss = input - target * tp.log(input + eps)
    if full:
        stirling = target * tp.log(target) - target + 0.5 * tp.log(2 * math.pi * target)
        loss = loss + tp.where(target > 1, stirling, tp.zeros((), dtype=loss.dtype))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, numbers.Real):
        var = tp.full((), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.size(-1) == 1:
            pass
        elif var.dim() != 0:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any().item()):
        raise ValueError("var has negative entry/entries")
    var = var + (tp.clamp(var, min=eps) - var).detach()  # clamped, gradient as if not
    loss = 0.5 * (tp.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(tp.clamp(-target * (input1 - input2) + margin, min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zero = tp.zeros((), dtype=input.dtype)
    margin_clamp = tp.clamp(margin - input, min=0)
    output_margin = tp.where(target != 1, margin_clamp, zero)
    output_self = tp.where(target != -1, input, zero)
    return _reduce(output_margin + output_self, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / tp.sqrt(mag1 * mag2)
    zero = tp.zeros((), dtype=cos.dtype)
    pos = tp.where(target == 1, 1 - cos, zero)
    neg = tp.where(target == -1, tp.clamp(cos - margin, min=0), zero)
    return _reduce(pos + neg, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.size(-1)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    t = target.reshape(-1)
    c = x.size(1)
    picked = x.gather(1, t.unsqueeze(1))
    z = tp.clamp(margin - picked + x, min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    mask = tp.ones_like(z).scatter_(1, t.unsqueeze(1), 0.0)
    loss = (z * mask).sum(1) / c
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    t = target.unsqueeze(0) if unbatched else target
    n, c = tuple(x.shape)
    rows = []
    for i in range(n):
        labels = []
        for v in t[i].tolist():
            if v < 0:
                break
            labels.append(int(v))
        if not labels:
            rows.append(x[i].sum() * 0)
            continue
        is_target = tp.zeros((c,), dtype=tp.bool)
        idx = tp.tensor(labels, dtype=tp.int64)
        is_target[idx] = True
        xt = x[i].index_select(0, idx)
        margins = tp.clamp(1 - (xt.unsqueeze(1) - x[i].unsqueeze(0)), min=0)
        margins = margins * is_target.logical_not().to(x.dtype).unsqueeze(0)
        rows.append(margins.sum() / c)
    loss = tp.stack(rows)
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_swap = pairwise_distance(positive, negative, p, eps)
        d_neg = tp.minimum(d_neg, d_swap)
    return _reduce(tp.clamp(margin + d_pos - d_neg, min=0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = tp.minimum(d_neg, dist(positive, negative))
    return _reduce(tp.clamp(margin + d_pos - d_neg, min=0), reduction)


# ================================================================== fused-kernel ops
# Convolution, pooling, unfold/fold and interpolation call C++ kernels (csrc/ops/nn_*.cpp).
def _require(name):
    fn = _op(name)
    if fn is None:
        raise NotImplementedError(f"{name}: no kernel in this build yet")
    return fn


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
        return _require(f"max_unpool{n}d")(input, indices, size)
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


# ================================================================== CTC
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification loss: -log of the total probability of every
    alignment of each target, by the forward (alpha) recursion in log space, batched."""
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 and not isinstance(target_lengths, int) \
            else targets
    T, N, C = tuple(log_probs.shape)
    il = input_lengths.tolist() if isinstance(input_lengths, Tensor) else \
        ([input_lengths] if isinstance(input_lengths, int) else list(input_lengths))
    tl = target_lengths.tolist() if isinstance(target_lengths, Tensor) else \
        ([target_lengths] if isinstance(target_lengths, int) else list(target_lengths))
    if len(il) != N:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(il)} and {N}")
    if len(tl) != N:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tl)} and {N}")
    # per-sample target rows (2-D padded targets, or 1-D concatenated)
    if targets.dim() == 1:
        flat, rows, off = targets.tolist(), [], 0
        for n in tl:
            rows.append(flat[off:off + n])
            off += n
    else:
        rows = [targets[i, :tl[i]].tolist() for i in range(N)]
    for i in range(N):
        if il[i] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{il[i]} (while checking arguments for ctc_loss_cpu)")
    S = max(tl) if tl else 0
    L = 2 * S + 1
    ext = [[blank] * L for _ in range(N)]
    skip = [[False] * L for _ in range(N)]
    for i, row in enumerate(rows):
        for k, lab in enumerate(row):
            ext[i][2 * k + 1] = int(lab)
            if k > 0 and row[k] != row[k - 1]:
                skip[i][2 * k + 1] = True
    ext_t = tp.tensor(ext, dtype=tp.int64)
    skip_t = tp.tensor(skip, dtype=tp.bool)
    valid_t = tp.tensor([[s <= 2 * tl[i] for s in range(L)] for i in range(N)], dtype=tp.bool)
    dtype = log_probs.dtype
    neg_inf = tp.full((), float("-inf"), dtype=dtype)
    tiny = tp.finfo(dtype).tiny

    def lse(*xs):  # log-sum-exp that stays -inf (with zero gradient) where all terms are
        st = tp.stack(xs)
        m = st.amax(0).detach()
        dead = tp.isinf(m)
        m = tp.where(dead, tp.zeros((), dtype=dtype), m)
        val = m + tp.log(tp.clamp(tp.exp(st - m).sum(0), min=tiny))
        return tp.where(dead, neg_inf, val)

    def shift(a, k):
        return tp.cat([tp.full((N, k), float("-inf"), dtype=dtype), a[:, :L - k]], 1)

    lp0 = log_probs[0].gather(1, ext_t)
    init = tp.full((N, L), float("-inf"), dtype=dtype)
    first = tp.zeros((N, L), dtype=tp.bool)
    first[:, 0] = True
    if L > 1:
        first[:, 1] = tp.tensor([n > 0 for n in tl], dtype=tp.bool)
    alpha = tp.where(first & valid_t, lp0, init)
    lens = tp.tensor(il, dtype=tp.int64).unsqueeze(1)
    for t in range(1, T):
        a2 = shift(alpha, 1) if L > 1 else tp.full((N, L), float("-inf"), dtype=dtype)
        a3 = tp.where(skip_t, shift(alpha, 2), neg_inf) if L > 2 else \
            tp.full((N, L), float("-inf"), dtype=dtype)
        new = lse(alpha, a2, a3) + log_probs[t].gather(1, ext_t)
        new = tp.where(valid_t, new, neg_inf)
        alpha = tp.where(lens > t, new, alpha)
    end = tp.tensor([2 * n for n in tl], dtype=tp.int64).unsqueeze(1)
    last = alpha.gather(1, end).squeeze(1)
    before = alpha.gather(1, (end - 1).clamp(min=0)).squeeze(1)
    before = tp.where(end.squeeze(1) > 0, before, neg_inf)
    loss = -lse(last, before)
    # PyTorch's CTC backward returns exp(log_probs) - posterior (the gradient with respect to
    # the logits behind a log_softmax) for t < input_length; add the exp term, value-neutral
    steps = tp.arange(T).unsqueeze(1) < tp.tensor(il, dtype=tp.int64).unsqueeze(0)
    w = (tp.exp(log_probs.detach()) * steps.unsqueeze(2).to(dtype))
    term = (log_probs * w).sum((0, 2))
    loss = loss + (term - term.detach())
    if zero_infinity:
        loss = tp.where(tp.isinf(loss), tp.zeros((), dtype=dtype), loss)
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        tlen = tp.tensor(tl, dtype=dtype).clamp(min=1)
        return (loss / tlen).mean()
    raise ValueError(f"{reduction} is not a valid value for reduction")


# ================================================================== spatial transformers
def _linspace_from_neg_one(num_steps, align_corners, dtype):
    if num_steps <= 1:
        return tp.zeros((1,), dtype=dtype)
    r = tp.linspace(-1, 1, num_steps, dtype=dtype)
    return r if align_corners else r * ((num_steps - 1) / num_steps)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta."""
    align_corners = bool(align_corners)
    if len(size) == 4:
        n, _, h, w = size
        if tuple(theta.shape) != (n, 2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{list(size)}. Got {list(theta.shape)}.")
        xs = _linspace_from_neg_one(w, align_corners, theta.dtype)
        ys = _linspace_from_neg_one(h, align_corners, theta.dtype)
        base = tp.stack([xs.reshape((1, w)).expand(h, w), ys.reshape((h, 1)).expand(h, w),
                         tp.ones((h, w), dtype=theta.dtype)], -1)
        return tp.matmul(base.reshape((1, h * w, 3)), theta.transpose(1, 2)).reshape((n, h, w, 2))
    if len(size) == 5:
        n, _, d, h, w = size
        if tuple(theta.shape) != (n, 3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{list(size)}. Got {list(theta.shape)}.")
        xs = _linspace_from_neg_one(w, align_corners, theta.dtype)
        ys = _linspace_from_neg_one(h, align_corners, theta.dtype)
        zs = _linspace_from_neg_one(d, align_corners, theta.dtype)
        base = tp.stack([xs.reshape((1, 1, w)).expand(d, h, w), ys.reshape((1, h, 1)).expand(d, h, w),
                         zs.reshape((d, 1, 1)).expand(d, h, w), tp.ones((d, h, w), dtype=theta.dtype)], -1)
        return tp.matmul(base.reshape((1, d * h * w, 4)), theta.transpose(1, 2)).reshape((n, d, h, w, 3))
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                              f"transforms, respectively. Got size {list(size)}.")


def _reflect(x, twice_low, twice_high):
    if twice_low == twice_high:
        return tp.zeros_like(x)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = tp.abs(x - lo)
    extra = tp.fmod(x, span)
    flips = tp.floor(x / span).detach()
    even = tp.fmod(flips, 2) == 0
    return tp.where(even, extra + lo, span - extra + lo)


def _source_coord(coord, size, padding_mode, align_corners):
    x = ((coord + 1) / 2) * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        x = tp.clamp(x, 0, size - 1)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = tp.clamp(x, 0, size - 1)
    return x


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples input (N, C, H, W) at the normalised points grid (N, Ho, Wo, 2)."""
    if input.dim() != 4:
        raise NotImplementedError("grid_sample: only 4-D inputs (bilinear/nearest) are supported")
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = bool(align_corners)
    n, c, h, w = tuple(input.shape)
    ho, wo = grid.size(1), grid.size(2)
    x = _source_coord(grid[..., 0], w, padding_mode, align_corners).reshape((n, ho * wo))
    y = _source_coord(grid[..., 1], h, padding_mode, align_corners).reshape((n, ho * wo))
    flat = input.reshape((n, c, h * w))

    def tap(xi, yi, weight):
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).to(tp.int64)
        vals = flat.gather(2, idx.unsqueeze(1).expand(n, c, ho * wo))
        return vals * (weight * inside.to(weight.dtype)).unsqueeze(1)

    if mode == "nearest":
        xr, yr = tp.round(x).detach(), tp.round(y).detach()
        out = tap(xr, yr, tp.ones_like(x))
    else:
        x0, y0 = tp.floor(x).detach(), tp.floor(y).detach()
        x1, y1 = x0 + 1, y0 + 1
        wx1, wy1 = x - x0, y - y0
        wx0, wy0 = x1 - x, y1 - y
        out = tap(x0, y0, wx0 * wy0) + tap(x1, y0, wx1 * wy0) + tap(x0, y1, wx0 * wy1) + \
            tap(x1, y1, wx1 * wy1)
    return out.reshape((n, c, ho, wo))


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def selu_(input):
    return selu(input, True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)


native_channel_shuffle = channel_shuffle
