"""tp.special and the special-function ops beyond the op database (python/tensorplay/testing/
opdb_special.py has their generic entries): the namespace against torch.special, PyTorch's
values at special points (poles, negative integers, +-inf, NaN, signed zeros) exactly, and
accuracy against mpmath (Note [Special function numerics] in
csrc/kernels/functors/special_functions.h)."""
import itertools
import math

import numpy as np
import pytest
import torch

import tensorplay as tp

NAN, INF = float('nan'), float('inf')

SPECIAL_NAMES = ['gammaln', 'digamma', 'psi', 'polygamma', 'multigammaln', 'erf', 'erfc', 'erfcx', 'erfinv',
                 'expit', 'logit', 'exp2', 'expm1', 'log1p', 'i0', 'i0e', 'i1', 'i1e', 'ndtr', 'ndtri', 'log_ndtr',
                 'sinc', 'round', 'softmax', 'log_softmax', 'entr', 'xlog1py', 'xlogy', 'zeta', 'gammainc',
                 'gammaincc', 'bessel_j0', 'bessel_j1', 'logsumexp']


def _call(lib, name, x, y):
    s = lib.special
    if name in ('polygamma',):
        return s.polygamma(2, x)
    if name == 'multigammaln':
        return s.multigammaln(x.abs() + 2, 3)
    if name in ('softmax', 'log_softmax'):
        return getattr(s, name)(x, 0)
    if name == 'logsumexp':
        return s.logsumexp(x, 0)
    if name in ('xlog1py', 'xlogy', 'zeta', 'gammainc', 'gammaincc'):
        return getattr(s, name)(x.abs() + 1, y.abs() + 0.5)
    if name in ('logit', 'ndtri'):
        return getattr(s, name)(torch.sigmoid(x) if lib is torch else tp.sigmoid(x))
    return getattr(s, name)(x)


@pytest.mark.parametrize('name', SPECIAL_NAMES)
def test_special_namespace_matches_torch(name):
    x = np.linspace(-2.5, 3.0, 7)
    y = np.linspace(0.3, 4.0, 7)
    expected = _call(torch, name, torch.tensor(x), torch.tensor(y))
    actual = _call(tp, name, tp.tensor(x.tolist(), dtype=tp.float64), tp.tensor(y.tolist(), dtype=tp.float64))
    np.testing.assert_allclose(np.asarray(actual.tolist()), expected.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
    fn = getattr(tp.special, name)
    assert fn.__name__ == name and fn.__doc__


def test_special_out_and_aliases():
    x = tp.tensor([0.5, 1.5, 3.0], dtype=tp.float64)
    out = tp.empty(3, dtype=tp.float64)
    assert tp.special.gammaln(x, out=out) is out
    assert out.tolist() == tp.lgamma(x).tolist()
    assert tp.special.psi(x).tolist() == tp.digamma(x).tolist()
    assert tp.special.gammainc(x, x).tolist() == tp.igamma(x, x).tolist()
    assert tp.special.expit(x).tolist() == tp.sigmoid(x).tolist()
    o = tp.empty(0, dtype=tp.float64)
    tp.special.logsumexp(x, 0, out=o)
    assert o.tolist() == tp.logsumexp(x, 0).tolist()
    assert not hasattr(tp, 'erfcx') and not hasattr(tp, 'ndtri')  # tp.special only, as in PyTorch
    assert hasattr(tp.ops.aten, 'special_erfcx') and hasattr(tp.ops.aten, 'polygamma_')
    y = x.clone()
    assert y.polygamma_(1) is y and y.tolist() == tp.polygamma(1, x).tolist()


def _same(a, b):
    """Equal as floats: NaN == NaN, and the sign of zero counts; a subnormal against 0 is
    underflow in one library only (igammac(1e-300, 30) is 3e-315, PyTorch's 0)."""
    if math.isfinite(a) and math.isfinite(b) and max(abs(a), abs(b)) < 2.3e-308 and (a == 0) != (b == 0):
        return True
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


GRID = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 1e-300, 1e300, -1e300, 3.0, -3.5, 30.0,
        709.5, 711.0, -26.6, -27.0, 26.5]
UNARY = {
    'lgamma': (torch.lgamma, tp.lgamma), 'digamma': (torch.digamma, tp.digamma),
    'trigamma': (lambda x: torch.polygamma(1, x), lambda x: tp.polygamma(1, x)),
    'polygamma3': (lambda x: torch.polygamma(3, x), lambda x: tp.polygamma(3, x)),
    'erfcx': (torch.special.erfcx, tp.special.erfcx), 'ndtri': (torch.special.ndtri, tp.special.ndtri),
    'log_ndtr': (torch.special.log_ndtr, tp.special.log_ndtr), 'ndtr': (torch.special.ndtr, tp.special.ndtr),
    'i0': (torch.i0, tp.i0), 'i0e': (torch.special.i0e, tp.special.i0e), 'i1': (torch.special.i1, tp.special.i1),
    'i1e': (torch.special.i1e, tp.special.i1e), 'entr': (torch.special.entr, tp.special.entr),
    'sinc': (torch.sinc, tp.sinc), 'signbit': (torch.signbit, tp.signbit),
    'j0': (torch.special.bessel_j0, tp.special.bessel_j0), 'j1': (torch.special.bessel_j1, tp.special.bessel_j1),
}


@pytest.mark.parametrize('name', list(UNARY))
def test_special_values_match_torch(name):
    """NaN, +-inf and zeros (with their sign) where PyTorch gives them; elsewhere finite and
    nonzero as PyTorch's (the values themselves: test_accuracy_against_mpmath, and the op
    database against torch)."""
    t_fn, p_fn = UNARY[name]
    for dtype in ('float64', 'float32'):
        grid = [v for v in GRID if dtype == 'float64' or abs(v) < 1e38 or not math.isfinite(v)]
        expected = t_fn(torch.tensor(grid, dtype=getattr(torch, dtype))).tolist()
        actual = p_fn(tp.tensor(grid, dtype=getattr(tp, dtype))).tolist()
        for v, e, a in zip(grid, expected, actual):
            if isinstance(e, bool):
                assert a == e, (name, v)
            elif not (math.isfinite(e) and math.isfinite(a) and e != 0 and a != 0):
                assert _same(a, e), f'{name}({v}) {dtype}: ours {a}, torch {e}'


@pytest.mark.parametrize('name', ['zeta', 'igamma', 'igammac'])
def test_binary_special_values_match_torch(name):
    grid = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.0, 0.5, -0.5, -2.0, 1e-300, 3.0, -3.5, 30.0]
    t_fn = {'zeta': torch.special.zeta, 'igamma': torch.igamma, 'igammac': torch.igammac}[name]
    p_fn = {'zeta': tp.special.zeta, 'igamma': tp.igamma, 'igammac': tp.igammac}[name]
    pairs = list(itertools.product(grid, grid))
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = t_fn(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)).tolist()
    actual = p_fn(tp.tensor(a, dtype=tp.float64), tp.tensor(b, dtype=tp.float64)).tolist()
    for (x, y), e, r in zip(pairs, expected, actual):
        if not (math.isfinite(e) and math.isfinite(r) and e != 0 and r != 0):
            assert _same(r, e), f'{name}({x}, {y}): ours {r}, torch {e}'


def test_accuracy_against_mpmath():
    """Relative error below 1e-13 (away from zeros of the function) on random arguments."""
    mpmath = pytest.importorskip('mpmath')
    mpmath.mp.dps = 40
    rng = np.random.default_rng(0)
    n = 40

    def logu(lo, hi):
        return np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    cases = {
        'digamma': (lambda x: tp.digamma(x), lambda v: mpmath.digamma(v), logu(1e-3, 1e6)),
        'trigamma': (lambda x: tp.polygamma(1, x), lambda v: mpmath.polygamma(1, v), logu(1e-3, 1e6)),
        'polygamma4': (lambda x: tp.polygamma(4, x), lambda v: mpmath.polygamma(4, v), logu(1e-2, 1e3)),
        'erfcx': (tp.special.erfcx, lambda v: mpmath.exp(v * v) * mpmath.erfc(v), rng.uniform(-20, 1e3, n)),
        'ndtri': (tp.special.ndtri, lambda v: mpmath.sqrt(2) * mpmath.erfinv(2 * v - 1), rng.uniform(1e-3, 0.999, n)),
        'log_ndtr': (tp.special.log_ndtr, lambda v: mpmath.log(mpmath.ncdf(v)), rng.uniform(-30, 8, n)),
        'i0e': (tp.special.i0e, lambda v: mpmath.besseli(0, v) * mpmath.exp(-abs(v)), rng.uniform(-60, 60, n)),
        'i1': (tp.special.i1, lambda v: mpmath.besseli(1, v), rng.uniform(-60, 60, n)),
        'zeta3': (lambda x: tp.special.zeta(3.0, x), lambda v: mpmath.zeta(3, v), logu(1e-2, 1e3)),
        'igamma': (lambda x: tp.igamma(x, x * 0.8), lambda v: mpmath.gammainc(v, 0, 0.8 * v, regularized=True),
                   logu(1e-2, 1e3)),
        'igammac': (lambda x: tp.igammac(x, x * 1.3), lambda v: mpmath.gammainc(v, 1.3 * v, mpmath.inf, regularized=True),
                    logu(1e-2, 1e3)),
        'bessel_j0': (tp.special.bessel_j0, lambda v: mpmath.besselj(0, v), rng.uniform(0, 60, n)),
    }
    for name, (fn, ref, xs) in cases.items():
        got = fn(tp.tensor(xs.tolist(), dtype=tp.float64)).tolist()
        for v, g in zip(xs.tolist(), got):
            r = float(ref(mpmath.mpf(v)))
            if name == 'bessel_j0':  # near its zeros only absolute accuracy means anything
                assert abs(g - r) < 1e-15 + 1e-13 * abs(r), (name, v, g, r)
            else:
                assert abs(g - r) <= 1e-13 * abs(r), (name, v, g, r)


@pytest.mark.parametrize('name', ['lgamma', 'digamma'])
def test_float32_vector_path_accuracy(name):
    """Contiguous float32 lgamma/digamma run the vectorised path (Note [Vectorised float32
    lgamma and digamma]): within 0.51 ulp of the float64 result (rounded to float32 that is
    at most one ulp off PyTorch's, which is often more); special points mixed among ordinary
    lanes give PyTorch's values exactly."""
    rng = np.random.default_rng(5)
    parts = [rng.uniform(0, 100, 20000), rng.uniform(0, 3, 20000), np.logspace(-44, 38, 4000),
             1 + np.arange(-500, 500) * 1.2e-7, 2 + np.arange(-500, 500) * 2.4e-7, 1.4616321 + np.arange(-500, 500) * 1.2e-7]
    if name == 'lgamma':  # the vector path takes negative lanes by reflection; digamma's go scalar
        parts += [rng.uniform(-50, 0, 20000), -np.logspace(-44, 6.9, 4000), -2.4570247 + np.arange(-500, 500) * 2.4e-7]
    x = np.concatenate(parts).astype(np.float32)
    x = x[np.isfinite(x) & (x != 0)]
    ref64 = getattr(torch, name)(torch.from_numpy(x.astype(np.float64))).numpy()
    ours = getattr(tp, name)(tp.from_numpy(x)).numpy().astype(np.float64)
    fin = np.isfinite(ref64) & (np.abs(ref64) < 3.4e38)
    ulp = np.spacing(np.abs(ref64[fin]).astype(np.float32)).astype(np.float64)
    # less 2e-15 absolute: near digamma's root (1.46163) the float64 reference is only that good
    err = np.maximum(np.abs(ours[fin] - ref64[fin]) - 2e-15, 0) / ulp
    assert err.max() <= 0.51, (name, x[fin][np.argmax(err)], err.max())
    specials = np.array([NAN, INF, -INF, 0.0, -0.0, -1.0, -2.0, -3.5, -0.5, 1e-45, -1e-45, 1.0, 2.0, -8388608.0,
                         -4194303.5, 3e38, -3e38], dtype=np.float32)
    mixed = np.empty(2 * len(specials), dtype=np.float32)
    mixed[0::2], mixed[1::2] = specials, np.linspace(0.5, 9, len(specials))
    expected = getattr(torch, name)(torch.from_numpy(mixed)).tolist()
    close = getattr(torch, name)(torch.from_numpy(mixed).double()).tolist()  # PyTorch's float32 is off by ulps
    actual = getattr(tp, name)(tp.from_numpy(mixed)).tolist()
    for v, e, c, a in zip(mixed.tolist(), expected, close, actual):
        if not (math.isfinite(e) and math.isfinite(a)):
            assert _same(a, e), f'{name}({v}): ours {a}, torch {e}'
        else:
            assert a == pytest.approx(c, rel=1.2e-7, abs=1e-30), (name, v)
