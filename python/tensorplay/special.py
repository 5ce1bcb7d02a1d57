"""tp.special: PyTorch's torch.special namespace.

The functions PyTorch computes with kernels of their own are the C++ ops
``special_<name>`` (csrc/ops/special.yaml: erfcx, i0e, i1, i1e, ndtr, ndtri, log_ndtr,
entr, xlog1py, zeta, the Bessel and Airy functions, the orthogonal polynomials); the others are PyTorch's aliases of ops that
live at the top level (gammaln is lgamma, psi is digamma, expit is sigmoid, gammainc is
igamma, ...), called through, as PyTorch's own composites call them (so a dispatch mode
sees ``lgamma`` for ``gammaln``, as it does in PyTorch).

    >>> tp.special.ndtri(tp.tensor([0.025, 0.5]))
    tensor([-1.9600,  0.0000])
"""
from tensorplay import _C

__all__ = ['airy_ai', 'bessel_j0', 'bessel_j1', 'bessel_y0', 'bessel_y1', 'chebyshev_polynomial_t',
           'chebyshev_polynomial_u', 'chebyshev_polynomial_v', 'chebyshev_polynomial_w', 'digamma', 'entr',
           'erf', 'erfc', 'erfcx', 'erfinv', 'exp2', 'expit', 'expm1', 'gammainc', 'gammaincc', 'gammaln',
           'hermite_polynomial_h', 'hermite_polynomial_he', 'i0', 'i0e', 'i1', 'i1e', 'laguerre_polynomial_l',
           'legendre_polynomial_p', 'log1p', 'log_ndtr', 'log_softmax', 'logit', 'logsumexp',
           'modified_bessel_i0', 'modified_bessel_i1', 'modified_bessel_k0', 'modified_bessel_k1',
           'multigammaln', 'ndtr', 'ndtri', 'polygamma', 'psi', 'round', 'scaled_modified_bessel_k0',
           'scaled_modified_bessel_k1', 'shifted_chebyshev_polynomial_t', 'shifted_chebyshev_polynomial_u',
           'shifted_chebyshev_polynomial_v', 'shifted_chebyshev_polynomial_w', 'sinc', 'softmax',
           'spherical_bessel_j0', 'xlog1py', 'xlogy', 'zeta']


def _export(name, doc):
    fn = getattr(_C, 'special_' + name)

    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = __name__
    wrapper.__doc__ = doc
    return wrapper


erfcx = _export('erfcx', """erfcx(input, *, out=None)

The scaled complementary error function, exp(input**2) * erfc(input).""")
i0e = _export('i0e', """i0e(input, *, out=None)

The exponentially scaled modified Bessel function of order 0, exp(-|input|) * i0(input).""")
i1 = _export('i1', """i1(input, *, out=None)

The modified Bessel function of the first kind of order 1.""")
i1e = _export('i1e', """i1e(input, *, out=None)

The exponentially scaled modified Bessel function of order 1, exp(-|input|) * i1(input).""")
ndtr = _export('ndtr', """ndtr(input, *, out=None)

The standard normal cumulative distribution function.""")
ndtri = _export('ndtri', """ndtri(input, *, out=None)

The inverse of the standard normal cumulative distribution function (the probit).""")
log_ndtr = _export('log_ndtr', """log_ndtr(input, *, out=None)

log of the standard normal cumulative distribution function, accurate in both tails.""")
entr = _export('entr', """entr(input, *, out=None)

-input * log(input) elementwise (0 at 0, -inf for negative input).""")
xlog1py = _export('xlog1py', """xlog1py(input, other, *, out=None)

input * log1p(other), 0 where input is 0.""")
zeta = _export('zeta', """zeta(input, other, *, out=None)

The Hurwitz zeta function sum_k (k + other) ** -input.""")
bessel_j0 = _export('bessel_j0', """bessel_j0(input, *, out=None)

The Bessel function of the first kind of order 0.""")
bessel_j1 = _export('bessel_j1', """bessel_j1(input, *, out=None)

The Bessel function of the first kind of order 1.""")

bessel_y0 = _export('bessel_y0', """bessel_y0(input, *, out=None)

The Bessel function of the second kind of order 0.""")
bessel_y1 = _export('bessel_y1', """bessel_y1(input, *, out=None)

The Bessel function of the second kind of order 1.""")
modified_bessel_i0 = _export('modified_bessel_i0', """modified_bessel_i0(input, *, out=None)

The modified Bessel function of the first kind of order 0.""")
modified_bessel_i1 = _export('modified_bessel_i1', """modified_bessel_i1(input, *, out=None)

The modified Bessel function of the first kind of order 1.""")
modified_bessel_k0 = _export('modified_bessel_k0', """modified_bessel_k0(input, *, out=None)

The modified Bessel function of the second kind of order 0.""")
modified_bessel_k1 = _export('modified_bessel_k1', """modified_bessel_k1(input, *, out=None)

The modified Bessel function of the second kind of order 1.""")
scaled_modified_bessel_k0 = _export('scaled_modified_bessel_k0', """scaled_modified_bessel_k0(input, *, out=None)

The scaled modified Bessel function of the second kind of order 0, exp(input) * k0(input).""")
scaled_modified_bessel_k1 = _export('scaled_modified_bessel_k1', """scaled_modified_bessel_k1(input, *, out=None)

The scaled modified Bessel function of the second kind of order 1, exp(input) * k1(input).""")
spherical_bessel_j0 = _export('spherical_bessel_j0', """spherical_bessel_j0(input, *, out=None)

The spherical Bessel function of the first kind of order 0, sin(input) / input.""")
airy_ai = _export('airy_ai', """airy_ai(input, *, out=None)

The Airy function Ai(input).""")

# orthogonal polynomials: input and n are tensors or Python numbers (not both numbers); n is
# truncated to an integer, and negative n give 0
def _export_poly(name, doc):
    fn = getattr(_C, 'special_' + name)

    def wrapper(*args, **kwargs):
        if len(args) + len(kwargs) >= 2:
            x = args[0] if args else kwargs.get('x')
            n = args[1] if len(args) > 1 else kwargs.get('n')
            if not isinstance(x, _C.Tensor) and not isinstance(n, _C.Tensor):
                raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                                f"({type(x).__name__}, {type(n).__name__}), but expected one of:\n"
                                " * (Tensor x, Tensor n, *, Tensor out = None)\n"
                                " * (Number x, Tensor n, *, Tensor out = None)\n"
                                " * (Tensor x, Number n, *, Tensor out = None)")
        return fn(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = __name__
    wrapper.__doc__ = doc
    return wrapper


chebyshev_polynomial_t = _export_poly('chebyshev_polynomial_t', """chebyshev_polynomial_t(input, n, *, out=None)

The Chebyshev polynomial of the first kind T_n(input).""")
chebyshev_polynomial_u = _export_poly('chebyshev_polynomial_u', """chebyshev_polynomial_u(input, n, *, out=None)

The Chebyshev polynomial of the second kind U_n(input).""")
chebyshev_polynomial_v = _export_poly('chebyshev_polynomial_v', """chebyshev_polynomial_v(input, n, *, out=None)

The Chebyshev polynomial of the third kind V_n(input).""")
chebyshev_polynomial_w = _export_poly('chebyshev_polynomial_w', """chebyshev_polynomial_w(input, n, *, out=None)

The Chebyshev polynomial of the fourth kind W_n(input).""")
shifted_chebyshev_polynomial_t = _export_poly('shifted_chebyshev_polynomial_t', """shifted_chebyshev_polynomial_t(input, n, *, out=None)

The shifted Chebyshev polynomial of the first kind T_n(2 input - 1).""")
shifted_chebyshev_polynomial_u = _export_poly('shifted_chebyshev_polynomial_u', """shifted_chebyshev_polynomial_u(input, n, *, out=None)

The shifted Chebyshev polynomial of the second kind U_n(2 input - 1).""")
shifted_chebyshev_polynomial_v = _export_poly('shifted_chebyshev_polynomial_v', """shifted_chebyshev_polynomial_v(input, n, *, out=None)

The shifted Chebyshev polynomial of the third kind V_n(2 input - 1).""")
shifted_chebyshev_polynomial_w = _export_poly('shifted_chebyshev_polynomial_w', """shifted_chebyshev_polynomial_w(input, n, *, out=None)

The shifted Chebyshev polynomial of the fourth kind W_n(2 input - 1).""")
hermite_polynomial_h = _export_poly('hermite_polynomial_h', """hermite_polynomial_h(input, n, *, out=None)

The physicists' Hermite polynomial H_n(input).""")
hermite_polynomial_he = _export_poly('hermite_polynomial_he', """hermite_polynomial_he(input, n, *, out=None)

The probabilists' Hermite polynomial He_n(input).""")
laguerre_polynomial_l = _export_poly('laguerre_polynomial_l', """laguerre_polynomial_l(input, n, *, out=None)

The Laguerre polynomial L_n(input).""")
legendre_polynomial_p = _export_poly('legendre_polynomial_p', """legendre_polynomial_p(input, n, *, out=None)

The Legendre polynomial P_n(input).""")

# --------------------------------------------------------------------- aliases
def gammaln(input, *, out=None):
    """log|Gamma(input)| (alias of tp.lgamma)."""
    return _C.lgamma(input, out=out)


def digamma(input, *, out=None):
    """The logarithmic derivative of Gamma (alias of tp.digamma)."""
    return _C.digamma(input, out=out)


def psi(input, *, out=None):
    """Alias of tp.special.digamma."""
    return _C.digamma(input, out=out)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma (alias of tp.polygamma)."""
    return _C.polygamma(n, input, out=out)


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p (alias of tp.mvlgamma)."""
    return _C.mvlgamma(input, p, out=out)


def erf(input, *, out=None):
    """The error function (alias of tp.erf)."""
    return _C.erf(input, out=out)


def erfc(input, *, out=None):
    """The complementary error function (alias of tp.erfc)."""
    return _C.erfc(input, out=out)


def erfinv(input, *, out=None):
    """The inverse error function (alias of tp.erfinv)."""
    return _C.erfinv(input, out=out)


def expit(input, *, out=None):
    """The logistic sigmoid 1 / (1 + exp(-input)) (alias of tp.sigmoid)."""
    return _C.sigmoid(input, out=out)


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given (alias of tp.logit)."""
    return _C.logit(input, eps, out=out)


def exp2(input, *, out=None):
    """2 ** input (alias of tp.exp2)."""
    return _C.exp2(input, out=out)


def expm1(input, *, out=None):
    """exp(input) - 1, accurate near 0 (alias of tp.expm1)."""
    return _C.expm1(input, out=out)


def log1p(input, *, out=None):
    """log(1 + input), accurate near 0 (alias of tp.log1p)."""
    return _C.log1p(input, out=out)


def i0(input, *, out=None):
    """The modified Bessel function of the first kind of order 0 (alias of tp.i0)."""
    return _C.i0(input, out=out)


def sinc(input, *, out=None):
    """The normalized sinc, sin(pi input) / (pi input) (alias of tp.sinc)."""
    return _C.sinc(input, out=out)


def round(input, *, decimals=0, out=None):
    """Rounds half to even (alias of tp.round)."""
    return _C.round(input, decimals=decimals, out=out)


def xlogy(input, other, *, out=None):
    """input * log(other), 0 where input is 0 (alias of tp.xlogy)."""
    return _C.xlogy(input, other, out=out)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function (alias of tp.igamma)."""
    return _C.igamma(input, other, out=out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function (alias of tp.igammac)."""
    return _C.igammac(input, other, out=out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over dim, computed stably (alias of tp.logsumexp)."""
    import tensorplay as tp
    r = tp.logsumexp(input, dim, keepdim)
    if out is None:
        return r
    _C._linalg_write_out(r, out=out)  # resized to the result when its shape differs
    return out


def softmax(input, dim, *, dtype=None):
    """softmax over dim (tp.softmax)."""
    import tensorplay as tp
    return tp.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax over dim (tp.log_softmax)."""
    import tensorplay as tp
    return tp.log_softmax(input, dim, dtype=dtype)
