"""Coefficients of R(t) = lgamma(2.5 + t) / (0.5 + t) on [-1/2, 1/2] for the vectorised float32
lgamma (Note [Vectorised float32 lgamma and digamma] in csrc/kernels/functors/special_vec.h):
a degree-13 Chebyshev least-squares fit in mpmath, printed highest power first, and the
worst relative error of the fit evaluated in double.

    python scripts/fit_lgamma_poly.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
DEGREE = 13


def ratio(t):
    f = mp.mpf(t) + mp.mpf(0.5)
    return 1 - mp.euler if f == 0 else mp.loggamma(2 + f) / f


def main():
    poly, err = mp.chebyfit(ratio, [-0.5, 0.5], DEGREE + 1, error=True)
    coeffs = [float(c) for c in poly]
    print(f"fit error {mp.nstr(err, 3)}")
    for c in coeffs:
        print(repr(c))
    ts = np.linspace(-0.5, 0.5, 2001)
    values = np.zeros_like(ts)
    for c in coeffs:
        values = values * ts + c
    worst = max(abs(float((mp.mpf(v) - ratio(t)) / ratio(t))) for v, t in zip(values, ts))
    print(f"worst relative error in double {worst:.3g}")


if __name__ == "__main__":
    main()
