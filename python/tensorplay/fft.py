"""tp.fft: PyTorch's torch.fft. The transforms compose three primitives (``_fft_c2c``,
``_fft_r2c``, ``_fft_c2r``; csrc/ops/fft/, pocketfft on the CPU, cuFFT on CUDA) with the
resizing (``n=`` / ``s=``), conjugation and normalisation of each public function, as
PyTorch's do, so results match PyTorch's values, dtypes and strides."""
import functools
import re

from tensorplay import _C
from tensorplay._creation import arange as _arange

__all__ = ['fft', 'ifft', 'fft2', 'ifft2', 'fftn', 'ifftn',
           'rfft', 'irfft', 'rfft2', 'irfft2', 'rfftn', 'irfftn',
           'hfft', 'ihfft', 'hfft2', 'ihfft2', 'hfftn', 'ihfftn',
           'fftfreq', 'rfftfreq', 'fftshift', 'ifftshift']

# normalisation modes of the primitives: none, 1/sqrt(n), 1/n
_NONE, _ROOT_N, _BY_N = 0, 1, 2


# the one-dimensional transforms with complex results check out= first (the n-dimensional
# ones check their dims first, as PyTorch's do)
_COMPLEX_RESULT = {'fft', 'ifft', 'rfft', 'ihfft'}


def _named(func):
    """Errors of the transform name it ("fft: Invalid number of data points (0) specified"),
    PyTorch's messages otherwise."""
    name = func.__name__

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        out = kwargs.get('out')
        if isinstance(out, _C.Tensor) and name in _COMPLEX_RESULT and not out.dtype.is_complex:
            raise RuntimeError(f"{name} expects a complex output tensor, but got {_dtype_name(out.dtype)}")
        try:
            return func(*args, **kwargs)
        except (RuntimeError, IndexError, ValueError) as e:
            msg = str(e)
            if re.search(rf"\b{name}\b", msg):
                raise
            raise type(e)(f"{name}: {msg}") from None
    return wrapped


def _norm(norm, forward):
    """The primitive's mode for the public ``norm`` string of a forward or inverse transform."""
    if norm is None or norm == 'backward':
        return _NONE if forward else _BY_N
    if norm == 'ortho':
        return _ROOT_N
    if norm == 'forward':
        return _BY_N if forward else _NONE
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(name, x, require_complex):
    """``x`` as a tensor the transforms take: integers and bools in the default float dtype,
    then (require_complex) its complex twin. Half and bfloat16 are refused as PyTorch's CPU
    FFT refuses them."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    dt = x.dtype
    if dt in (_C.float16, _C.bfloat16):
        raise RuntimeError(f"Unsupported dtype {'Half' if dt == _C.float16 else 'BFloat16'}")
    if not (dt.is_floating_point or dt.is_complex):
        x = x.to(_C.get_default_dtype())
    if require_complex and not x.dtype.is_complex:
        x = x.to(_C.complex64 if x.dtype == _C.float32 else _C.complex128)
    return x


def _require_real(name, x):
    if isinstance(x, _C.Tensor) and x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {_dtype_name(x.dtype)}")


def _dtype_name(dt):
    return {_C.complex64: 'ComplexFloat', _C.complex128: 'ComplexDouble'}.get(dt, str(dt))


def _wrap(dim, ndim):
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = ndim
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _resize(x, dims, sizes):
    """``x`` cut or zero-padded at the end of each of ``dims`` to ``sizes`` (PyTorch's n= and
    s=). Padding goes through the real view of a complex tensor, which every device has."""
    pad = [0] * (2 * x.dim())
    need_pad = False
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if n == -1 or n == have:
            continue
        if n < have:
            x = x.narrow(d, 0, n)
        else:
            pad[2 * (x.dim() - 1 - d) + 1] = n - have
            need_pad = True
    if need_pad:
        if x.dtype.is_complex:
            x = _C.view_as_complex(_C.constant_pad_nd(_C.view_as_real(x.resolve_conj()), [0, 0] + pad, 0.0))
        else:
            x = _C.constant_pad_nd(x, pad, 0.0)
    return x


def _check_n(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _write_out(result, out, name=None):
    if out is None:
        return result
    if not isinstance(out, _C.Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if result.dtype.is_complex and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got {_dtype_name(out.dtype)}")
    if out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    out.resize_(result.shape)
    out.copy_(result)
    return out


def _conj(x):
    return _C.conj_physical(x)


# ---------------------------------------------------------------- one-dimensional


def _fft_c2c_1d(name, input, n, dim, norm, forward, out):
    x = _promote(name, input, False)
    d = _wrap(dim, x.dim())
    _check_n(n)
    if n is not None:
        x = _resize(x, [d], [n])
    mode = _norm(norm, forward)
    if x.dtype.is_complex:
        r = _C._fft_c2c(x, [d], mode, forward)
    else:  # a real signal: its full spectrum from the one-sided one
        r = _C._fft_r2c(x, [d], mode, False)
        if not forward:
            r = _conj(r)
    return _write_out(r, out, name)


@_named
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The one-dimensional discrete Fourier transform of ``input`` along ``dim``; ``n`` cuts
    or zero-pads the signal first; ``norm`` is "backward" (no scaling, the default),
    "ortho" (1/sqrt(n)) or "forward" (1/n).

        >>> tp.fft.fft(tp.arange(4))
        tensor([ 6.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    return _fft_c2c_1d('fft', input, n, dim, norm, True, out)


@_named
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of fft: the one-dimensional inverse DFT along ``dim`` (1/n scaling by
    default)."""
    return _fft_c2c_1d('ifft', input, n, dim, norm, False, out)


@_named
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The DFT of a real signal along ``dim``: its non-negative frequencies only
    (n // 2 + 1 of them)."""
    _require_real('rfft', input)
    x = _promote('rfft', input, False)
    d = _wrap(dim, x.dim())
    _check_n(n)
    if n is not None:
        x = _resize(x, [d], [n])
    return _write_out(_C._fft_r2c(x, [d], _norm(norm, True), True), out, 'rfft')


@_named
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: a real signal of ``n`` points (default 2 * (m - 1)) from its
    one-sided spectrum along ``dim``."""
    x = _promote('irfft', input, True)
    d = _wrap(dim, x.dim())
    _check_n(n)
    last = n if n is not None else 2 * (x.shape[d] - 1)
    _check_n(last)
    x = _resize(x, [d], [last // 2 + 1])
    return _write_out(_C._fft_c2r(x, [d], _norm(norm, False), last), out, 'irfft')


@_named
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The DFT of a signal with Hermitian symmetry, given by its one-sided half along ``dim``:
    a real result of ``n`` points (default 2 * (m - 1))."""
    x = _promote('hfft', input, True)
    d = _wrap(dim, x.dim())
    _check_n(n)
    last = n if n is not None else 2 * (x.shape[d] - 1)
    _check_n(last)
    x = _resize(x, [d], [last // 2 + 1])
    return _write_out(_C._fft_c2r(_conj(x), [d], _norm(norm, True), last), out, 'hfft')


@_named
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the one-sided half of the inverse DFT of a real signal."""
    _require_real('ihfft', input)
    x = _promote('ihfft', input, False)
    d = _wrap(dim, x.dim())
    _check_n(n)
    if n is not None:
        x = _resize(x, [d], [n])
    return _write_out(_conj(_C._fft_r2c(x, [d], _norm(norm, False), True)), out, 'ihfft')


# ---------------------------------------------------------------- n-dimensional


def _canonical(name, x, s, dim):
    """PyTorch's rules for (s, dim): the dims transformed and their sizes (-1: as is)."""
    if isinstance(dim, int):
        dim = [dim]
    if s is not None:
        s = [int(v) for v in s]
    if dim is not None:
        dims = [_wrap(int(d), x.dim()) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.dim():
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.dim()} dimensions.")
        dims = list(range(x.dim() - len(s), x.dim()))
    else:
        dims = list(range(x.dim()))
    if s is None:
        s = [x.shape[d] for d in dims]
    else:
        s = [x.shape[d] if v == -1 else v for d, v in zip(dims, s)]
    for v in s:
        _check_n(v)
    return dims, s


def _fftn(name, input, s, dim, norm, forward, out):
    x = _promote(name, input, True)
    dims, sizes = _canonical(name, x, s, dim)
    x = _resize(x, dims, sizes)
    if not dims:
        return _write_out(x.clone() if x is input else x, out, name)
    return _write_out(_C._fft_c2c(x, dims, _norm(norm, forward), forward), out, name)


@_named
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT over ``dim`` (all dims by default; the last len(s) when only
    ``s`` is given), each dim cut or zero-padded to ``s`` first."""
    return _fftn('fftn', input, s, dim, norm, True, out)


@_named
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of fftn."""
    return _fftn('ifftn', input, s, dim, norm, False, out)


@_named
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional DFT (fftn over the last two dims by default)."""
    return _fftn('fft2', input, s, dim, norm, True, out)


@_named
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of fft2."""
    return _fftn('ifft2', input, s, dim, norm, False, out)


def _rfftn(name, input, s, dim, norm, out):
    _require_real(name, input)
    x = _promote(name, input, False)
    dims, sizes = _canonical(name, x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    return _write_out(_C._fft_r2c(x, dims, _norm(norm, True), True), out, name)


@_named
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT of a real signal; the last transformed dim keeps its
    non-negative frequencies only."""
    return _rfftn('rfftn', input, s, dim, norm, out)


@_named
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The two-dimensional DFT of a real signal (rfftn over the last two dims)."""
    return _rfftn('rfft2', input, s, dim, norm, out)


def _c2r_args(name, input, s, dim):
    x = _promote(name, input, True)
    dims, sizes = _canonical(name, x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last = sizes[-1] if s is not None and list(s)[-1] != -1 else 2 * (x.shape[dims[-1]] - 1)
    _check_n(last)
    sizes = sizes[:-1] + [last // 2 + 1]
    return _resize(x, dims, sizes), dims, last


def _irfftn(name, input, s, dim, norm, out):
    x, dims, last = _c2r_args(name, input, s, dim)
    return _write_out(_C._fft_c2r(x, dims, _norm(norm, False), last), out, name)


@_named
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: a real signal from its one-sided N-dimensional spectrum (the
    last dim's output length s[-1], default 2 * (m - 1))."""
    return _irfftn('irfftn', input, s, dim, norm, out)


@_named
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2."""
    return _irfftn('irfft2', input, s, dim, norm, out)


def _hfftn(name, input, s, dim, norm, out):
    x, dims, last = _c2r_args(name, input, s, dim)
    mode = _norm(norm, True)
    if len(dims) > 1:  # the other dims first: their transforms leave each last-dim line Hermitian
        x = _C._fft_c2c(x, dims[:-1], mode, True)
    return _write_out(_C._fft_c2r(_conj(x), dims[-1:], mode, last), out, name)


@_named
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-dimensional DFT of a Hermitian-symmetric signal given by its one-sided half in
    the last transformed dim: a real result."""
    return _hfftn('hfftn', input, s, dim, norm, out)


@_named
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """hfftn over the last two dims."""
    return _hfftn('hfft2', input, s, dim, norm, out)


def _ihfftn(name, input, s, dim, norm, out):
    _require_real(name, input)
    x = _promote(name, input, False)
    dims, sizes = _canonical(name, x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = _resize(x, dims, sizes)
    mode = _norm(norm, False)
    r = _conj(_C._fft_r2c(x, dims[-1:], mode, True))
    if len(dims) > 1:
        r = _C._fft_c2c(r, dims[:-1], mode, False)
    return _write_out(r, out, name)


@_named
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the one-sided half of the N-dimensional inverse DFT of a real
    signal."""
    return _ihfftn('ihfftn', input, s, dim, norm, out)


@_named
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """ihfftn over the last two dims."""
    return _ihfftn('ihfft2', input, s, dim, norm, out)


# ---------------------------------------------------------------- frequencies and shifts


def _float_dtype(name, dtype):
    dtype = dtype or _C.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex):
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
