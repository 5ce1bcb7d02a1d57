"""float32 exp / log / sin / cos / tanh / sigmoid within 1 ulp of the correctly rounded
result (Note [float32 math] in csrc/kernels/functors/vec_math.h): a spread sample of each
function's range (scripts/check_float32_ulp.py checks every float32), the special values,
the positional-encoding table of issue 32, and the same bits at every CPU level."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tensorplay as tp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
from check_float32_ulp import FUNCTIONS, SPECIAL, ulp_error  # noqa: E402

SAMPLES = 1 << 20  # per function and sign: a few million values in all, in seconds


def spread(lo, hi, n=SAMPLES):
    """n float32 values of [lo, hi] evenly spaced in bit pattern (every binade, subnormals
    included), both signs where lo < 0."""
    def span(a, b):
        ua, ub = np.float32(a).view(np.uint32), np.float32(b).view(np.uint32)
        return np.linspace(int(ua), int(ub), n).astype(np.uint32).view(np.float32)
    if lo >= 0:
        return span(lo, hi)
    return np.concatenate([span(0.0, hi), -span(0.0, -lo)])


def check(name, x, bound=1.0):
    ref = FUNCTIONS[name][0](x.astype(np.float64))
    y = getattr(tp, name)(tp.from_numpy(x)).numpy()
    err = ulp_error(y, ref)
    i = int(np.argmax(err))
    assert err[i] <= bound, f'{name}({x[i]!r}) = {y[i]!r}, {err[i]:.3f} ulp from {ref[i]!r}'
    return err


@pytest.mark.parametrize('name', [n for n in FUNCTIONS if n != 'sigmoid'])
def test_spread_sample_within_one_ulp(name):
    (lo, hi), = FUNCTIONS[name][1]
    x = spread(lo, hi)
    err = check(name, x)
    # mostly correctly rounded: a method 1 ulp off everywhere would fail here
    assert np.count_nonzero(err > 0.5) < 0.01 * len(x), name


def test_sigmoid_float_formula():
    # sigmoid keeps PyTorch's float formula 1 / (1 + exp(-x)) for speed (Note [float32 math]):
    # within 3 ulp where the result is normal, 0 from -88.7 down, 1 from 17 up, as PyTorch
    x = spread(-87.0, 89.0)
    check('sigmoid', x, bound=3.0)
    y = tp.sigmoid(tp.from_numpy(np.float32([-89.0, -100.0, -1e30, 17.5, 1e30]))).numpy()
    np.testing.assert_array_equal(y, np.float32([0, 0, 0, 1, 1]))
    xs = spread(-80.0, 80.0, 100003)
    np.testing.assert_allclose(tp.sigmoid(tp.from_numpy(xs)).numpy(), torch.sigmoid(torch.from_numpy(xs)).numpy(),
                               rtol=3e-7, atol=0)


@pytest.mark.parametrize('name', ['sin', 'cos'])
def test_sin_cos_large_arguments(name):
    # past the float fast path (800), past the double one (1.5e6), up to the largest float
    x = np.concatenate([spread(800.0, 2e6, 200000), spread(2e6, 3.4e38, 200000),
                        np.float32([801.0, 1e4, 1.5e6, 1.6e6, 1e20, 3.4028235e38, -1e30])])
    check(name, x)
    # a single huge lane among small ones: every lane still right
    y = np.float32([0.5] * 15 + [1e30])
    check(name, y)


@pytest.mark.parametrize('name', list(FUNCTIONS))
def test_special_values(name):
    # NaN positions, infinities and the sign of zeros exactly; the rest within an ulp
    x = np.concatenate([SPECIAL, SPECIAL[::-1], SPECIAL[:7]])  # every vector width and tail
    check(name, x)
    y = getattr(tp, name)(tp.from_numpy(x)).numpy()
    yt = getattr(torch, name)(torch.from_numpy(x)).numpy()
    assert np.array_equal(np.isnan(y), np.isnan(yt))
    inf = np.isinf(y) | np.isinf(yt)
    assert np.array_equal(y[inf], yt[inf])
    zero = (y == 0) & (yt == 0)
    assert np.array_equal(np.signbit(y[zero]), np.signbit(yt[zero]))


def test_positional_encoding_table():
    # issue 32: exp of the frequencies, then sin / cos of positions times them
    freq_arg = (np.arange(0, 512, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / 512)).astype(np.float32)
    err = check('exp', freq_arg)
    assert np.count_nonzero(err > 0.5) <= len(freq_arg) // 10
    freq = tp.exp(tp.from_numpy(freq_arg)).numpy()
    pos = np.arange(2048, dtype=np.float32)[:, None]
    angles = (pos * freq[None, :]).astype(np.float32).ravel()
    for name in ('sin', 'cos'):
        err = check(name, angles)
        assert np.count_nonzero(err > 0.5) < 0.05 * len(angles)  # torch 2.13: ~5%


def test_paths_through_the_vector_bodies():
    # softmax, sigmoid's activations and non-contiguous inputs run the same math
    x = spread(-80.0, 80.0, 50000)
    ref = np.exp(x.astype(np.float64))
    t = tp.from_numpy(np.stack([x, x], 1))
    assert ulp_error(tp.exp(t[:, 0]).numpy(), ref).max() <= 1.0  # strided: the scalar path
    s = tp.nn.functional.silu(tp.from_numpy(x)).numpy()
    s_ref = x.astype(np.float64) / (1.0 + np.exp(-x.astype(np.float64)))
    assert ulp_error(s, s_ref).max() <= 2.0


LEVEL_BITS = r'''
import sys, numpy as np, tensorplay as tp
sys.path.insert(0, sys.argv[1])
from test_float32_accuracy import spread
out = []
for name, rng in (('exp', (-104, 89)), ('log', (0, 3.4e38)), ('sin', (-2e3, 2e3)),
                  ('cos', (-2e3, 2e3)), ('tanh', (-10, 10)), ('sigmoid', (-104, 89))):
    x = spread(*rng, 100003)
    out.append(getattr(tp, name)(tp.from_numpy(x)).numpy().view(np.uint32))
sys.stdout.buffer.write(np.concatenate(out).tobytes())
'''


def test_same_bits_at_every_level():
    env = {k: v for k, v in os.environ.items() if k not in ('TP_CPU_CAPABILITY', 'ATEN_CPU_CAPABILITY')}
    results = {}
    for level in ('default', 'avx2', 'avx512'):
        r = subprocess.run([sys.executable, '-c', textwrap.dedent(LEVEL_BITS),
                            os.path.join(ROOT, 'tests', 'python')],
                           env=dict(env, TP_CPU_CAPABILITY=level), capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        results[level] = r.stdout
    assert results['avx2'] == results['default']
    assert results['avx512'] == results['default']
