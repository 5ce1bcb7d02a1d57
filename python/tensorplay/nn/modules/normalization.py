"""Normalisation layers: BatchNorm1/2/3d, InstanceNorm1/2/3d, LayerNorm, GroupNorm, RMSNorm,
LocalResponseNorm,
CrossMapLRN2d."""
import numbers

import tensorplay as tp
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter


def _affine_parameters(module, affine, shape, bias, kw):
    """module.weight and, with bias, module.bias: Parameters of `shape` (kw: dtype, device;
    filled by _reset_affine) where affine, else registered as None."""
    if affine:
        module.weight = Parameter(tp.empty(shape, **kw))
        if bias:
            module.bias = Parameter(tp.empty(shape, **kw))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module, affine):
    """Ones in module.weight and zeros in module.bias (where present), as PyTorch's norms."""
    if affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        kw = dict(dtype=dtype, device=device)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine_parameters(self, affine, (num_features,), bias, kw)
        if track_running_stats:
            self.register_buffer("running_mean", tp.zeros((num_features,), **kw))
            self.register_buffer("running_var", tp.ones((num_features,), **kw))
            self.register_buffer("num_batches_tracked", tp.tensor(0, dtype=tp.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                eaf = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        return F.batch_norm(
            input,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight, self.bias, bn_training, eaf, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._get_no_batch_dim()
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.size(feature_dim)}.")
        if input.dim() == self._get_no_batch_dim():
            return self._forward(input.unsqueeze(0)).squeeze(0)
        return self._forward(input)

    def _forward(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats, self.momentum
                               if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    def _get_no_batch_dim(self):
        return 2

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class InstanceNorm2d(_InstanceNorm):
    def _get_no_batch_dim(self):
        return 3

    def _check_input_dim(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")


class InstanceNorm3d(_InstanceNorm):
    def _get_no_batch_dim(self):
        return 4

    def _check_input_dim(self, input):
        if input.dim() not in (4, 5):
            raise ValueError(f"expected 4D or 5D input (got {input.dim()}D input)")


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, elementwise_affine, self.normalized_shape, bias, dict(dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self, self.elementwise_affine)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = \
            num_groups, num_channels, eps, affine
        _affine_parameters(self, affine, (num_channels,), bias, dict(dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self, self.affine)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tp.empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _channel_window_sum(x, before, after):
    """sum_{c' = c - before}^{c + after} x[:, c'] (channels outside [0, C) count as zero)."""
    C = x.size(1)
    padded = F.pad(x, (0, 0, 0, 0, before, after))
    return tp.stack([padded.narrow(1, i, C) for i in range(before + after + 1)]).sum(0)


class _CrossMapLRN2dFunction(tp.autograd.Function):
    """The legacy (Lua Torch) cross-channel LRN that nn.CrossMapLRN2d runs.

    Note [CrossMapLRN2d quirks]: PyTorch keeps the legacy kernel's arithmetic and so do we.
    With p = int((size - 1) / 2 + 1), channel c is scaled by k + alpha / size * S[c] where S[c]
    sums the squares of channels c - (p - 1) .. c + (p - 1) and, once c >= p, also of channel 0
    (the running sum never drops it). The backward is the legacy formula, not the derivative
    of that forward: with q = int(size - (size - 1) / 2) and r = grad * output / scale,
    grad_input = scale^-beta * grad - 2 * alpha * beta / size * input * sum_{c-q}^{c+size-1-q} r,
    and for size 1 it fails as PyTorch's does."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        p = int((size - 1) / 2 + 1)
        sq = input * input
        total = _channel_window_sum(sq, p - 1, p - 1)
        C = input.size(1)
        if C > p:
            late = (tp.arange(C, device=input.device) >= p).to(input.dtype).reshape((1, C, 1, 1))
            total = total + late * sq.narrow(1, 0, 1)
        scale = total * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        ctx.save_for_backward(input, output, scale)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size, alpha, beta = ctx.size, ctx.alpha, ctx.beta
        q = int(size - (size - 1) / 2)
        if q > size - 1:
            raise RuntimeError(f"CrossMapLRN2d: the backward of size {size} is undefined (its "
                               f"padded ratio buffer of {input.size(1) + size - 1} channels cannot "
                               f"hold {input.size(1)} channels from offset {q}), as in PyTorch")
        ratio = grad_output * output / scale
        accum = _channel_window_sum(ratio, q, size - 1 - q)
        grad = scale.pow(-beta) * grad_output - (2 * alpha * beta / size) * input * accum
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalisation across the channels of a 4-D input, as Lua Torch's
    SpatialCrossMapLRN computed it (see Note [CrossMapLRN2d quirks])."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _AllReduceSum(tp.autograd.Function):
    """A sum over the group's ranks whose backward is the same sum of the gradients (every
    rank's loss depends on the global sum)."""

    @staticmethod
    def forward(ctx, x, group):
        import tensorplay.distributed as dist
        ctx.group = group
        out = x.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        import tensorplay.distributed as dist
        g = grad.clone()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm whose training statistics are those of the whole group's batch: the per
    channel sums, sums of squares and counts are all-reduced (and, in backward, their
    gradients). Works on CPU tensors (PyTorch's needs a GPU). Outside training, or without an
    initialized group of more than one rank, it is BatchNorm."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        import tensorplay.distributed as dist
        self._check_input_dim(input)
        if not (self.training and dist.is_available() and dist.is_initialized()
                and dist.get_world_size(self.process_group) > 1):
            return super().forward(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                eaf = 1.0 / float(self.num_batches_tracked.item())
        c = input.shape[1]
        dims = [0] + list(range(2, input.dim()))
        count = input.numel() // c
        x = input.float() if input.dtype in (tp.float16, tp.bfloat16) else input
        stats = tp.cat([x.sum(dims), (x * x).sum(dims),
                        tp.full((1,), float(count), dtype=x.dtype)])
        stats = _AllReduceSum.apply(stats, self.process_group)
        n = stats[2 * c]
        mean = stats[:c] / n
        var = (stats[c:2 * c] / n - mean * mean).clamp(min=0)
        shape = [1, c] + [1] * (input.dim() - 2)
        y = (x - mean.view(shape)) * (var + self.eps).rsqrt().view(shape)
        if self.weight is not None:
            y = y * self.weight.view(shape) + self.bias.view(shape)
        if self.track_running_stats and self.running_mean is not None:
            with tp.no_grad():
                total = float(n)
                unbiased = var * (total / max(total - 1.0, 1.0))
                self.running_mean.mul_(1 - eaf).add_(mean.detach() * eaf)
                self.running_var.mul_(1 - eaf).add_(unbiased.detach() * eaf)
        return y.to(input.dtype)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Returns module with every BatchNorm*D replaced by a SyncBatchNorm (state kept)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                with tp.no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
