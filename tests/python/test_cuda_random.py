"""CUDA random numbers (Note [Philox streams] in csrc/cuda/philox.h).

Everywhere: the host Philox4x32-10 against the published test vectors and an independent
NumPy implementation, the host reference of the CUDA samplers against the documented scheme,
tp.cuda's seeding API without a GPU against torch, native_dropout on the CPU against torch.
On a GPU: every kernel bit for bit against the host reference (so values depend only on
seed, offset and index, not on the grid), generator states, statistics, dtypes and errors."""
import math
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pytest
import torch

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
COMPILED = bool(tp._C._cuda_compiled)
REF = tp._C._philox_reference

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("bool", "uint8", "int8", "int16", "int32", "int64")
DEFAULT_SEED = 67280421310721


# ---------------------------------------------------------------- an independent Philox
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LO = np.uint64(0xFFFFFFFF)


def _philox_np(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 (Salmon et al. 2011) on arrays of counters, one key: ten rounds of two
    32x32->64 products, key bumped by the Weyl constants before rounds 2..10."""
    c = [np.asarray(x, dtype=np.uint64) & _LO for x in (c0, c1, c2, c3)]
    k0, k1 = int(k0), int(k1)
    for rnd in range(10):
        if rnd:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = _M0 * c[0], _M1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & _LO,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & _LO]
    return np.stack(c, axis=-1)


def _words(seed, offset, blocks):
    """The words w0..w3 of a launch's blocks (Note [Philox streams]), shape (blocks, 4)."""
    ctr = np.arange(blocks, dtype=np.uint64) + np.uint64(offset // 4)
    z = np.zeros(blocks, dtype=np.uint64)
    return _philox_np(ctr & _LO, ctr >> np.uint64(32), z, z, seed & 0xFFFFFFFF, seed >> 32)


def _draws64(seed, offset, blocks):
    """x_0, x_1 of each block, flattened: x_j = w_2j | w_2j+1 << 32."""
    w = _words(seed, offset, blocks)
    return (w[:, 0::2] | (w[:, 1::2] << np.uint64(32))).reshape(-1)


def _np(t):
    """A CPU NumPy copy (16-bit floats widened to float32, exactly); tp or torch tensors."""
    t = t.cpu()
    if t.dtype in (tp.float16, tp.bfloat16, torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


# ---------------------------------------------------------------- Philox itself
KNOWN_ANSWERS = [  # Random123's kat_vectors, philox4x32 10: counter, key, result
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter,key,expected", KNOWN_ANSWERS)
def test_philox_known_answers(counter, key, expected):
    assert tuple(tp._C._philox4x32_10(counter, key)) == expected
    assert tuple(int(v) for v in _philox_np(*counter, *key)) == expected


def test_philox_matches_independent_implementation():
    g = np.random.default_rng(7)
    for _ in range(200):
        c = [int(v) for v in g.integers(0, 2**32, 4)]
        k = [int(v) for v in g.integers(0, 2**32, 2)]
        assert tuple(tp._C._philox4x32_10(c, k)) == tuple(int(v) for v in _philox_np(*c, *k))
    with pytest.raises(TypeError):
        tp._C._philox4x32_10((1, 2, 3), (0, 0))


# ---------------------------------------------------------------- the host reference
# These pin the documented scheme: the reference (which the kernels must equal on a GPU)
# against NumPy computations of the formulas in Note [Philox streams].
SEED, OFFSET = 0x1234_5678_9ABC, 4096


def test_reference_uniform_float32_is_the_scheme():
    n = 10001  # not a multiple of K
    w = _words(SEED, OFFSET, (n + 3) // 4).reshape(-1)[:n]
    u = (w >> np.uint64(8)).astype(np.float64) * 2.0**-24
    # fma(u, 5, -2): u * 5 - 2 is exact in float64, so one rounding to float32
    want = (u * 5.0 - 2.0).astype(np.float32)
    got = REF("uniform", tp.float32, n, SEED, OFFSET, -2.0, 3.0).numpy()
    assert np.array_equal(got, want)
    assert np.array_equal(REF("uniform", tp.float32, n, SEED, OFFSET, 0.0, 1.0).numpy(),
                          u.astype(np.float32))


def test_reference_uniform_float64_is_the_scheme():
    n = 4001
    x = _draws64(SEED, OFFSET, (n + 1) // 2)[:n]
    u = (x >> np.uint64(11)).astype(np.float64) * 2.0**-53
    assert np.array_equal(REF("uniform", tp.float64, n, SEED, OFFSET, 0.0, 1.0).numpy(), u)
    got = REF("uniform", tp.float64, n, SEED, OFFSET, -1.25, 7.5).numpy()
    for i in range(0, n, 97):  # fma: the exact u * span + from, rounded once
        exact = Fraction(float(u[i])) * Fraction(8.75) + Fraction(-1.25)
        assert got[i] == float(exact)


def test_reference_offset_moves_by_blocks():
    # element i of a launch at offset o is element i + 4 of a launch at o - 4 (K = 4)
    a = REF("uniform", tp.float32, 40, SEED, OFFSET, 0.0, 1.0).numpy()
    b = REF("uniform", tp.float32, 44, SEED, OFFSET - 4, 0.0, 1.0).numpy()
    assert np.array_equal(a, b[4:])
    d = REF("normal", tp.float64, 40, SEED, OFFSET, 0.0, 1.0).numpy()
    e = REF("normal", tp.float64, 42, SEED, OFFSET - 4, 0.0, 1.0).numpy()  # K = 2
    assert np.array_equal(d, e[2:])
    with pytest.raises(RuntimeError, match="multiple of 4"):
        REF("uniform", tp.float32, 4, SEED, 2, 0.0, 1.0)


def _ulps(got, want, dtype):
    return np.max(np.abs(got.astype(np.float64) - want) /
                  np.spacing(np.abs(want).astype(dtype)).astype(np.float64))


def test_reference_normal_is_box_muller():
    n = 200000
    w = _words(SEED, OFFSET, n // 4).astype(np.float64)
    u1 = (w[:, 0::2] + 1).reshape(-1) * 2.0**-32
    u1 = u1.astype(np.float32).astype(np.float64)  # fl((w + 1) 2^-32)
    u2 = np.floor(w[:, 1::2].reshape(-1) / 256) * 2.0**-24
    r = np.sqrt(-2 * np.log(u1))
    z = np.stack([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=1).reshape(-1)
    got = REF("normal", tp.float32, n, SEED, OFFSET, 0.0, 1.0).numpy()
    assert _ulps(got, z, np.float32) < 8
    scaled = REF("normal", tp.float32, n, SEED, OFFSET, 3.0, 0.5).numpy()
    assert np.array_equal(scaled, (got.astype(np.float64) * 0.5 + 3.0).astype(np.float32))
    # float64: against long double (x86's 64-bit significand), with 2 pi u reduced exactly
    # to pi (m / 2 + r), |r| <= 1/4, so cos and sin stay accurate near their zeros
    x = _draws64(SEED, OFFSET, n // 2).reshape(-1, 2)
    ld = np.longdouble
    u1 = ((x[:, 0] >> np.uint64(11)) + np.uint64(1)).astype(ld) * ld(2.0**-53)
    t = (x[:, 1] >> np.uint64(11)).astype(np.float64) * 2.0**-52  # 2 u2, exact
    m = np.rint(2 * t)
    a = (t - m / 2).astype(ld) * ld("3.14159265358979323846264338327950288")
    s, c = np.sin(a), np.cos(a)
    q = m.astype(np.int64) % 4
    sin = np.choose(q, [s, c, -s, -c])
    cos = np.choose(q, [c, -s, -c, s])
    r = np.sqrt(-2 * np.log(u1))
    z = np.stack([r * cos, r * sin], axis=1).reshape(-1).astype(np.float64)
    got = REF("normal", tp.float64, n, SEED, OFFSET, 0.0, 1.0).numpy()
    tol = 8 if np.finfo(ld).nmant >= 63 else 64  # where long double is double, NumPy's error
    assert np.max(np.abs(got - z) / np.spacing(np.abs(z))) < tol


def test_reference_exponential_cauchy_log_normal_geometric():
    n = 100000
    w = _words(SEED, OFFSET, n // 4).reshape(-1)
    x = _draws64(SEED, OFFSET, n // 2)
    u = ((w.astype(np.float64) + 1) * 2.0**-32).astype(np.float32).astype(np.float64)
    got = REF("exponential", tp.float32, n, SEED, OFFSET, 2.5).numpy()
    assert _ulps(got, -np.log(u) / np.float64(np.float32(2.5)), np.float32) < 8 and got.min() >= 0
    u = ((x >> np.uint64(11)) + np.uint64(1)).astype(np.float64) * 2.0**-53
    got = REF("exponential", tp.float64, n, SEED, OFFSET, 2.5).numpy()
    assert _ulps(got, -np.log(u) / 2.5, np.float64) < 8
    t = ((w >> np.uint64(9)).astype(np.int64) * 2 - 2**23 + 1) * 2.0**-24
    got = REF("cauchy", tp.float32, n, SEED, OFFSET, 0.0, 1.0).numpy()
    assert np.max(np.abs(got - np.tan(np.pi * t)) / np.abs(np.tan(np.pi * t))) < 1e-6
    assert np.isfinite(got).all()
    z = REF("normal", tp.float32, n, SEED, OFFSET, 0.5, 2.0).numpy().astype(np.float64)
    got = REF("log_normal", tp.float32, n, SEED, OFFSET, 0.5, 2.0).numpy()
    assert _ulps(got, np.exp(z), np.float32) < 2
    z = REF("normal", tp.float64, n, SEED, OFFSET, 0.0, 300.0).numpy()
    got = REF("log_normal", tp.float64, n, SEED, OFFSET, 0.0, 300.0).numpy()
    with np.errstate(over="ignore"):
        want = np.exp(z)
    normal = (want > 2.3e-308) & np.isfinite(want)
    assert _ulps(got[normal], want[normal], np.float64) < 2
    assert np.array_equal(got[~normal & (z > 0)], want[~normal & (z > 0)])  # inf
    u = ((x >> np.uint64(12)) * np.uint64(2) + np.uint64(1)).astype(np.float64) * 2.0**-53
    got = REF("geometric", tp.int64, n, SEED, OFFSET, 0.2).numpy()
    assert np.array_equal(got, np.ceil(np.log(u) / np.log1p(-0.2))) and got.min() >= 1
    assert REF("geometric", tp.uint8, n, SEED, OFFSET, 1e-3).numpy().max() == 255  # saturates


def test_reference_random_and_bernoulli():
    n = 4000
    w = _words(SEED, OFFSET, n // 4).reshape(-1)
    got = REF("random", tp.int64, n, SEED, OFFSET, base=-5, range=1000).numpy()
    assert np.array_equal(got, (w % np.uint64(1000)).astype(np.int64) - 5)
    got = REF("random", tp.int64, n, SEED, OFFSET, base=0, range=2**32).numpy()
    assert np.array_equal(got, w.astype(np.int64))
    x = _draws64(SEED, OFFSET, n // 2)
    got = REF("random", tp.int64, n, SEED, OFFSET, base=7, range=2**40 + 3).numpy()
    assert np.array_equal(got, (x % np.uint64(2**40 + 3)).astype(np.int64) + 7)
    got = REF("random", tp.int64, n, SEED, OFFSET, base=0, range=0).numpy()
    assert np.array_equal(got, x.view(np.int64))
    p = 0.3
    got = REF("bernoulli", tp.float32, n, SEED, OFFSET, p).numpy()
    assert np.array_equal(got, (w.astype(np.float64) < p * 2.0**32).astype(np.float32))
    got = REF("bernoulli", tp.float64, n, SEED, OFFSET, p).numpy()
    assert np.array_equal(got, ((x >> np.uint64(11)).astype(np.float64) < p * 2.0**53))
    for dt in (tp.bool, tp.uint8, tp.float16, tp.float64):
        assert not _np(REF("bernoulli", dt, n, SEED, OFFSET, 0.0)).any()
        assert _np(REF("bernoulli", dt, n, SEED, OFFSET, 1.0)).all()
    probs = tp.tensor(np.linspace(0, 1, n), dtype=tp.float32)
    got = REF("bernoulli_tensor", tp.int32, n, SEED, OFFSET, input=probs).numpy()
    want = w.astype(np.float64) < probs.numpy().astype(np.float64) * 2.0**32
    assert np.array_equal(got, want) and got[0] == 0 and got[-1] == 1


def test_reference_half_uniform_never_reaches_to():
    # from=1, to=2 in float16: float values that round to 2.0 become 1.0 (PyTorch's rule)
    n = 1 << 16
    got = REF("uniform", tp.float16, n, SEED, OFFSET, 1.0, 2.0).float().numpy()
    w = _words(SEED, OFFSET, n // 4).reshape(-1)
    f = ((w >> np.uint64(8)).astype(np.float64) * 2.0**-24 + 1.0).astype(np.float32)
    h = f.astype(np.float16).astype(np.float32)
    assert (h == 2.0).any() and got.max() < 2.0
    assert np.array_equal(got, np.where(h == 2.0, 1.0, h))
    for dt in (tp.bfloat16, tp.float16):
        assert _np(REF("uniform", dt, n, SEED, OFFSET, 0.0, 1.0)).max() < 1.0


def test_reference_dropout_scale_rounds_to_dtype():
    n = 1000
    x = tp.tensor(np.random.default_rng(3).standard_normal(n), dtype=tp.float16)
    out, mask = REF("dropout", tp.float16, n, SEED, OFFSET, 0.3, input=x)
    w = _words(SEED, OFFSET, n // 4).reshape(-1)
    keep = w.astype(np.float64) < 0.7 * 2.0**32
    assert np.array_equal(mask.numpy(), keep)
    noise = np.where(keep, np.float16(1 / 0.7), np.float16(0)).astype(np.float32)
    assert np.array_equal(out.float().numpy(),
                          (x.float().numpy() * noise).astype(np.float16).astype(np.float32))


def test_reference_multinomial_keys_are_the_scheme():
    n = 40000
    p = np.random.default_rng(4).random(n)
    p[::7] = 0
    w = _words(SEED, OFFSET, n // 4).reshape(-1)
    u = ((w >> np.uint64(9)) * np.uint64(2) + np.uint64(1)).astype(np.float64) * 2.0**-24
    p32 = p.astype(np.float32).astype(np.float64)
    got = REF("multinomial_keys", tp.float32, n, SEED, OFFSET, input=tp.tensor(p)).numpy()
    want = p32 / -np.log(u)
    pos = p32 > 0
    assert _ulps(got[pos], want[pos], np.float32) < 8
    assert not got[~pos].any() and np.isfinite(got).all()
    x = _draws64(SEED, OFFSET, n // 2)
    u = ((x >> np.uint64(12)) * np.uint64(2) + np.uint64(1)).astype(np.float64) * 2.0**-53
    got = REF("multinomial_keys", tp.float64, n, SEED, OFFSET, input=tp.tensor(p)).numpy()
    assert _ulps(got[pos], p[pos] / -np.log(u[pos]), np.float64) < 8 and not got[~pos].any()
    with pytest.raises(RuntimeError, match="float32 or float64"):
        REF("multinomial_keys", tp.float16, 4, SEED, OFFSET, input=tp.ones(4))


def test_reference_multinomial_draws_are_the_scheme():
    rows, cats, k = 5, 37, 3001
    p = np.random.default_rng(5).random((rows, cats))
    p[:, ::4] = 0
    p[1, :-1], p[1, -1] = 0, 0.5  # only the last category
    cum = np.cumsum(p, axis=1)
    got = REF("multinomial_draws", tp.int64, rows * k, SEED, OFFSET, input=tp.tensor(cum)).numpy()
    x = _draws64(SEED, OFFSET, (rows * k + 1) // 2)[:rows * k].reshape(rows, k)
    u = ((x >> np.uint64(12)) * np.uint64(2) + np.uint64(1)).astype(np.float64) * 2.0**-53
    target = np.maximum(u * cum[:, -1:], 5e-324)
    want = np.stack([np.searchsorted(cum[r], target[r], side="left") for r in range(rows)])
    assert np.array_equal(got.reshape(rows, k), want)
    assert (p.reshape(-1)[(got.reshape(rows, k) + np.arange(rows)[:, None] * cats)] > 0).all()
    assert (got.reshape(rows, k)[1] == cats - 1).all()


def _poisson_pmf(lam, ks):
    return np.exp(-lam + ks * math.log(lam) - np.array([math.lgamma(k + 1) for k in ks]))


@pytest.mark.parametrize("lam", [0.5, 5.0, 9.99, 10.0, 50.0, 500.0, 1e6])
def test_reference_poisson_statistics(lam):
    n = 200000
    got = REF("poisson", tp.float64, n, SEED, OFFSET, input=tp.full((n,), lam, dtype=tp.float64))
    v = got.numpy()
    assert (v >= 0).all() and (v == np.floor(v)).all()
    se = math.sqrt(lam / n)
    assert abs(v.mean() - lam) < 5 * se
    assert abs(v.var() / lam - 1) < 5 * math.sqrt(2 / n) + 0.01 / lam
    # the frequencies of the likeliest counts against the pmf (a chi-square-like bound)
    lo, hi = int(max(0, lam - 2 * math.sqrt(lam))), int(lam + 2 * math.sqrt(lam)) + 1
    ks = np.arange(lo, hi + 1)
    pmf = _poisson_pmf(lam, ks)
    keep = pmf * n > 50
    counts = np.bincount(v.astype(np.int64), minlength=hi + 1)[ks[keep]]
    chi2 = (((counts - n * pmf[keep]) ** 2) / (n * pmf[keep])).sum()
    assert chi2 < keep.sum() + 6 * math.sqrt(2 * keep.sum()) + 10


def test_reference_poisson_streams():
    rates = tp.tensor(np.random.default_rng(6).choice([0.0, 0.25, 4.0, 12.0, 80.0, 3e4], 1000))
    a = REF("poisson", tp.float64, 1000, SEED, OFFSET, input=rates).numpy()
    assert not a[rates.numpy() == 0].any()
    # element i's stream is block c0 + i: a launch from offset - 4 sees it as element i + 1
    b = REF("poisson", tp.float64, 1001, SEED, OFFSET - 4,
            input=tp.cat([tp.tensor([1.0], dtype=tp.float64), rates])).numpy()
    assert np.array_equal(a, b[1:])
    # the math is double for every dtype: the same (exactly representable) rates give the
    # same counts, rounded to the dtype
    c = REF("poisson", tp.float32, 1000, SEED, OFFSET, input=rates.float()).numpy()
    assert np.array_equal(c, a.astype(np.float32))
    h = REF("poisson", tp.float16, 1000, SEED, OFFSET, input=rates.half())
    assert h.dtype == tp.float16 and np.array_equal(h.float().numpy(),
                                                    a.astype(np.float16).astype(np.float32))


# ---------------------------------------------------------------- without a GPU
@no_gpu
def test_no_gpu_seeding_is_ignored_as_in_torch():
    for mod in (tp.cuda, torch.cuda):
        assert mod.manual_seed(3) is None
        assert mod.manual_seed_all("4") is None  # int() of it, then deferred
        assert mod.seed() is None and mod.seed_all() is None
        assert mod.set_rng_state(tp.zeros(16, dtype=tp.uint8) if mod is tp.cuda
                                 else torch.zeros(16, dtype=torch.uint8)) is None
        with pytest.raises(AttributeError):
            mod.set_rng_state([1])  # cloned before being deferred
        with pytest.raises(ValueError):
            mod.manual_seed("x")
    assert tp.cuda.get_rng_state_all() == [] == torch.cuda.get_rng_state_all()
    assert tp.cuda.default_generators == () == torch.cuda.default_generators
    assert tp.manual_seed(5) is tp.default_generator and tp.initial_seed() == 5
    assert tp.cuda.random.manual_seed is tp.cuda.manual_seed


@no_gpu
@pytest.mark.parametrize("call", ["get_rng_state", "initial_seed"])
def test_no_gpu_state_queries_raise(call):
    expected = AssertionError if not COMPILED else RuntimeError
    with pytest.raises(expected):
        getattr(tp.cuda, call)()
    if not torch.cuda.is_available() and not torch.backends.cuda.is_built():
        with pytest.raises(AssertionError):
            getattr(torch.cuda, call)()


@no_gpu
def test_no_gpu_generator():
    with pytest.raises(RuntimeError, match="Cannot get CUDA generator" if not COMPILED else "GPU"):
        tp.Generator(device="cuda")
    with pytest.raises(RuntimeError):
        tp.Generator(device="cuda:0")
    with pytest.raises(RuntimeError):
        torch.Generator(device="cuda")
    with tp.random.fork_rng():  # no GPU: only the CPU state
        tp.rand(3)


# ---------------------------------------------------------------- native_dropout on the CPU
def _layouts(x):
    return [x, x.t(), x[:, ::2]]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p", [0.0, 0.3, 0.9, 1.0])
def test_native_dropout_cpu_matches_torch(dtype, p):
    base = np.random.default_rng(1).standard_normal((6, 8))
    base[0, :3] = [np.nan, np.inf, -np.inf]
    xs = _layouts(tp.tensor(base, dtype=getattr(tp, dtype)))
    ts = _layouts(torch.tensor(base, dtype=getattr(torch, dtype)))
    for x, t in zip(xs, ts):
        for train in (True, None, False):
            torch.manual_seed(11)
            tp.manual_seed(11)
            o1, m1 = torch.native_dropout(t, p, train)
            o2, m2 = tp.native_dropout(x, p, train)
            np.testing.assert_array_equal(_np(o2), _np(o1))
            assert np.array_equal(m2.numpy(), m1.numpy()) and m2.dtype == tp.bool
            assert o2.dtype == x.dtype and tuple(o2.stride()) == o1.stride()
            assert tuple(m2.stride()) == m1.stride()


def test_native_dropout_cpu_gradients_match_torch():
    base = np.random.default_rng(2).standard_normal((5, 7))
    for train in (True, None, False):
        x = tp.tensor(base, requires_grad=True)
        t = torch.tensor(base, requires_grad=True)
        torch.manual_seed(4)
        tp.manual_seed(4)
        o1, _ = torch.native_dropout(t, 0.4, train)
        o2, m2 = tp.native_dropout(x, 0.4, train)
        assert o2.grad_fn.name() == "NativeDropoutBackward0" and not m2.requires_grad
        g = np.random.default_rng(5).standard_normal((5, 7))
        o1.backward(torch.tensor(g))
        o2.backward(tp.tensor(g))
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())  # train=None: scale 1


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_native_dropout_backward_cpu_matches_torch(dtype):
    g = np.random.default_rng(6).standard_normal((4, 6))
    m = np.random.default_rng(7).random((4, 6)) < 0.6
    tg = torch.tensor(g).to(getattr(torch, dtype))
    a = torch.ops.aten.native_dropout_backward(tg, torch.tensor(m), 1 / 0.7)
    b = tp.native_dropout_backward(tp.tensor(g).to(getattr(tp, dtype)), tp.tensor(m), 1 / 0.7)
    assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1]
    np.testing.assert_array_equal(_np(b), _np(a))
    with pytest.raises(RuntimeError, match="must match the size"):
        tp.native_dropout_backward(tp.ones(3), tp.tensor([True, False]), 2.0)


def test_native_dropout_cpu_errors_match_torch():
    for p in (1.5, -0.5):
        with pytest.raises(RuntimeError) as e:
            torch.native_dropout(torch.ones(3), p, True)
        with pytest.raises(RuntimeError, match=str(e.value).replace("[", r"\[").replace("]", r"\]")):
            tp.native_dropout(tp.ones(3), p, True)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.native_dropout(torch.ones(3, dtype=torch.int64), 0.5, True)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        tp.native_dropout(tp.ones(3, dtype=tp.int64), 0.5, True)
    out, mask = tp.native_dropout(tp.ones(3, dtype=tp.int64), 0.5, False)
    assert out.tolist() == [1, 1, 1] and mask.tolist() == [True] * 3
    out, mask = tp.native_dropout(tp.ones(0, 2), 0.5, True)
    assert out.shape == (0, 2) and mask.shape == (0, 2) and mask.dtype == tp.float32


# ---------------------------------------------------------------- on a GPU: generators
def _state(g):
    """(seed, offset) of a CUDA generator's 16-byte state."""
    b = bytes(g.get_state().numpy().tolist())
    return int.from_bytes(b[:8], "little"), int.from_bytes(b[8:], "little", signed=True)


def _make_state(seed, offset):
    return tp.tensor(list(seed.to_bytes(8, "little") + offset.to_bytes(8, "little", signed=True)),
                     dtype=tp.uint8)


@gpu
def test_generator_basics():
    g = tp.Generator(device="cuda")
    assert g.device == tp.device("cuda:0") and g.device.type == "cuda"
    assert tp.Generator(device="cuda:0").device == tp.device("cuda", 0)
    assert tp.Generator(device=tp.device("cuda")).device.index == tp.cuda.current_device()
    assert g.initial_seed() == DEFAULT_SEED and _state(g) == (DEFAULT_SEED, 0)
    s = g.get_state()
    assert s.dtype == tp.uint8 and s.shape == (16,) and s.device.type == "cpu"
    assert g.manual_seed(123) is g and _state(g) == (123, 0)
    g.manual_seed(-1)
    assert g.initial_seed() == 2**64 - 1
    seeded = g.seed()
    assert 0 <= seeded < 2**53 and g.initial_seed() == seeded and _state(g)[1] == 0
    with pytest.raises(RuntimeError, match="device_index is invalid"):
        tp.Generator(device=f"cuda:{tp.cuda.device_count()}")


@gpu
def test_generator_offsets_advance_by_blocks():
    g = tp.Generator(device="cuda").manual_seed(9)
    tp.empty(10, device="cuda").uniform_(generator=g)  # float32: K = 4
    assert _state(g) == (9, 4 * 3)
    tp.empty(10, dtype=tp.float64, device="cuda").uniform_(generator=g)  # K = 2
    assert _state(g) == (9, 12 + 4 * 5)
    tp.empty(0, device="cuda").normal_(generator=g)
    assert _state(g) == (9, 32)
    tp.empty(7, dtype=tp.int64, device="cuda").random_(0, 2**40, generator=g)  # wide: K = 2
    assert _state(g) == (9, 32 + 16)


@gpu
def test_generator_state_round_trip_and_errors():
    g = tp.Generator(device="cuda").manual_seed(77)
    tp.empty(100, device="cuda").normal_(generator=g)
    state = g.get_state()
    a = tp.empty(1000, device="cuda").normal_(generator=g).cpu()
    assert g.set_state(state) is g
    b = tp.empty(1000, device="cuda").normal_(generator=g).cpu()
    assert np.array_equal(a.numpy(), b.numpy())
    h = tp.Generator(device="cuda")
    h.set_state(_make_state(5, 40))
    assert _state(h) == (5, 40) and h.initial_seed() == 5
    h.set_state(tp.tensor(list((6).to_bytes(8, "little")), dtype=tp.uint8))  # seed only
    assert _state(h) == (6, 0)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        h.set_state(tp.zeros(16, dtype=tp.int32))
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        h.set_state(tp.zeros(12, dtype=tp.uint8))
    with pytest.raises(RuntimeError, match="offset must be a multiple of 4"):
        h.set_state(_make_state(5, 6))
    with pytest.raises(RuntimeError, match="contiguous"):
        h.set_state(tp.zeros(32, dtype=tp.uint8)[::2])
    assert _state(h) == (6, 0)  # a refused state changes nothing
    c = g.clone_state()
    assert c.device == g.device and _state(c) == _state(g) and c != g
    p = pickle.loads(pickle.dumps(g))
    assert p.device == g.device and _state(p) == _state(g)


@gpu
def test_default_generators_and_seeding_api():
    n = tp.cuda.device_count()
    gens = tp.cuda.default_generators
    assert isinstance(gens, tuple) and len(gens) == n and gens is tp.cuda.default_generators
    assert all(g.device == tp.device("cuda", i) for i, g in enumerate(gens))
    tp.cuda.manual_seed(41)
    assert tp.cuda.initial_seed() == 41 and _state(gens[0]) == (41, 0)
    tp.cuda.manual_seed_all(42)
    assert all(_state(g) == (42, 0) for g in gens)
    tp.manual_seed(43)  # seeds the CUDA generators too
    assert tp.cuda.initial_seed() == 43 and tp.initial_seed() == 43
    s = tp.seed()
    assert tp.cuda.initial_seed() == s == tp.initial_seed()
    tp.cuda.seed()
    assert tp.cuda.initial_seed() < 2**53
    tp.cuda.seed_all()
    assert len({g.initial_seed() for g in gens}) == 1
    tp.cuda.manual_seed(44)
    state = tp.cuda.get_rng_state()
    assert state.shape == (16,) and _state(gens[0]) == (44, 0)
    assert len(tp.cuda.get_rng_state_all()) == n
    assert np.array_equal(tp.cuda.get_rng_state(0).numpy(), tp.cuda.get_rng_state("cuda:0").numpy())
    a = tp.rand(5000, device="cuda").cpu()
    tp.cuda.set_rng_state(state)
    b = tp.rand(5000, device="cuda").cpu()
    assert np.array_equal(a.numpy(), b.numpy())
    tp.cuda.set_rng_state_all([state] * n)
    assert np.array_equal(tp.rand(5000, device="cuda").cpu().numpy(), a.numpy())
    with pytest.raises(IndexError):
        tp.cuda.get_rng_state(n)


@gpu
def test_fork_rng_restores_cuda_states():
    tp.manual_seed(3)
    before = tp.cuda.get_rng_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # several GPUs warn, as in PyTorch
        with tp.random.fork_rng():
            tp.randn(100, device="cuda")
    assert np.array_equal(tp.cuda.get_rng_state().numpy(), before.numpy())
    with tp.random.fork_rng(devices=[0]):
        tp.rand(10, device="cuda")
    assert np.array_equal(tp.cuda.get_rng_state(0).numpy(), before.numpy())
    with tp.random.fork_rng(devices=[]):
        tp.rand(10, device="cuda")
    assert not np.array_equal(tp.cuda.get_rng_state(0).numpy(), before.numpy())


@gpu
def test_generator_device_checks():
    cpu_gen, cuda_gen = tp.Generator(), tp.Generator(device="cuda")
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator but found 'cpu'"):
        tp.rand(3, device="cuda", generator=cpu_gen)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        tp.rand(3, generator=cuda_gen)


# ---------------------------------------------------------------- on a GPU: values
def _check_exact(make, op, dtype, n, a=0.0, b=0.0, base=0, range=0, seed=2024, inp=None):
    """make(generator) fills n elements on the GPU; they must equal the host reference
    bit for bit, and the generator must have moved past the launch's blocks."""
    g = tp.Generator(device="cuda").manual_seed(seed)
    g.set_state(_make_state(seed, 64))  # a nonzero starting offset
    got = make(g)
    want = REF(op, getattr(tp, dtype), n, seed, 64, a, b, base, range, inp)
    for x, y in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert x.dtype == y.dtype and x.device.type == "cuda"
        assert np.array_equal(_bits(_np(x).reshape(-1)), _bits(_np(y)))
    assert _state(g)[1] > 64
    return got


def _bits(a):
    """Floats as their bit patterns (so -0.0 differs from 0.0), other arrays as they are."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.itemsize}")) if a.dtype.kind == "f" else a


SIZES = [1, 3, 1001, (1 << 20) + 3]


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_uniform_normal_exact(dtype, n):
    dt = getattr(tp, dtype)
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").uniform_(-2, 3, generator=g),
                 "uniform", dtype, n, -2.0, 3.0)
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").normal_(1.5, 0.25, generator=g),
                 "normal", dtype, n, 1.5, 0.25)
    _check_exact(lambda g: tp.rand(n, dtype=dt, device="cuda", generator=g), "uniform", dtype, n,
                 0.0, 1.0)
    _check_exact(lambda g: tp.randn(n, dtype=dt, device="cuda", generator=g), "normal", dtype, n,
                 0.0, 1.0)
    _check_exact(lambda g: tp.normal(2.0, 3.0, (n,), dtype=dt, device="cuda", generator=g),
                 "normal", dtype, n, 2.0, 3.0)


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_continuous_distributions_exact(dtype):
    dt, n = getattr(tp, dtype), 4099
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").log_normal_(0.5, 0.75, generator=g),
                 "log_normal", dtype, n, 0.5, 0.75)
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").exponential_(3.0, generator=g),
                 "exponential", dtype, n, 3.0)
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").cauchy_(-1.0, 2.0, generator=g),
                 "cauchy", dtype, n, -1.0, 2.0)


@gpu
@pytest.mark.parametrize("dtype", FLOATS + INTS[1:])
def test_discrete_distributions_exact(dtype):
    dt, n = getattr(tp, dtype), 4099
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").geometric_(0.3, generator=g),
                 "geometric", dtype, n, 0.3)
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").random_(3, 100, generator=g),
                 "random", dtype, n, base=3, range=97)
    _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").bernoulli_(0.25, generator=g),
                 "bernoulli", dtype, n, 0.25)


@gpu
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_random_default_range_exact(dtype):
    dt, n = getattr(tp, dtype), 2053
    if dtype == "bool":
        rng = 2
    elif dtype in INTS:
        rng = int(torch.iinfo(getattr(torch, dtype)).max) + 1
    else:
        rng = 2 ** {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}[dtype] + 1
    got = _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").random_(generator=g),
                       "random", dtype, n, base=0, range=rng)
    v = _np(got).astype(np.float64)
    assert v.min() >= 0 and v.max() <= rng - 1


@gpu
def test_random_ranges_and_randint_exact():
    n = 3001
    for lo, hi in [(-10, 10), (0, 2**32), (-2**40, 2**40), (5, 6)]:
        _check_exact(lambda g: tp.randint(lo, hi, (n,), device="cuda", generator=g), "random",
                     "int64", n, base=lo, range=hi - lo)
    _check_exact(lambda g: tp.empty(n, dtype=tp.int64, device="cuda").random_(
        -2**63, None, generator=g), "random", "int64", n, base=0, range=0)
    _check_exact(lambda g: tp.empty(n, dtype=tp.int8, device="cuda").random_(-128, None, generator=g),
                 "random", "int8", n, base=-128, range=256)
    _check_exact(lambda g: tp.randint(7, (n,), dtype=tp.int16, device="cuda", generator=g),
                 "random", "int16", n, base=0, range=7)
    x = tp.empty(10, 10, device="cuda")
    _check_exact(lambda g: tp.randint_like(x, 2, 9, generator=g), "random", "float32", 100,
                 base=2, range=7)


@gpu
def test_like_factories_exact():
    x = tp.empty(33, 31, dtype=tp.float16, device="cuda")
    r = _check_exact(lambda g: tp.rand_like(x, generator=g), "uniform", "float16", x.numel(), 0.0, 1.0)
    assert r.shape == x.shape and r.dtype == tp.float16 and r.device == x.device
    _check_exact(lambda g: tp.randn_like(x, dtype=tp.float64, generator=g), "normal", "float64",
                 x.numel(), 0.0, 1.0)
    c = tp.rand_like(tp.empty(4, 5), device="cuda")
    assert c.device.type == "cuda" and c.shape == (4, 5)
    assert tp.rand(3, 4, device="cuda", requires_grad=True).requires_grad


@gpu
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_bernoulli_tensor_exact(dtype):
    dt, n = getattr(tp, dtype), 5001
    probs = tp.tensor(np.random.default_rng(8).random(n))  # float64 on the CPU
    # float64 outputs compare against double p, the others against float p
    r = _check_exact(lambda g: tp.empty(n, dtype=dt, device="cuda").bernoulli_(probs, generator=g),
                     "bernoulli_tensor", dtype, n, inp=probs)
    if dtype in FLOATS:
        _check_exact(lambda g: tp.bernoulli(probs.to("cuda", dt), generator=g), "bernoulli_tensor",
                     dtype, n, inp=probs.to(dt))
    assert r.dtype == dt


@gpu
def test_grid_independence():
    # the same launch under a 1-block grid and the default grid: identical, and equal to
    # the (grid-free) host reference
    n = (1 << 21) + 5
    outs = []
    try:
        for limit in (1, 0, 3):
            tp._C._cuda_set_philox_grid_limit(limit)
            g = tp.Generator(device="cuda").manual_seed(5)
            outs.append((tp.empty(n, device="cuda").normal_(generator=g).cpu().numpy(),
                         tp.empty(n, dtype=tp.float64, device="cuda").uniform_(generator=g).cpu().numpy()))
    finally:
        tp._C._cuda_set_philox_grid_limit(0)
    for a, b in outs[1:]:
        assert np.array_equal(a, outs[0][0]) and np.array_equal(b, outs[0][1])
    assert np.array_equal(outs[0][0], REF("normal", tp.float32, n, 5, 0, 0.0, 1.0).numpy())
    off = 4 * ((n + 3) // 4)
    assert np.array_equal(outs[0][1], REF("uniform", tp.float64, n, 5, off, 0.0, 1.0).numpy())


@gpu
def test_non_contiguous_outputs_follow_memory_order():
    seed = 31
    # dense but transposed: memory position k holds reference element k
    g = tp.Generator(device="cuda").manual_seed(seed)
    x = tp.empty(40, 30, device="cuda").t()
    x.uniform_(generator=g)
    ref = REF("uniform", tp.float32, 1200, seed, 0, 0.0, 1.0).numpy()
    assert np.array_equal(x.cpu().numpy(), ref.reshape(40, 30).T)
    # not dense: generated densely in the same dim order, then copied in; the gaps untouched
    base = tp.zeros(20, 30, device="cuda")
    g.manual_seed(seed)
    base[:, ::3].normal_(generator=g)
    ref = REF("normal", tp.float32, 200, seed, 0, 0.0, 1.0).numpy().reshape(20, 10)
    got = base.cpu().numpy()
    assert np.array_equal(got[:, ::3], ref)
    assert not got[:, 1::3].any() and not got[:, 2::3].any()
    # expanded outputs are refused, as on the CPU
    with pytest.raises(RuntimeError, match="more than one element"):
        tp.empty(1, device="cuda").expand(5).uniform_()


@gpu
def test_determinism_per_seed():
    def draw(seed):
        tp.cuda.manual_seed(seed)
        return [tp.rand(1000, device="cuda").cpu().numpy(), tp.randn(999, device="cuda").cpu().numpy(),
                tp.randint(0, 10**9, (777,), device="cuda").cpu().numpy()]
    a, b, c = draw(1), draw(1), draw(2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not any(np.array_equal(x, y) for x, y in zip(a, c))
    # consecutive draws do not repeat
    assert not np.array_equal(a[0], tp.rand(1000, device="cuda").cpu().numpy())


# ---------------------------------------------------------------- on a GPU: statistics
N = 1 << 20


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_statistics_continuous(dtype):
    dt = getattr(tp, dtype)
    tol = 0.01 if dtype in ("float32", "float64") else 0.03

    def sample(fn):
        return _np(fn(tp.empty(N, dtype=dt, device="cuda"))).astype(np.float64)

    u = sample(lambda t: t.uniform_(-1, 3))
    assert u.min() >= -1 and u.max() < 3
    assert abs(u.mean() - 1) < tol and abs(u.var() - 16 / 12) < 4 * tol
    z = sample(lambda t: t.normal_(2, 0.5))
    assert abs(z.mean() - 2) < tol and abs(z.std() - 0.5) < tol
    if dtype in ("float32", "float64"):  # 16-bit rounding moves mass across the bounds
        assert abs(np.mean(np.abs(z - 2) < 0.5) - 0.6827) < 0.005
        assert abs(np.mean(np.abs(z - 2) < 1.0) - 0.9545) < 0.003
    e = sample(lambda t: t.exponential_(4))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < tol and abs(e.std() - 0.25) < tol
    c = sample(lambda t: t.cauchy_(1, 2))
    assert abs(np.median(c) - 1) < 0.02 and abs(np.mean(np.abs(c - 1) < 2) - 0.5) < 0.005
    ln = sample(lambda t: t.log_normal_(0.5, 0.5))
    assert ln.min() > 0 and abs(np.median(ln) - math.exp(0.5)) < 0.02


@gpu
def test_statistics_discrete():
    def sample(fn, dtype=tp.float32):
        return _np(fn(tp.empty(N, dtype=dtype, device="cuda"))).astype(np.float64)

    for p in (0.1, 0.5, 0.9):
        b = sample(lambda t: t.bernoulli_(p))
        assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - p) < 0.003
    gm = sample(lambda t: t.geometric_(0.25), tp.int64)
    assert gm.min() >= 1 and abs(gm.mean() - 4) < 0.03
    r = sample(lambda t: t.random_(-3, 5), tp.int32)
    assert set(np.unique(r)) == set(range(-3, 5)) and abs(r.mean() - 0.5) < 0.01
    r = sample(lambda t: t.random_(), tp.uint8)
    counts = np.bincount(r.astype(np.int64), minlength=256)
    assert counts.min() > 0.8 * N / 256 and counts.max() < 1.2 * N / 256
    r = sample(lambda t: t.random_(), tp.int64)
    assert r.min() >= 0 and abs(r.mean() / 2.0**62 - 1) < 0.01
    r = sample(lambda t: t.random_(-2**63, None), tp.int64)
    assert r.min() < -2**61 and r.max() > 2**61


@gpu
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_bernoulli_edge_probabilities(dtype):
    dt = getattr(tp, dtype)
    assert not _np(tp.empty(N, dtype=dt, device="cuda").bernoulli_(0.0)).any()
    assert _np(tp.empty(N, dtype=dt, device="cuda").bernoulli_(1.0)).all()
    p = tp.tensor([0.0, 1.0] * 50000, device="cuda")
    got = _np(tp.empty(100000, dtype=dt, device="cuda").bernoulli_(p))
    assert np.array_equal(got.astype(bool), np.array([False, True] * 50000))
    if dtype in FLOATS:
        assert np.array_equal(_np(tp.bernoulli(p.to(dt))).astype(bool), got.astype(bool))
        assert _np(tp.bernoulli(tp.ones(7, dtype=dt, device="cuda"), 1.0)).all()


@gpu
def test_bernoulli_tensor_broadcast_and_devices():
    p = tp.tensor([0.0, 1.0, 0.0])
    out = tp.empty(4, 3, device="cuda").bernoulli_(p)  # p on the CPU, broadcast
    assert out.cpu().tolist() == [[0.0, 1.0, 0.0]] * 4
    out = tp.empty(4, 3, dtype=tp.float64, device="cuda").bernoulli_(p.to("cuda", tp.float16))
    assert out.cpu().tolist() == [[0.0, 1.0, 0.0]] * 4
    out = tp.empty(2, 3).bernoulli_(p.to("cuda"))  # a CUDA p for a CPU output
    assert out.tolist() == [[0.0, 1.0, 0.0]] * 2


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_uniform_never_returns_to(dtype):
    dt = getattr(tp, dtype)
    for lo, hi in [(0, 1), (1, 2), (-3, -2)]:
        v = _np(tp.empty(N, dtype=dt, device="cuda").uniform_(lo, hi))
        assert v.min() >= lo and v.max() < hi


# ---------------------------------------------------------------- on a GPU: errors
def _same_error(fn):
    """fn(device) raises on the GPU as on the CPU: same type, same message up to the
    kernel's name ("normal_kernel_cuda" for "normal_kernel_cpu")."""
    with pytest.raises(Exception) as cpu:
        fn("cpu")
    with pytest.raises(type(cpu.value)) as cuda:
        fn("cuda")
    assert str(cuda.value).replace("_cuda", "_cpu") == str(cpu.value)


@gpu
@pytest.mark.parametrize("case", [
    lambda d: tp.empty(3, device=d).uniform_(2, 1),
    lambda d: tp.empty(3, dtype=tp.float16, device=d).uniform_(0, 1e6),
    lambda d: tp.empty(3, dtype=tp.int32, device=d).uniform_(),
    lambda d: tp.empty(3, device=d).normal_(0, -1),
    lambda d: tp.empty(3, device=d).log_normal_(0, 0),
    lambda d: tp.empty(3, dtype=tp.int64, device=d).log_normal_(),
    lambda d: tp.empty(3, device=d).exponential_(-1),
    lambda d: tp.empty(3, dtype=tp.int64, device=d).exponential_(),
    lambda d: tp.empty(3, device=d).cauchy_(0, 0),
    lambda d: tp.empty(3, dtype=tp.int64, device=d).cauchy_(),
    lambda d: tp.empty(3, device=d).geometric_(1.5),
    lambda d: tp.empty(3, device=d).bernoulli_(1.5),
    lambda d: tp.empty(3, device=d).bernoulli_(-0.1),
    lambda d: tp.empty(3, device=d).bernoulli_(tp.tensor([0.5, 2.0, 0.1], device=d)),
    lambda d: tp.empty(3, device=d).bernoulli_(tp.tensor([0.5, float("nan"), 0.1], device=d)),
    lambda d: tp.empty(3, device=d).random_(5, 5),
    lambda d: tp.empty(3, dtype=tp.uint8, device=d).random_(0, 300),
    lambda d: tp.empty(3, dtype=tp.int8, device=d).random_(-200, None),
    lambda d: tp.empty(3, dtype=tp.float16, device=d).random_(0, 70000),
    lambda d: tp.empty(3, dtype=tp.int32, device=d).random_(-2**63, None),
    lambda d: tp.randint(5, 2, (3,), device=d),
    lambda d: tp.rand(3, dtype=tp.int64, device=d),
    lambda d: tp.randn(3, device=d, dtype=tp.int32),
    lambda d: tp.rand(3, device=d, dtype=tp.int32, requires_grad=True),
    lambda d: tp.normal(0.0, -1.0, (3,), device=d),
    lambda d: tp.native_dropout(tp.ones(3, device=d), 1.5, True),
    lambda d: tp.native_dropout(tp.ones(3, dtype=tp.int64, device=d), 0.5, True),
    lambda d: tp.randperm(5, dtype=tp.bool, device=d),
    lambda d: tp.randperm(-1, device=d),
    lambda d: tp.randperm(3000, dtype=tp.float16, device=d),
    lambda d: tp.randperm(200, dtype=tp.int8, device=d),
    lambda d: tp.normal(tp.zeros(2, device=d), -1.0),
    lambda d: tp.normal(tp.zeros(2, device=d), tp.tensor([-1.0, 1.0], device=d)),
    lambda d: tp.normal(tp.zeros(2, device=d), tp.tensor([float("nan"), 1.0], device=d)),
    lambda d: tp.normal(1.0, tp.tensor([1.0, -2.0], device=d)),
    lambda d: tp.normal(tp.zeros(2, dtype=tp.int64, device=d), 1.0),
    lambda d: tp.multinomial(tp.tensor([-1.0, 2.0], device=d), 1),
    lambda d: tp.multinomial(tp.tensor([[1.0, 2.0], [0.5, float("nan")]], device=d), 1),
    lambda d: tp.multinomial(tp.tensor([[0.0, 0.0], [1.0, float("inf")]], device=d), 2),
    lambda d: tp.multinomial(tp.tensor([[1.0, 2.0], [0.0, 0.0]], device=d), 2),
    lambda d: tp.multinomial(tp.tensor([-1.0, 2.0], device=d), 2, True),
    lambda d: tp.multinomial(tp.tensor([float("inf"), 2.0], device=d), 2, True),
    lambda d: tp.multinomial(tp.tensor([float("nan"), 2.0], device=d), 2, True),
    lambda d: tp.multinomial(tp.tensor([[0.0, 0.0], [1.0, -1.0]], device=d), 2, True),
    lambda d: tp.multinomial(tp.tensor([[1.0, 1.0], [2.0, float("inf")], [0.0, 0.0]], device=d), 2,
                             True),
    lambda d: tp.multinomial(tp.tensor([[1.0, 1.0], [2.0, 0.0], [-1.0, float("inf")]], device=d), 2, True),
    lambda d: tp.multinomial(tp.zeros(3, device=d), 1),
    lambda d: tp.multinomial(tp.ones(2, 0, device=d), 1, True),
    lambda d: tp.multinomial(tp.ones(3, device=d), 4),
    lambda d: tp.multinomial(tp.ones(3, device=d), 0),
    lambda d: tp.multinomial(tp.ones(2, 2, 2, device=d), 1),
    lambda d: tp.multinomial(tp.ones(3, dtype=tp.int64, device=d), 1),
    lambda d: tp.multinomial(tp.ones(3, device=d), 2, out=tp.empty(2, device=d)),
    lambda d: tp.poisson(tp.tensor([1.0, -1.0], device=d)),
    lambda d: tp.poisson(tp.tensor([3.0, float("nan")], dtype=tp.float16, device=d)),
    lambda d: tp.poisson(tp.tensor([1, 2], device=d)),
])
def test_errors_match_the_cpu(case):
    _same_error(case)


@gpu
def test_bad_probabilities_leave_the_output_untouched():
    out = tp.zeros(4, device="cuda")
    g = tp.Generator(device="cuda").manual_seed(1)
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        out.bernoulli_(tp.tensor([0.5, 0.5, 1.5, 0.5], device="cuda"), generator=g)
    assert out.cpu().tolist() == [0.0] * 4 and _state(g) == (1, 0)
    with pytest.raises(RuntimeError, match="floating type"):
        out.bernoulli_(tp.tensor([1, 0, 1, 0], device="cuda"))


# ---------------------------------------------------------------- on a GPU: dropout
@gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_native_dropout_cuda_exact(dtype):
    dt = getattr(tp, dtype)
    x = tp.tensor(np.random.default_rng(9).standard_normal(5003), dtype=dt)
    out, mask = _check_exact(lambda g: _native_dropout_with(g, x.to("cuda"), 0.35), "dropout",
                             dtype, 5003, 0.35, inp=x)
    assert out.dtype == dt and mask.dtype == tp.bool and out.device.type == "cuda"


def _native_dropout_with(g, x, p):
    """native_dropout has no generator argument: run it on the default generator set to g's
    state, then move g past the same blocks."""
    dev = x.device.index
    saved = tp.cuda.get_rng_state(dev)
    tp.cuda.set_rng_state(g.get_state(), dev)
    try:
        out = tp.native_dropout(x, p, True)
        g.set_state(tp.cuda.get_rng_state(dev))
    finally:
        tp.cuda.set_rng_state(saved, dev)
    return out


@gpu
def test_native_dropout_cuda_semantics():
    x = tp.randn(64, 48, device="cuda")
    out, mask = tp.native_dropout(x, 0.0, True)
    assert mask.cpu().numpy().all() and np.array_equal(out.cpu().numpy(), x.cpu().numpy())
    out, mask = tp.native_dropout(x, 1.0, True)
    assert not mask.cpu().numpy().any() and not out.cpu().numpy().any()
    out, mask = tp.native_dropout(x, 0.5, False)
    assert mask.cpu().numpy().all() and np.array_equal(out.cpu().numpy(), x.cpu().numpy())
    assert out.data_ptr() != x.data_ptr()
    xt = x.t()
    out, mask = tp.native_dropout(xt, 0.25, True)
    assert tuple(out.stride()) == tuple(xt.stride()) == tuple(mask.stride())
    keep = mask.cpu().numpy()
    assert abs(keep.mean() - 0.75) < 0.05
    np.testing.assert_allclose(out.cpu().numpy(), np.where(keep, xt.cpu().numpy() / 0.75, 0),
                               rtol=1e-6)
    nan = tp.tensor([float("nan")] * 64, device="cuda")
    assert np.isnan(tp.native_dropout(nan, 0.5, True)[0].cpu().numpy()).all()  # nan * 0 = nan


@gpu
def test_dropout_on_cuda_backward():
    import tensorplay.nn.functional as F
    x = tp.randn(32, 16, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.3, training=True)
    assert y.grad_fn.name() == "NativeDropoutBackward0"
    g = tp.randn(32, 16, device="cuda")
    y.backward(g)
    keep = y.detach().cpu().numpy() != 0
    want = np.where(keep, g.cpu().numpy() * np.float32(1 / 0.7), 0)
    np.testing.assert_allclose(x.grad.cpu().numpy(), want, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    z = tp.randn(10, device="cuda")
    zc = z.cpu()
    r = F.dropout(z, 0.5, training=True, inplace=True)
    assert r is z
    kept = z.cpu().numpy() != 0
    np.testing.assert_allclose(z.cpu().numpy()[kept], zc.numpy()[kept] * 2, rtol=1e-6)
    y = tp.nn.Dropout(0.2)(tp.ones(1000, device="cuda", requires_grad=True))
    assert y.device.type == "cuda" and y.grad_fn.name() == "NativeDropoutBackward0"
    assert set(np.unique(y.detach().cpu().numpy())) <= {0.0, np.float32(1 / 0.8)}


@gpu
def test_native_dropout_backward_cuda():
    g = tp.tensor(np.random.default_rng(12).standard_normal((6, 5)), dtype=tp.float16)
    m = tp.tensor(np.random.default_rng(13).random((6, 5)) < 0.5)
    want = tp.native_dropout_backward(g, m, 1 / 0.6)
    got = tp.native_dropout_backward(g.to("cuda"), m.to("cuda"), 1 / 0.6)
    assert got.dtype == tp.float16 and np.array_equal(_np(got), _np(want))
    got = tp.native_dropout_backward(g.to("cuda"), m[0].to("cuda"), 2.0)  # broadcast mask
    assert np.array_equal(_np(got), _np(tp.native_dropout_backward(g, m[0], 2.0)))
    with pytest.raises(RuntimeError, match="Mask should be Bool"):
        tp.native_dropout_backward(g.to("cuda"), m.to("cuda").float(), 2.0)


# ---------------------------------------------------------------- on a GPU: randperm, normal
# with tensors, multinomial, poisson
def _gen_at(seed, offset=64):
    """A CUDA generator at (seed, offset)."""
    g = tp.Generator(device="cuda")
    g.set_state(_make_state(seed, offset))
    return g


def _same_bits(got, want):
    assert got.dtype == want.dtype and got.device.type == "cuda" and tuple(got.shape) == tuple(want.shape)
    assert np.array_equal(_bits(_np(got).reshape(-1)), _bits(_np(want).reshape(-1)))


@gpu
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "float32", "float64", "float16"])
@pytest.mark.parametrize("n", [1, 2, 1001, (1 << 20) + 3])
def test_randperm_cuda_exact(dtype, n):
    n = min(n, {"int16": 32768, "float16": 2049}.get(dtype, n))
    g = _gen_at(7)
    got = tp.randperm(n, dtype=getattr(tp, dtype), device="cuda", generator=g)
    assert got.dtype == getattr(tp, dtype) and got.device.type == "cuda" and got.shape == (n,)
    keys = REF("random", tp.int64, n, 7, 64, base=0, range=0).numpy().view(np.uint64)
    assert np.array_equal(_np(got).astype(np.int64), np.argsort(keys, kind="stable"))
    assert _state(g) == (7, 64 + 4 * ((n + 1) // 2))


@gpu
def test_randperm_cuda_semantics():
    n = 100003
    a = tp.randperm(n, device="cuda", generator=_gen_at(1)).cpu().numpy()
    assert np.array_equal(np.sort(a), np.arange(n))
    assert np.array_equal(a, tp.randperm(n, device="cuda", generator=_gen_at(1)).cpu().numpy())
    assert not np.array_equal(a, tp.randperm(n, device="cuda", generator=_gen_at(2)).cpu().numpy())
    tp.cuda.manual_seed(5)
    b = tp.randperm(n, device="cuda").cpu().numpy()
    assert not np.array_equal(b, tp.randperm(n, device="cuda").cpu().numpy())
    out = tp.zeros(2 * n, dtype=tp.int64, device="cuda")
    r = tp.randperm(n, generator=_gen_at(1), out=out[::2])
    assert np.array_equal(out.cpu().numpy()[::2], a) and not out.cpu().numpy()[1::2].any()
    assert r.data_ptr() == out.data_ptr()
    g = _gen_at(1)
    e = tp.randperm(0, device="cuda", generator=g)
    assert e.shape == (0,) and e.dtype == tp.int64 and _state(g) == (1, 64)
    f = tp.randperm(10, dtype=tp.float32, device="cuda", requires_grad=True)
    assert f.requires_grad and sorted(f.detach().cpu().tolist()) == list(range(10))


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_tensor_overloads_cuda_exact(dtype):
    # one N(0, s) launch, then the CPU path's mul_ / add_: the same bits as the reference
    # composed on the CPU
    dt = getattr(tp, dtype)
    mean = tp.tensor(np.linspace(-2, 2, 40).reshape(8, 5), dtype=dt)
    std = tp.tensor(np.linspace(0.1, 3, 5), dtype=dt)
    z = REF("normal", dt, 40, 3, 64, 0.0, 0.5).reshape(8, 5)
    _same_bits(tp.normal(mean.cuda(), 0.5, generator=_gen_at(3)), z.add_(mean))
    z = REF("normal", dt, 5, 3, 64, 0.0, 1.0)
    _same_bits(tp.normal(1.5, std.cuda(), generator=_gen_at(3)),
               z.mul_(std).add_(tp.full((), 1.5, dtype=dt)))
    m = mean[:, :1]  # broadcast (8, 1) against (5,)
    z = REF("normal", dt, 40, 3, 64, 0.0, 1.0).reshape(8, 5)
    _same_bits(tp.normal(m.cuda(), std.cuda(), generator=_gen_at(3)), z.mul_(std).add_(m))
    out = tp.empty(8, 5, dtype=dt, device="cuda")
    r = tp.normal(m.cuda(), std.cuda(), generator=_gen_at(3), out=out)
    assert r.data_ptr() == out.data_ptr()
    _same_bits(out, z)
    g = _gen_at(3)
    tp.normal(mean.cuda(), std.cuda(), generator=g)
    assert _state(g)[1] == 64 + 4 * (40 // (2 if dtype == "float64" else 4))


@gpu
def test_normal_tensor_overloads_cuda_statistics():
    mean = tp.tensor([[-3.0], [0.0], [5.0]], device="cuda").expand(3, N // 4)
    std = tp.tensor(np.repeat([0.5, 2.0, 0.0, 1.0], N // 16), dtype=tp.float32, device="cuda")
    x = tp.normal(mean, std).cpu().numpy()
    assert x.shape == (3, N // 4)
    s = std.cpu().numpy()
    for r, mu in enumerate([-3.0, 0.0, 5.0]):
        for sd in (0.5, 2.0, 1.0):
            v = x[r][s == sd]
            assert abs(v.mean() - mu) < 5 * sd / math.sqrt(v.size) and abs(v.std() / sd - 1) < 0.02
        assert (x[r][s == 0] == mu).all()


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_cuda_exact(dtype):
    dt = getattr(tp, dtype)
    acc = tp.float64 if dtype == "float64" else tp.float32
    w = np.random.default_rng(1).random((6, 300))
    w[:, 3] = 0
    p = tp.tensor(w, dtype=dt)
    keys = REF("multinomial_keys", acc, w.size, 11, 64, input=p.reshape(-1)).numpy().reshape(6, 300)
    order = np.argsort(-keys, axis=1, kind="stable")
    g = _gen_at(11)
    one = tp.multinomial(p.cuda(), 1, generator=g)
    assert one.dtype == tp.int64 and one.shape == (6, 1)
    assert np.array_equal(one.cpu().numpy()[:, 0], keys.argmax(1))
    assert _state(g)[1] == 64 + 4 * (w.size // (2 if dtype == "float64" else 4))
    got = tp.multinomial(p.cuda(), 20, generator=_gen_at(11))
    assert np.array_equal(got.cpu().numpy(), order[:, :20])
    got = tp.multinomial(p[0].cuda(), 5, generator=_gen_at(11))  # 1-D: row 0's keys
    assert got.shape == (5,) and np.array_equal(got.cpu().numpy(), order[0, :5])
    # with replacement: against the reference over the device's own float64 cumsum
    pc = p.cuda()
    cum = tp.cumsum(pc.double(), -1).cpu()
    got = tp.multinomial(pc, 50, True, generator=_gen_at(11))
    want = REF("multinomial_draws", tp.int64, 300, 11, 64, input=cum).numpy().reshape(6, 50)
    assert np.array_equal(got.cpu().numpy(), want) and not (got.cpu().numpy() == 3).any()
    out = tp.full((50, 6), -1, dtype=tp.int64, device="cuda").t()
    got = tp.multinomial(pc, 50, True, generator=_gen_at(11), out=out)
    assert got.data_ptr() == out.data_ptr() and np.array_equal(out.cpu().numpy(), want)


@gpu
def test_multinomial_cuda_statistics():
    probs = np.array([0.1, 0.0, 0.2, 0.3, 0.4])
    n = 200000

    def freq(s):
        return np.bincount(s.reshape(-1), minlength=5) / s.size

    f = freq(tp.multinomial(tp.tensor(probs, device="cuda"), n, True).cpu().numpy())
    assert f[1] == 0 and np.abs(f - probs).max() < 0.005
    rows = tp.tensor(np.tile(probs, (n, 1)), dtype=tp.float32, device="cuda")
    f = freq(tp.multinomial(rows, 1).cpu().numpy())
    assert f[1] == 0 and np.abs(f - probs).max() < 0.005
    two = tp.multinomial(rows, 2).cpu().numpy()
    assert (two[:, 0] != two[:, 1]).all() and not (two == 1).any()
    f = freq(two[:, :1])  # the first draw follows the probabilities
    assert np.abs(f - probs).max() < 0.005
    # second draw: P(j second) = sum_i p_i p_j / (1 - p_i)
    want = np.array([sum(probs[i] * probs[j] / (1 - probs[i]) for i in range(5) if i != j)
                     for j in range(5)])
    assert np.abs(freq(two[:, 1:]) - want).max() < 0.005
    full = tp.multinomial(rows[:1000], 5).cpu().numpy()
    assert (np.sort(full, 1) == np.arange(5)).all() and (full[:, 4] == 1).all()
    big = tp.rand(3, 100000, device="cuda")
    s = tp.multinomial(big, 1000).cpu().numpy()
    assert all(len(set(r)) == 1000 for r in s)
    s = tp.multinomial(big, 3000, True).cpu().numpy()
    assert s.min() >= 0 and s.max() < 100000


@gpu
def test_multinomial_cuda_bad_input_draws_nothing():
    g = _gen_at(4)
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        tp.multinomial(tp.zeros(2, 3, device="cuda"), 2, True, generator=g)
    with pytest.raises(RuntimeError, match="element < 0"):
        tp.multinomial(tp.tensor([1.0, -1.0], device="cuda"), 1, generator=g)
    assert _state(g) == (4, 64)
    e = tp.multinomial(tp.ones(0, 3, device="cuda"), 2, generator=g)
    assert e.shape == (0, 2) and e.dtype == tp.int64 and _state(g) == (4, 64)


@gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_poisson_cuda_exact(dtype):
    dt = getattr(tp, dtype)
    n = 5001
    rates = tp.tensor(np.random.default_rng(6).choice([0.0, 0.25, 4.0, 12.0, 80.0, 3e4], n), dtype=dt)
    g = _gen_at(13)
    _same_bits(tp.poisson(rates.cuda(), g), REF("poisson", dt, n, 13, 64, input=rates))
    assert _state(g) == (13, 64 + 4 * n)
    r = rates.cuda()[:5000].reshape(50, 100).t()  # read in row-major order
    got = tp.poisson(r, _gen_at(13))
    assert got.shape == (100, 50) and got.is_contiguous()
    _same_bits(got.reshape(-1), REF("poisson", dt, 5000, 13, 64, input=r.contiguous().cpu()))
    try:
        for limit in (1, 3):
            tp._C._cuda_set_philox_grid_limit(limit)
            _same_bits(tp.poisson(rates.cuda(), _gen_at(13)), REF("poisson", dt, n, 13, 64, input=rates))
    finally:
        tp._C._cuda_set_philox_grid_limit(0)


@gpu
@pytest.mark.parametrize("lam", [0.5, 5.0, 50.0, 500.0])
def test_poisson_cuda_statistics(lam):
    v = tp.poisson(tp.full((N,), lam, device="cuda")).cpu().numpy().astype(np.float64)
    assert (v >= 0).all() and (v == np.floor(v)).all()
    assert abs(v.mean() - lam) < 5 * math.sqrt(lam / N)
    assert abs(v.var() / lam - 1) < 0.02


@gpu
def test_poisson_cuda_bad_rates_draw_nothing():
    g = _gen_at(9)
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        tp.poisson(tp.tensor([1.0, -0.5], device="cuda"), g)
    assert _state(g) == (9, 64)
    assert tp.poisson(tp.empty(0, 3, device="cuda")).shape == (0, 3)
    z = tp.poisson(tp.zeros(1000, dtype=tp.float64, device="cuda"))
    assert z.dtype == tp.float64 and not z.cpu().numpy().any()
