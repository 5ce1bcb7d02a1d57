"""Top-level names PyTorch keeps beside torch.nn.functional and other namespaces: the window
functions, nn ops under their ATen signatures (tp.dropout(input, p, train), losses with an
integer ``reduction``), and small runtime queries (get_device, typename, range, fill, ...)."""
import math
import warnings

from tensorplay import _C, backends, linalg
from tensorplay.nn import functional as F
from tensorplay._creation import arange
from tensorplay.amp import autocast_mode
from tensorplay._shape_ops import vstack
from tensorplay._statistics import _require_tensor

Tensor = _C.Tensor
_REDUCTIONS = {1: 'mean', 2: 'sum'}


# ---- windows --------------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, device, requires_grad, values):
    """The window of ``window_length`` points; ``values(n, N)`` gives point n of a symmetric
    window of N points (periodic windows are the first window_length of length+1)."""
    dtype = dtype or _C.get_default_dtype()
    if dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        out = _C.ones(window_length, dtype=dtype, device=device)
    else:
        N = window_length + 1 if periodic else window_length
        n = arange(window_length, dtype=_C.float64, device=device)
        out = values(n, N).to(dtype)
    return out.requires_grad_(requires_grad) if requires_grad else out


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device,
                          requires_grad=requires_grad, _name='hann_window')


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None,
                   device=None, pin_memory=False, requires_grad=False, _name='hamming_window'):
    """The generalised Hamming window: alpha - beta cos(2 pi n / (N - 1))."""
    return _window(_name, window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: alpha - beta * (n * (2 * math.pi / (N - 1))).cos())


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    def values(n, N):
        step = n * (2 * math.pi / (N - 1))
        return 0.42 - 0.5 * step.cos() + 0.08 * (2 * step).cos()
    return _window('blackman_window', window_length, periodic, dtype, device, requires_grad, values)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The Bartlett (triangular) window: 1 - |2n / (N - 1) - 1|."""
    return _window('bartlett_window', window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1 - (n * (2.0 / (N - 1)) - 1).abs())


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """The Kaiser window: I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)."""
    def values(n, N):
        r = n * (2.0 / (N - 1)) - 1
        return _C.i0(beta * (1 - r * r).clamp(min=0).sqrt()) / _C.i0(_C.full((), beta, dtype=_C.float64))
    return _window('kaiser_window', window_length, periodic, dtype, device, requires_grad, values)


# ---- nn ops under their ATen signatures ------------------------------------------------------

def _reduction(value):
    """ATen's integer reduction: 1 mean, 2 sum, anything else none (as PyTorch reads it)."""
    return _REDUCTIONS.get(value, 'none')


def dropout(input, p, train):
    """F.dropout with ``p`` and ``train`` required (PyTorch's top-level form)."""
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    F.dropout(input, p, train, inplace=True)
    return input


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    F.alpha_dropout(input, p, train, inplace=True)
    return input


def feature_dropout(input, p, train):
    """Dropout of whole channels (dim 1) of an (N, C, ...) input."""
    return _feature(F.dropout, input, p, train)


def feature_dropout_(input, p, train):
    input.copy_(feature_dropout(input, p, train))
    return input


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    F.feature_alpha_dropout(input, p, train, inplace=True)
    return input


def _feature(fn, input, p, train):
    if not train or p == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    mask = fn(input.new_ones(shape), p, True)
    return input * mask


def celu(input, alpha=1.0):
    return F.celu(input, alpha)


def celu_(input, alpha=1.0):
    F.celu(input, alpha, inplace=True)
    return input


def selu(input):
    return F.selu(input)


def selu_(input):
    F.selu(input, inplace=True)
    return input


def threshold(input, threshold, value):
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    F.threshold(input, threshold, value, inplace=True)
    return input


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    F.rrelu(input, lower, upper, training, inplace=True)
    return input


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """F.embedding with the weight first (``padding_idx`` -1: none)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
                  cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


# ---- small runtime queries and conveniences --------------------------------------------------

def get_device(input):
    """The CUDA ordinal of ``input``'s device, -1 for a CPU tensor."""
    _require_tensor('get_device', 'input', input)
    return input.get_device()


def is_inference(input):
    _require_tensor('is_inference', 'input', input)
    return input.is_inference()


def is_signed(input):
    _require_tensor('is_signed', 'input', input)
    return input.is_signed()


def typename(obj):
    """A readable type name: 'tensorplay.FloatTensor' for tensors, the qualified class name
    otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    name = getattr(obj, '__qualname__', None) or getattr(obj, '__name__', None)
    module = getattr(obj, '__module__', '') or ''
    if name is None:  # an instance: name its class
        name, module = type(obj).__qualname__, type(obj).__module__ or ''
    return name if module in ('builtins', '') else f'{module}.{name}'


def fill(input, value):
    """A new tensor shaped and typed like ``input``, every element ``value`` (a number or a
    0-dim tensor)."""
    _require_tensor('fill', 'input', input)
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        result = value.to(input.dtype).expand(input.shape).clone()
    else:
        result = input.detach().clone().fill_(value)
    if input.requires_grad:  # input's gradient is zeros, not None
        result = result + (input * 0).nan_to_num(0.0, 0.0, 0.0)
    return result


def row_stack(tensors, *, out=None):
    """tp.vstack's other name."""
    return vstack(tensors, out=out)


def chain_matmul(*matrices, out=None):
    """Deprecated: tp.linalg.multi_dot(matrices)."""
    warnings.warn("tp.chain_matmul is deprecated: use tp.linalg.multi_dot, which takes a list "
                  "of two or more tensors.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return linalg.multi_dot(list(matrices), out=out)


def range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):
    """Deprecated: the values start, start + step, ... up to and including ``end`` (use
    tp.arange, which excludes it); default float dtype."""
    warnings.warn("tp.range is deprecated: unlike Python's range it includes `end`; use "
                  "tp.arange, which stops before `end`.", UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    dtype = dtype or _C.get_default_dtype()
    values = arange(count, dtype=_C.float64, device=device) * step + start
    result = values.to(dtype)
    if out is not None:
        out.copy_(result)
        return out
    return result.requires_grad_(requires_grad) if requires_grad else result


def get_deterministic_debug_mode():
    """0 (default), 1 (warn) or 2 (error): how non-deterministic ops are treated."""
    if not backends.are_deterministic_algorithms_enabled():
        return 0
    return 1 if backends.is_deterministic_algorithms_warn_only_enabled() else 2


def set_deterministic_debug_mode(debug_mode):
    """Sets the mode get_deterministic_debug_mode reports: 0/'default', 1/'warn', 2/'error'."""
    if isinstance(debug_mode, str):
        names = {'default': 0, 'warn': 1, 'error': 2}
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = names[debug_mode]
    if not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    backends.use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def is_anomaly_enabled():
    """Whether autograd's anomaly detection is on (see tp.autograd.detect_anomaly)."""
    return _C._is_anomaly_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    """Turns autograd's anomaly detection on or off."""
    _C._set_anomaly_enabled(enabled, check_nan)


# ---- the deprecated per-device autocast accessors ---------------------------------------------

def _deprecated_autocast(name, replacement, call):
    def fn(*args):
        warnings.warn(f"tp.{name} is deprecated: use tp.{replacement}.", DeprecationWarning, stacklevel=2)
        return call(*args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Deprecated: tp.{replacement}."
    return fn


get_autocast_cpu_dtype = _deprecated_autocast('get_autocast_cpu_dtype', "get_autocast_dtype('cpu')",
                                              lambda: autocast_mode.get_autocast_dtype('cpu'))
set_autocast_cpu_dtype = _deprecated_autocast('set_autocast_cpu_dtype', "set_autocast_dtype('cpu', dtype)",
                                              lambda dtype: autocast_mode.set_autocast_dtype('cpu', dtype))
is_autocast_cpu_enabled = _deprecated_autocast('is_autocast_cpu_enabled', "is_autocast_enabled('cpu')",
                                               lambda: autocast_mode.is_autocast_enabled('cpu'))
set_autocast_cpu_enabled = _deprecated_autocast(
    'set_autocast_cpu_enabled', "set_autocast_enabled('cpu', enabled)",
    lambda enabled: autocast_mode.set_autocast_enabled('cpu', enabled))
get_autocast_gpu_dtype = _deprecated_autocast('get_autocast_gpu_dtype', "get_autocast_dtype('cuda')",
                                              lambda: autocast_mode.get_autocast_dtype('cuda'))
set_autocast_gpu_dtype = _deprecated_autocast('set_autocast_gpu_dtype', "set_autocast_dtype('cuda', dtype)",
                                              lambda dtype: autocast_mode.set_autocast_dtype('cuda', dtype))
