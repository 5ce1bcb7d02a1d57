"""tp.fft: the real-valued helpers of PyTorch's torch.fft (sample frequencies and the shifts
that centre a spectrum). The transforms themselves need complex tensors, which TensorPlay
does not have yet."""
from tensorplay import _C
from tensorplay._creation import arange as _arange

__all__ = ['fftfreq', 'rfftfreq', 'fftshift', 'ifftshift']


def _float_dtype(name, dtype):
    dtype = dtype or _C.get_default_dtype()
    if dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    return dtype


def _scale(n, d):
    """1 / (n d) as IEEE division gives it (inf for n = 0)."""
    return 1.0 / (n * d) if n * d else float('inf')


def _finish(result, out, requires_grad):
    if out is not None:
        out.copy_(result)
        return out
    return result.requires_grad_(requires_grad) if requires_grad else result


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``: 0, 1, ...,
    then the negative frequencies, all divided by n*d.

        >>> tp.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    dtype = _float_dtype('fftfreq', dtype)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    k = _arange(n, dtype=dtype, device=device)
    half = (n + 1) // 2
    k = _C.cat([k[:half], k[half:] - n]) if n > half else k
    return _finish(k.mul(_scale(n, d)), out, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of an ``n``-point real FFT: 0 ... n//2, divided
    by n*d."""
    dtype = _float_dtype('rfftfreq', dtype)
    size = int(n / 2) + 1  # C's truncating division, as PyTorch computes it
    if size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {size}: [{size}]")
    k = _arange(size, dtype=dtype, device=device)
    return _finish(k.mul(_scale(n, d)), out, requires_grad)


def _shift(input, dim, shift_of):
    if dim is None:
        dims = list(range(input.dim()))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    return input.roll([shift_of(input.shape[d]) for d in dims], dims)


def fftshift(input, dim=None):
    """``input`` rolled so that frequency zero sits in the middle of each dimension in ``dim``
    (all by default)."""
    return _shift(input, dim, lambda n: n // 2)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    return _shift(input, dim, lambda n: (n + 1) // 2)
