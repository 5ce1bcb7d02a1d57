"""Lazy layers: in_channels / num_features come from the first input; the weights are drawn
then (as PyTorch draws them: on the first call), and the module becomes the plain layer."""
import tensorplay as tp
from tensorplay.nn.modules import conv, normalization
from tensorplay.nn.modules.linear import LazyModuleMixin
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import UninitializedBuffer, UninitializedParameter


def _lazy_conv(base, n, transposed):
    class LazyConv(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, *args, **kwargs):
            device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
            self._lazy_args = (out_channels, kernel_size, stride, padding) + args
            self._lazy_kwargs = kwargs
            Module.__init__(self)
            self.out_channels = out_channels
            self.in_channels = 0
            self.groups = kwargs.get("groups", 1)
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if kwargs.get("bias", True):
                self.bias = UninitializedParameter(device=device, dtype=dtype)
            else:
                self.register_parameter("bias", None)

        def initialize_parameters(self, input, *args, **kwargs):
            in_channels = input.size(1 if input.dim() == n + 2 else 0)
            weight, bias = self.weight, self.bias
            # the real layer's attributes, built without drawing; reset_parameters draws
            with tp.no_grad():
                tmp = _skip_init(base, in_channels, self._lazy_args, self._lazy_kwargs)
            for k, v in tmp.__dict__.items():
                if k not in ("_parameters",):
                    object.__setattr__(self, k, v)
            self._parameters = {"weight": weight, "bias": bias} if bias is not None else \
                {"weight": weight, "bias": None}
            weight.materialize(tuple(tmp.weight.shape))
            if bias is not None:
                bias.materialize(tuple(tmp.bias.shape))
            self.reset_parameters()

    LazyConv.__name__ = LazyConv.__qualname__ = "Lazy" + base.__name__
    return LazyConv


def _skip_init(cls, in_channels, args, kwargs):
    """cls(in_channels, *args, **kwargs) without touching the generator."""
    saved = cls.reset_parameters
    cls.reset_parameters = lambda self: None
    try:
        return cls(in_channels, *args, **kwargs)
    finally:
        cls.reset_parameters = saved


LazyConv1d = _lazy_conv(conv.Conv1d, 1, False)
LazyConv2d = _lazy_conv(conv.Conv2d, 2, False)
LazyConv3d = _lazy_conv(conv.Conv3d, 3, False)
LazyConvTranspose1d = _lazy_conv(conv.ConvTranspose1d, 1, True)
LazyConvTranspose2d = _lazy_conv(conv.ConvTranspose2d, 2, True)
LazyConvTranspose3d = _lazy_conv(conv.ConvTranspose3d, 3, True)


def _lazy_norm(base):
    class LazyNorm(LazyModuleMixin, base):
        cls_to_become = base

        def __init__(self, eps=1e-5, momentum=0.1, affine=None, track_running_stats=None,
                     device=None, dtype=None, *, bias=True):
            affine = base.__init__.__defaults__[2] if affine is None else affine
            track = base.__init__.__defaults__[3] if track_running_stats is None \
                else track_running_stats
            Module.__init__(self)
            self.num_features, self.eps, self.momentum = 0, eps, momentum
            self.affine, self.track_running_stats = affine, track
            kw = dict(device=device, dtype=dtype)
            if affine:
                self.weight = UninitializedParameter(**kw)
                if bias:
                    self.bias = UninitializedParameter(**kw)
                else:
                    self.register_parameter("bias", None)
            else:
                self.register_parameter("weight", None)
                self.register_parameter("bias", None)
            if track:
                self.register_buffer("running_mean", UninitializedBuffer(**kw))
                self.register_buffer("running_var", UninitializedBuffer(**kw))
                self.register_buffer("num_batches_tracked", tp.tensor(0, dtype=tp.int64))
            else:
                self.register_buffer("running_mean", None)
                self.register_buffer("running_var", None)
                self.register_buffer("num_batches_tracked", None)

        def has_uninitialized_params(self):
            from tensorplay.nn.parameter import is_lazy
            return any(is_lazy(t) for t in list(self._parameters.values()) +
                       list(self._buffers.values()) if t is not None)

        def initialize_parameters(self, input, *args, **kwargs):
            self.num_features = input.size(1)
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()

    LazyNorm.__name__ = LazyNorm.__qualname__ = "Lazy" + base.__name__
    return LazyNorm


LazyBatchNorm1d = _lazy_norm(normalization.BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(normalization.BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(normalization.BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(normalization.InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(normalization.InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(normalization.InstanceNorm3d)
