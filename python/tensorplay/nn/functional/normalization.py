"""Batch, instance, layer, group, RMS and local-response normalisation (fused kernels
where the build has them)."""
import tensorplay as tp
from tensorplay.nn.functional._common import _op
from tensorplay.nn.functional.spatial import pad


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
    if eps is None:  # as PyTorch: the compute dtype's (float32 for float16 / bfloat16)
        eps = tp.finfo(tp.float32 if input.dtype in (tp.float16, tp.bfloat16) else input.dtype).eps
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    out = input * tp.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:  # F.group_norm's own check (aten's group_norm raises IndexError first)
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
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
