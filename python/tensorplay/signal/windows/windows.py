"""The window functions of torch.signal.windows: each returns ``M`` points of a window as a
float32 or float64 tensor; ``sym=False`` gives the periodic window (one point of a window of
length M + 1 dropped), as spectral analysis wants. Same keyword arguments and checks as
PyTorch (``layout`` may only be the strided default)."""
import math
from collections.abc import Iterable

import tensorplay as tp

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _check(name, M, dtype, layout):
    """PyTorch's checks common to every window; returns the dtype to use."""
    if dtype is None:
        dtype = tp.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and str(layout) != "torch.strided":
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (tp.float32, tp.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M, dtype, device, requires_grad):
    """The window of length 0 or 1 (empty / a single 1), or None."""
    if M == 0:
        return tp.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return tp.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _points(start, step, M, dtype, device, requires_grad):
    """M evenly spaced points start, start + step, ... (PyTorch's linspace over them)."""
    return tp.linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device,
                       requires_grad=requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The exponential (Poisson) window: exp(-|n - center| / tau)."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return tp.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _points(-center / tau, 1 / tau, M, dtype, device, requires_grad)
    return tp.exp(-tp.abs(k))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The cosine (sine) window: sin(pi (n + 0.5) / M)."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return tp.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return tp.sin(_points(0.5 * step, step, M, dtype, device, requires_grad))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Gaussian window: exp(-((n - center) / std)^2 / 2)."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return tp.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = _points(start * scale, scale, M, dtype, device, requires_grad)
    return tp.exp(-k ** 2)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Kaiser window: I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    b = tp.tensor(beta, dtype=dtype, device=device)
    step = 2.0 * b / (M if not sym else M - 1)
    end = tp.minimum(b, -b + (M - 1) * step)
    k = tp.linspace(float(-b), float(end), M, dtype=dtype, device=device, requires_grad=requires_grad)
    return tp.i0(tp.sqrt(b * b - tp.pow(k, 2))) / tp.i0(b)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The generalized cosine window: sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    dtype = _check("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0.0, step, M, dtype, device, requires_grad)
    a_i = tp.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                    requires_grad=requires_grad)
    i = tp.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device)
    return (a_i.unsqueeze(-1) * tp.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The generalized Hamming window: alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (general_hamming with alpha = 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (general_hamming with alpha = 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (general_cosine with a = [0.42, 0.5, 0.08])."""
    dtype = _check("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window: 1 - |2n / (M - 1) - 1|."""
    dtype = _check("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    k = _points(-1.0, 2 / (M if not sym else M - 1), M, dtype, device, requires_grad)
    return 1 - tp.abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          layout=layout, device=device, requires_grad=requires_grad)
