"""CPU capability levels (Note [CPU capability]): detection, the TP_CPU_CAPABILITY override,
the same special-value results at every level, and the op database rerun at each level below
the machine's highest (the main run covers the highest)."""
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LEVELS = ('default', 'avx2', 'avx512')


def _run(code, **env_overrides):
    """Runs `code` in a fresh interpreter with the CPU-level variables of this process
    removed and `env_overrides` set; returns its stdout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('TP_CPU_CAPABILITY', 'ATEN_CPU_CAPABILITY', 'ONEDNN_MAX_CPU_ISA')}
    env.update(env_overrides)
    r = subprocess.run([sys.executable, '-c', textwrap.dedent(code)], env=env, capture_output=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r.stdout


def _level_of(**env):
    return _run('import tensorplay as tp; print(tp.backends.cpu.get_cpu_capability())',
                **env).decode().strip()


@pytest.fixture(scope='module')
def highest():
    return _level_of()


def test_highest_level_is_pytorchs(highest):
    # with no override both libraries pick the highest level the CPU supports
    torch_level = _run('import torch; print(torch.backends.cpu.get_cpu_capability())').decode().strip()
    assert highest == torch_level


def test_override_lowers_never_raises(highest):
    top = LEVELS.index(highest.lower())
    for i, name in enumerate(LEVELS):
        assert _level_of(TP_CPU_CAPABILITY=name) == LEVELS[min(i, top)].upper()
    assert _level_of(TP_CPU_CAPABILITY='no-such-level') == highest
    # PyTorch's variable counts when ours is unset; ours wins when both are set
    assert _level_of(ATEN_CPU_CAPABILITY='default') == 'DEFAULT'
    assert _level_of(ATEN_CPU_CAPABILITY='default', TP_CPU_CAPABILITY=highest.lower()) == highest


SPECIAL_VALUES = r'''
import pickle, sys
import numpy as np
import tensorplay as tp

rng = np.random.default_rng(0)
special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e30, -1e30, 0.5, -0.5, 1.0, -1.0,
           3.0, -3.0, 20.0, -20.0, 100.0, -100.0]
# 53 elements: every vector width's body and its scalar tail see the special values
base = np.concatenate([special, rng.standard_normal(53 - len(special)) * 4]).astype(np.float32)
F = tp.nn.functional
unary = {name: getattr(tp, name) for name in (
    'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'sqrt', 'rsqrt', 'sin', 'cos', 'tan', 'tanh',
    'sigmoid', 'erf', 'erfc', 'abs', 'neg', 'reciprocal', 'floor', 'ceil', 'round', 'trunc',
    'sign', 'logit', 'atan', 'asinh', 'sinh', 'cosh', 'exp2')}
unary.update({'gelu': F.gelu, 'gelu_tanh': lambda x: F.gelu(x, approximate='tanh'),
              'silu': F.silu, 'mish': F.mish, 'softplus': F.softplus, 'elu': F.elu,
              'celu': F.celu, 'selu': F.selu, 'hardswish': F.hardswish,
              'hardsigmoid': F.hardsigmoid, 'leaky_relu': F.leaky_relu, 'relu': F.relu,
              'softmax': lambda x: F.softmax(x, 0), 'log_softmax': lambda x: F.log_softmax(x, 0),
              'sum': lambda x: x.sum().reshape(1), 'amax': lambda x: x.amax().reshape(1),
              'to_bfloat16': lambda x: x.to(tp.bfloat16).float(),
              'to_float16': lambda x: x.to(tp.float16).float()})
out = {}
for dtype in (tp.float32, tp.float64):
    for name, f in unary.items():
        x = tp.tensor(base.astype(np.float64), dtype=dtype, requires_grad=True)
        y = f(x)
        (g,) = tp.autograd.grad(y.sum(), x) if y.requires_grad else (None,)
        out[(name, str(dtype))] = (y.detach().double().numpy(),
                                   None if g is None else g.double().numpy())
sys.stdout.buffer.write(pickle.dumps(out))
'''


def _same_specials(a, b, ctx, atol):
    """NaN positions and infinities identical, zeros of the same sign (a zero rounded from
    1 - y * y may be a few ulps on the other level); the rest within a few ulps."""
    assert np.array_equal(np.isnan(a), np.isnan(b)), f'{ctx}: NaN positions differ\n{a}\n{b}'
    inf = np.isinf(a) | np.isinf(b)
    assert np.array_equal(a[inf], b[inf]), f'{ctx}: infinities differ: {a[inf]} != {b[inf]}'
    zero = (a == 0) & (b == 0)
    assert np.array_equal(np.signbit(a[zero]), np.signbit(b[zero])), f'{ctx}: signs of zeros differ'
    finite = np.isfinite(a) & np.isfinite(b)
    np.testing.assert_allclose(a[finite], b[finite], rtol=2e-6, atol=atol, err_msg=ctx)


def test_every_level_gives_the_same_special_values(highest):
    results = {}
    for level in LEVELS[:LEVELS.index(highest.lower()) + 1]:
        results[level] = pickle.loads(_run(SPECIAL_VALUES, TP_CPU_CAPABILITY=level))
    ref_level = LEVELS[0]
    for level, res in results.items():
        for key, (y, g) in res.items():
            y0, g0 = results[ref_level][key]
            atol = 1e-6 if key[1].endswith('float32') else 1e-14  # a few ulps of 1
            _same_specials(y, y0, f'{key} forward, {level} vs {ref_level}', atol)
            if g is not None:
                _same_specials(g, g0, f'{key} gradient, {level} vs {ref_level}', atol)


OPDB_SUITES = ('test_ops.py', 'test_autograd_ops.py', 'test_forward_ad_ops.py')


def test_op_database_at_lower_levels(highest):
    """The op database's parity, gradient and forward-AD suites at every level below the
    machine's highest (the main run covers the highest)."""
    env = {k: v for k, v in os.environ.items() if k not in ('ATEN_CPU_CAPABILITY', 'ONEDNN_MAX_CPU_ISA')}
    suites = [os.path.join(ROOT, 'tests', 'python', s) for s in OPDB_SUITES]
    for level in LEVELS[:LEVELS.index(highest.lower())]:
        env['TP_CPU_CAPABILITY'] = level
        r = subprocess.run([sys.executable, '-m', 'pytest', '-x', '-p', 'no:cacheprovider', *suites],
                           env=env, capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, f'{level}:\n' + r.stdout[-4000:]
        assert f'tensorplay {level.upper()}, torch AVX2' in r.stdout, r.stdout[:2000]
