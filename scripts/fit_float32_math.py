"""Fits the polynomial coefficients of csrc/kernels/functors/vec_math.h (Note [float32 math]).

Each polynomial approximates the part of a function left after the leading terms are taken
out exactly, on the reduced range its kernel feeds it. The fit is a near-minimax one:
Lawson's iteratively reweighted least squares on a dense Chebyshev grid, with the target
values computed in mpmath at 50 digits (the float64 differences cancel too much near 0).
Coefficients are rounded to the precision the kernel evaluates in (float or double) and
the error of the rounded polynomial is reported relative to the function's value.

    python scripts/fit_float32_math.py
"""
import mpmath
import numpy as np

mpmath.mp.dps = 50


def grid(a, b, n=1500):
    k = np.arange(n)
    return 0.5 * (a + b) + 0.5 * (b - a) * np.cos(np.pi * (k + 0.5) / n)


def lawson(xs, target, weight, degree, iters=200):
    """Coefficients c of sum c_i x^i minimising max |weight * (poly - target)|."""
    A = np.vander(xs, degree + 1, increasing=True) * weight[:, None]
    b = target * weight
    w = np.full(len(xs), 1.0 / len(xs))
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(A * sw[:, None], b * sw, rcond=None)
        err = np.abs(A @ c - b)
        w = w * err
        w /= w.sum()
    return c


def fit(name, a, b, reduced, full, scale, degree, dtype):
    """reduced(x): the mpf value the polynomial approximates at x; full(x): the function's
    value; scale(x): the factor the polynomial is multiplied by in the kernel (its error
    reaches the result times scale / full)."""
    xs = grid(a, b)
    xs = xs[xs != 0]
    target = np.array([float(reduced(mpmath.mpf(x))) for x in xs])
    weight = np.array([float(scale(mpmath.mpf(x)) / full(mpmath.mpf(x))) for x in xs])
    c = lawson(xs, target, np.abs(weight), degree).astype(dtype)
    fine = grid(a, b, 20000)
    fine = fine[fine != 0]
    approx = np.polyval(c[::-1].astype(np.float64), fine)
    exact = np.array([float(reduced(mpmath.mpf(x))) for x in fine])
    wf = np.array([float(scale(mpmath.mpf(x)) / full(mpmath.mpf(x))) for x in fine])
    rel = np.max(np.abs((approx - exact) * wf))
    print(f'{name}: degree {degree} on [{a:.6g}, {b:.6g}] ({np.dtype(dtype).name}), '
          f'max relative error of the result {rel:.3g} (2^{np.log2(rel):.1f})')
    fmt = (lambda v: f'{float(v):.9g}f') if dtype == np.float32 else (lambda v: f'{float(v):.17g}')
    print('  ' + ', '.join(fmt(v) for v in c))
    return c


def main():
    ln2 = float(mpmath.log(2))
    # float exp: e^r = 1 + r + r^2 P(r), |r| <= ln2/2 (+ the rounding of n)
    h = ln2 / 2 * 1.002
    fit('exp P(r)', -h, h, lambda r: (mpmath.exp(r) - 1 - r) / r**2, mpmath.exp,
        lambda r: r**2, 5, np.float32)
    # float log: log(1 + f) = f - f^2/2 + f^3 R(f), 1 + f in [sqrt(1/2), sqrt(2))
    lo, hi = float(mpmath.sqrt(0.5)) - 1, float(mpmath.sqrt(2)) - 1
    fit('log R(f)', lo * 1.0001, hi * 1.0001, lambda f: (mpmath.log1p(f) - f + f**2 / 2) / f**3,
        mpmath.log1p, lambda f: f**3, 8, np.float32)
    # double expm1 (tanh, sigmoid): e^r - 1 = r + r^2 Q(r), |r| <= ln2/2
    fit('expm1 Q(r)', -h, h, lambda r: (mpmath.expm1(r) - r) / r**2, mpmath.expm1,
        lambda r: r**2, 6, np.float64)
    # float sin / cos on |r| <= pi/4 (the fast path for |x| <= 800)
    q = float(mpmath.pi) / 4 * 1.001
    xs_sin = lambda z: mpmath.sqrt(z)
    fit('float sin S(z), z = r^2', 1e-12, q * q,
        lambda z: (mpmath.sin(xs_sin(z)) - xs_sin(z)) / xs_sin(z)**3,
        lambda z: mpmath.sin(xs_sin(z)), lambda z: xs_sin(z)**3, 3, np.float32)
    fit('float cos C(z), z = r^2', 1e-12, q * q,
        lambda z: (mpmath.cos(xs_sin(z)) - 1 + z / 2) / z**2,
        lambda z: mpmath.cos(xs_sin(z)), lambda z: z**2, 3, np.float32)
    # double sin / cos on |r| <= pi/4: sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2)
    q = float(mpmath.pi) / 4 * 1.001
    xs_sin = lambda z: mpmath.sqrt(z)
    fit('sin S(z), z = r^2', 1e-12, q * q,
        lambda z: (mpmath.sin(xs_sin(z)) - xs_sin(z)) / xs_sin(z)**3,
        lambda z: mpmath.sin(xs_sin(z)), lambda z: xs_sin(z)**3, 3, np.float64)
    fit('cos C(z), z = r^2', 1e-12, q * q,
        lambda z: (mpmath.cos(xs_sin(z)) - 1 + z / 2) / z**2,
        lambda z: mpmath.cos(xs_sin(z)), lambda z: z**2, 3, np.float64)


if __name__ == '__main__':
    main()
