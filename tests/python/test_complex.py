"""Complex tensors against PyTorch: dtypes and promotion, creation and interop, the views
between complex and real, element-wise math, reductions, matmul, printing, and gradients in
PyTorch's convention (dL/dRe z + i dL/dIm z)."""
import io
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp


def run(lib, f):
    """f(lib)'s outcome: (dtype, shape, strides, values) or the exception type."""
    try:
        r = f(lib)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    if not hasattr(r, 'dtype'):
        return r
    return (str(r.dtype).split('.')[-1], tuple(r.shape), tuple(r.stride()), r)


def values(r):
    return np.array(r.tolist(), dtype=np.complex128 if r.dtype.is_complex else np.float64)


def check(f, rtol=1.3e-6, atol=1e-6):
    a, b = run(tp, f), run(torch, f)
    if isinstance(b, tuple):
        assert isinstance(a, tuple), a
        assert a[:3] == b[:3]
        np.testing.assert_allclose(values(a[3]), values(b[3]), rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert a == b


Z = [[1 + 2j, 3 - 1j, -0.5 + 0.25j], [0.5j, -2, 1e-3 - 4j]]
R = [[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]]


@pytest.mark.parametrize('name', ['complex64', 'complex128'])
def test_dtype_objects(name):
    d, td = getattr(tp, name), getattr(torch, name)
    assert d.is_complex and not d.is_floating_point and d.itemsize == td.itemsize
    assert repr(d) == 'tensorplay.' + name
    assert str(d.to_real()).split('.')[-1] == str(td.to_real()).split('.')[-1]
    assert tp.cfloat is tp.complex64 and tp.cdouble is tp.complex128


@pytest.mark.parametrize('a', ['float16', 'float32', 'float64', 'int32', 'int64', 'bool', 'complex64', 'complex128'])
@pytest.mark.parametrize('b', ['complex64', 'complex128'])
def test_promote_types(a, b):
    want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split('.')[-1]
    if want == 'complex32':  # tensorplay has no complex32: float16 with complex goes to complex64
        want = 'complex64'
    assert str(tp.promote_types(getattr(tp, a), getattr(tp, b))).split('.')[-1] == want


@pytest.mark.parametrize('f', [
    lambda m: m.ones(3) * 1j,
    lambda m: m.arange(3) * (1 - 1j),
    lambda m: m.ones(2, dtype=m.float64) + m.tensor(1j),
    lambda m: m.ones(2, dtype=m.int32) + m.tensor(1j, dtype=m.complex128),
    lambda m: m.ones(2) * m.tensor(1j, dtype=m.complex128),
    lambda m: m.ones(2, dtype=m.complex64) + m.tensor(1.0, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.complex64) + m.ones(2, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.complex64) * 2.5,
])
def test_result_types(f):
    check(f)


@pytest.mark.parametrize('f', [
    lambda m: m.tensor(Z),
    lambda m: m.tensor([1, 2.5, 1j]),
    lambda m: m.tensor(Z, dtype=m.complex128),
    lambda m: m.tensor(1 + 1j),
    lambda m: m.tensor([np.complex64(1 + 2j), np.complex128(3j)]),
    lambda m: m.zeros(2, 3, dtype=m.cfloat),
    lambda m: m.ones(2, dtype=m.cdouble),
    lambda m: m.full((2,), 1 + 2j),
    lambda m: m.full((2,), 3, dtype=m.complex64),
    lambda m: m.zeros(2).fill_(1j),
    lambda m: m.zeros(2).fill_(1 + 0j),
    lambda m: m.zeros(2, dtype=m.complex64).fill_(1e300),
    lambda m: m.tensor(Z).to(m.float32),
    lambda m: m.tensor(Z).to(m.int64),
    lambda m: m.tensor(Z).to(m.bool),
    lambda m: m.tensor(R).to(m.complex128),
    lambda m: m.tensor(Z).cdouble().cfloat(),
    lambda m: m.tensor(Z).clone().t().contiguous(),
    lambda m: m.tensor(Z)[1, ::2],
])
def test_creation_and_casts(f):
    check(f)


def test_item_tolist_numpy_dlpack():
    a = tp.tensor(Z)
    assert a[0, 1].item() == 3 - 1j and isinstance(a[0, 0].item(), complex)
    assert a.tolist() == torch.tensor(Z).tolist()
    n = a.numpy()
    assert n.dtype == np.complex64 and n.tolist() == a.tolist()
    n[0, 0] = 5j  # shares memory
    assert a[0, 0].item() == 5j
    b = tp.from_numpy(np.array([1 + 1j, 2 - 3j]))
    assert b.dtype == tp.complex128 and b.tolist() == [1 + 1j, 2 - 3j]
    assert torch.from_dlpack(a).tolist() == a.tolist()
    c = tp.from_dlpack(torch.tensor([1 + 1j, 2j], dtype=torch.complex128))
    assert c.dtype == tp.complex128 and c.tolist() == [1 + 1j, 2j]


def test_save_load_with_torch():
    a = tp.tensor(Z, dtype=tp.complex128)
    buf = io.BytesIO()
    tp.save({'x': a}, buf)
    buf.seek(0)
    t = torch.load(buf)['x']
    assert t.dtype == torch.complex128 and t.tolist() == a.tolist()
    buf = io.BytesIO()
    torch.save({'x': torch.tensor(Z)}, buf)
    buf.seek(0)
    b = tp.load(buf)['x']
    assert b.dtype == tp.complex64 and b.tolist() == torch.tensor(Z).tolist()


@pytest.mark.parametrize('f', [
    lambda m: m.view_as_real(m.tensor(Z)),
    lambda m: m.view_as_real(m.tensor(Z).t()),
    lambda m: m.view_as_real(m.tensor(Z)[:, 1:]),
    lambda m: m.view_as_real(m.tensor(R)),
    lambda m: m.view_as_complex(m.arange(12.).view(3, 2, 2)),
    lambda m: m.view_as_complex(m.arange(12., dtype=m.float64).view(2, 3, 2)[:, 1:]),
    lambda m: m.view_as_complex(m.ones(3, 4, 2)[:, ::2]),
    lambda m: m.view_as_complex(m.ones(2)),
    lambda m: m.view_as_complex(m.ones(3)),
    lambda m: m.view_as_complex(m.ones(3, 2).t()),
    lambda m: m.view_as_complex(m.ones(7)[1:].view(3, 2)),
    lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.long)),
    lambda m: m.real(m.tensor(Z)),
    lambda m: m.imag(m.tensor(Z)),
    lambda m: m.tensor(Z).real,
    lambda m: m.tensor(Z).imag,
    lambda m: m.real(m.tensor(R)),
    lambda m: m.imag(m.tensor(R)),
    lambda m: m.complex(m.tensor(R), m.tensor(R).flip(0)),
    lambda m: m.complex(m.ones(2, 1), m.arange(3.)),
    lambda m: m.complex(m.ones(2), m.ones(2, dtype=m.float64)),
    lambda m: m.complex(m.ones(2, dtype=m.long), m.ones(2, dtype=m.long)),
    lambda m: m.polar(m.tensor(R).abs(), m.tensor(R)),
    lambda m: m.polar(m.ones(2, dtype=m.float64), m.ones(2)),
])
def test_views_and_parts(f):
    check(f)


def test_parts_write_through():
    for m in (tp, torch):
        a = m.tensor(Z)
        a.real = m.ones(2, 3)
        a.imag[0, 0] = 7
        m.view_as_real(a)[1, 1, 1] = -9
        if m is tp:
            got = a.tolist()
        else:
            want = a.tolist()
    assert got == want


@pytest.mark.parametrize('f', [
    lambda m: m.tensor(Z) + m.tensor(Z).flip(0),
    lambda m: m.tensor(Z) - 2j,
    lambda m: m.tensor(Z) * m.tensor(Z),
    lambda m: m.tensor(Z) * m.tensor(R),
    lambda m: m.tensor(Z) / m.tensor(Z).flip(1),
    lambda m: 1 / m.tensor(Z),
    lambda m: m.tensor(Z) / 0,
    lambda m: -m.tensor(Z),
    lambda m: m.add(m.tensor(Z), m.tensor(Z), alpha=2 - 1j),
    lambda m: m.tensor(Z) == m.tensor(Z).conj(),
    lambda m: m.tensor(Z) != 0.5j,
    lambda m: m.tensor(Z) < 1,
    lambda m: m.exp(m.tensor(Z)),
    lambda m: m.log(m.tensor(Z)),
    lambda m: m.sqrt(m.tensor(Z)),
    lambda m: m.sin(m.tensor(Z)),
    lambda m: m.cos(m.tensor(Z)),
    lambda m: m.tanh(m.tensor(Z)),
    lambda m: m.sigmoid(m.tensor(Z)),
    lambda m: m.reciprocal(m.tensor(Z, dtype=m.complex128)),
    lambda m: m.abs(m.tensor(Z)),
    lambda m: m.abs(m.tensor(Z, dtype=m.complex128)),
    lambda m: m.tensor(Z).abs_(),
    lambda m: m.angle(m.tensor(Z)),
    lambda m: m.angle(m.tensor([-1, 0, 2])),
    lambda m: m.angle(m.tensor([-1., float('nan'), 2, -0.0])),
    lambda m: m.sgn(m.tensor(Z + [[0j, 0j, 0j]])),
    lambda m: m.tensor(Z).conj(),
    lambda m: m.tensor(Z).conj_physical(),
    lambda m: m.conj_physical(m.tensor(R)),
    lambda m: m.where(m.tensor(R) > 0, m.tensor(Z), 0j),
    lambda m: m.tensor(Z).sum(),
    lambda m: m.tensor(Z).sum(0),
    lambda m: m.tensor(Z).sum(-1, keepdim=True),
    lambda m: m.tensor(Z).mean(),
    lambda m: m.tensor(Z, dtype=m.complex128).mean(1),
    lambda m: m.tensor(R).sum(dtype=m.complex64),
    lambda m: m.tensor(Z) @ m.tensor(Z).t(),
    lambda m: m.tensor(Z, dtype=m.complex128).t() @ m.tensor(Z, dtype=m.complex128),
    lambda m: m.matmul(m.tensor(Z).expand(4, 2, 3), m.tensor(Z).t()),
])
def test_math(f):
    check(f, rtol=1e-5)


_PARTS = [0.0, -0.0, 1.0, -1.0, 0.5, -3.0, 30.0, float('inf'), float('-inf'), float('nan')]
SPECIAL_Z = [complex(a, b) for a in _PARTS for b in _PARTS]


def _same_special(got, want, rtol, zero_signs=True):
    """Equal NaN positions, infinities and (with zero_signs) signed zeros; finite parts close."""
    if not np.iscomplexobj(want):
        np.testing.assert_array_equal(got, want)
        return
    for g, w in zip(got.ravel(), want.ravel()):
        for x, y in ((g.real, w.real), (g.imag, w.imag)):
            if np.isnan(y) or np.isinf(y) or y == 0:
                assert (np.isnan(x) and np.isnan(y)) or (x == y and (np.signbit(x) == np.signbit(y) or
                                                                     not zero_signs)), (g, w)
            else:
                assert abs(x - y) <= rtol * abs(y), (g, w)


@pytest.mark.parametrize('dtype', ['complex64', 'complex128'])
@pytest.mark.parametrize('name', ['rsqrt', 'exp2', 'expm1', 'log2', 'log10', 'log1p', 'tan', 'asin',
                                  'acos', 'atan', 'sinh', 'cosh', 'asinh', 'acosh', 'atanh', 'sinc',
                                  'isnan', 'isinf', 'isfinite', 'logical_not', 'nan_to_num'])
def test_special_values(name, dtype):
    """Annex G special values (infinities, NaN, signed zeros, branch cuts) as PyTorch gives them."""
    got = getattr(tp, name)(tp.tensor(SPECIAL_Z, dtype=getattr(tp, dtype))).numpy()
    want = getattr(torch, name)(torch.tensor(SPECIAL_Z, dtype=getattr(torch, dtype))).numpy()
    assert got.dtype == want.dtype
    # PyTorch's complex128 acos is pi/2 - asin(z): its zero imaginary parts are +0 where
    # Annex G's cacos (ours, and PyTorch's complex64) gives -0
    zero_signs = not (name == 'acos' and dtype == 'complex128')
    _same_special(got, want, 2e-6 if dtype == 'complex64' else 1e-13, zero_signs)


@pytest.mark.parametrize('f', [
    lambda m: m.pow(m.tensor(Z), m.tensor(Z).flip(0)),
    lambda m: m.pow(m.tensor(Z), 2.5 - 1j),
    lambda m: m.pow(m.tensor(R), 0.5j),
    lambda m: m.pow(1 + 1j, m.tensor(R)),
    lambda m: m.pow(m.tensor(Z + [[0j, 1j, -1 + 0j]]), 0),
    lambda m: m.float_power(m.tensor(Z), 2),
    lambda m: m.logaddexp(m.tensor(Z), m.tensor(Z).flip(1)),
    lambda m: m.lerp(m.tensor(Z), m.tensor(Z).flip(0), 0.5 + 1j),
    lambda m: m.ldexp(m.tensor(Z), m.tensor([[1, 2, 3], [-1, 0, 4]])),
    lambda m: m.nn.functional.silu(m.tensor(Z)),
    lambda m: m.tensor(Z).prod(), lambda m: m.tensor(Z).prod(1, keepdim=True),
    lambda m: m.tensor(Z).all(), lambda m: m.tensor(Z + [[0j, 1j, 2]]).any(1),
    lambda m: m.tensor(Z).var(), lambda m: m.tensor(Z).std(0), lambda m: m.var_mean(m.tensor(Z), 1)[0],
    lambda m: m.logsumexp(m.tensor(Z), 1), lambda m: m.logcumsumexp(m.tensor(Z) * 2, 1),
    lambda m: m.linalg.vector_norm(m.tensor(Z), 3), lambda m: m.linalg.matrix_norm(m.tensor(Z), 1),
    lambda m: m.linspace(1j, 3 - 2j, 6), lambda m: m.logspace(0, 1 + 1j, 4, base=2),
    lambda m: m.corrcoef(m.tensor(Z)),
    lambda m: m.nn.functional.rms_norm(m.tensor(Z), (3,)),
])
def test_more_math(f):
    check(f, rtol=1e-5)


def test_matmul_large_matches_torch():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 96, dtype=torch.complex64, generator=g)
    b = torch.randn(96, 48, dtype=torch.complex64, generator=g)
    got = (tp.tensor(a.tolist()) @ tp.tensor(b.tolist())).tolist()
    np.testing.assert_allclose(np.array(got), (a @ b).numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('dtype', ['complex64', 'complex128'])
def test_printing(dtype):
    for data in (Z, [1 + 2j, 3 - 1j], [[1e-5 + 2j, 3e8 - 1j]], [float('nan') + 1j, complex(1, float('inf'))],
                 1 + 1j, [0j, 0j], [complex(k, k) for k in range(30)]):
        assert repr(tp.tensor(data, dtype=getattr(tp, dtype))) == \
            repr(torch.tensor(data, dtype=getattr(torch, dtype))).replace('torch.', 'tensorplay.')


def _grads(m, f, vals):
    xs = [m.tensor(v, dtype=m.complex128 if isinstance(v[0], complex) else m.float64, requires_grad=True)
          for v in vals]
    f(m, *xs).backward()
    return [np.array(x.grad.tolist()) for x in xs]


ZV = [1 + 2j, -3 + 0.5j, 0.25 - 1j]
RV = [0.5, -1.5, 2.0]


@pytest.mark.parametrize('f, vals', [
    (lambda m, a: m.real(a).sum(), [ZV]),
    (lambda m, a: m.imag(a).sum(), [ZV]),
    (lambda m, a: m.abs(a * a).sum(), [ZV]),
    (lambda m, a: m.sgn(a).real.sum() + 2 * m.sgn(a).imag.sum(), [ZV]),
    (lambda m, a: m.angle(a).sum(), [ZV]),
    (lambda m, a: m.angle(a).sum(), [RV]),
    (lambda m, a: (m.conj_physical(a) * a).real.sum(), [ZV]),
    (lambda m, a: (a.conj() * a * 1j).imag.sum(), [ZV]),
    (lambda m, a: (a * a * (1 - 2j)).imag.sum(), [ZV]),
    (lambda m, a: (1 / a).real.sum(), [ZV]),
    (lambda m, a: (a / (a * a + 1)).imag.sum(), [ZV]),
    (lambda m, a: m.exp(a).abs().sum(), [ZV]),
    (lambda m, a: m.sqrt(a).imag.sum() + m.log(a).real.sum(), [ZV]),
    (lambda m, a: (m.sin(a) + m.cos(a) + m.tanh(a) + m.sigmoid(a)).real.sum(), [ZV]),
    (lambda m, a: (m.view_as_real(a) ** 2 * m.tensor([1., 3.], dtype=m.float64)).sum(), [ZV]),
    (lambda m, a: (m.view_as_complex(a.view(3, 2)) * (1 + 1j)).imag.sum(), [RV + RV]),
    (lambda m, a, b: (m.complex(a, b) * (2 + 1j)).abs().sum(), [RV, RV[::-1]]),
    (lambda m, a, b: (m.polar(a, b) * (2 + 1j)).real.sum(), [RV, RV[::-1]]),
    (lambda m, a: (a.sum() * (1 - 1j)).real + a.mean().imag, [ZV]),
    (lambda m, a: (a.view(3, 1) @ a.view(1, 3)).abs().sum(), [ZV]),
    (lambda m, a, b: (a * b.view(3, 1)).real.sum(), [ZV, RV]),
    (lambda m, a, b: (a.to(m.complex128) * b).abs().sum(), [RV, ZV]),
    (lambda m, a: (m.tan(a) + m.asinh(a) + m.log1p(a) + m.expm1(a) + m.rsqrt(a)).real.sum(), [ZV]),
    (lambda m, a: (m.acos(a) * m.atanh(a * 0.25) + m.log10(a)).imag.sum(), [ZV]),
    (lambda m, a, b: m.pow(a, b).abs().sum(), [ZV, ZV[::-1]]),
    (lambda m, a: m.var(a) + m.std(a * 2), [ZV]),
    (lambda m, a: m.linalg.vector_norm(a, 3) + m.linalg.vector_norm(a, 1), [ZV]),
    (lambda m, a: m.logsumexp(a, 0).real + m.prod(a).imag, [ZV]),
    (lambda m, a: m.logcumsumexp(a * 2, 0).imag.sum(), [ZV]),
    (lambda m, a, b: m.logaddexp(a, b).abs().sum(), [ZV, ZV[::-1]]),
])
def test_gradients(f, vals):
    for x, y in zip(_grads(tp, f, vals), _grads(torch, f, vals)):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_backward_needs_real_scalar():
    for m in (tp, torch):
        z = m.tensor(ZV, requires_grad=True)
        with pytest.raises(RuntimeError, match='real scalar outputs'):
            (z * z).sum().backward()


def test_cuda_complex_arithmetic_and_refusals():
    if not tp.cuda.is_available():
        pytest.skip('no CUDA device')
    rs = np.random.RandomState(0)
    for dt in ('complex64', 'complex128'):
        a = (rs.randn(5, 7) + 1j * rs.randn(5, 7)).astype(dt)
        b = (rs.randn(5, 7) + 1j * rs.randn(5, 7)).astype(dt)
        x, y = tp.from_numpy(a).cuda(), tp.from_numpy(b).cuda()
        for got, want in [(x * y, a * b), (x + y, a + b), (x - 2 * y, a - 2 * b), (x / y, a / b),
                          (-x, -a), (x.conj_physical(), a.conj()), (x.t().contiguous(), a.T),
                          (tp.where(x.real > 0, x, y), np.where(a.real > 0, a, b)),
                          (tp.full((3,), 1 + 2j, dtype=getattr(tp, dt), device='cuda'), np.full(3, 1 + 2j)),
                          (x == y, a == b), (x.reciprocal(), 1 / a), (x.sum(), a.sum())]:
            np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-5)
        z = tp.zeros(4, dtype=getattr(tp, dt), device='cuda')
        z.fill_(3 - 1j)
        np.testing.assert_array_equal(z.cpu().numpy(), np.full(4, 3 - 1j))


_SPECIAL_PARTS = [0.0, -0.0, 1.0, -2.5, 30.0, -100.0, float('inf'), -float('inf'), float('nan')]


@pytest.mark.parametrize('dt', ['complex64', 'complex128'])
def test_cuda_complex_transcendentals_match_the_cpu(dt):
    """Note [Complex math on the device]: the device formulas against glibc's (our CPU
    kernels), ordinary values and every pair of special parts."""
    if not tp.cuda.is_available():
        pytest.skip('no CUDA device')
    rs = np.random.RandomState(1)
    re, im = np.meshgrid(_SPECIAL_PARTS, _SPECIAL_PARTS)
    grid = (re + 1j * im).ravel()
    ordinary = rs.randn(500) * 3 + 1j * rs.randn(500) * 3
    near_one = np.exp(1j * rs.uniform(-3.2, 3.2, 200)) * (1 + 1e-4 * rs.randn(200))
    z = tp.from_numpy(np.concatenate([grid, ordinary, near_one]).astype(dt))
    rtol = 2e-6 if dt == 'complex64' else 1e-12
    for name in ('exp', 'log', 'sqrt', 'sin', 'cos', 'tanh', 'sigmoid'):
        want = getattr(z, name)().numpy()
        got = getattr(z.cuda(), name)().cpu().numpy()
        # a NaN in either part makes the value NaN (torch.isclose's rule); elsewhere both
        # parts agree, infinities by sign
        nan_w, nan_g = np.isnan(want), np.isnan(got)
        np.testing.assert_array_equal(nan_w, nan_g, err_msg=name)
        ok = ~nan_w
        for part in (np.real, np.imag):
            np.testing.assert_allclose(part(got[ok]), part(want[ok]), rtol=rtol, atol=rtol * 10,
                                       err_msg=name)


def test_complex_to_real_cast_warns_once_a_process():
    """PyTorch's copy_ warns once a process that the imaginary parts are dropped (Note
    [Warnings from C++]); under `-W error` the cast raises the warning."""
    code = textwrap.dedent('''
        import warnings, tensorplay as tp
        z = tp.tensor([1 + 2j, 3 - 1j])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = z.to(tp.float32)
            tp.empty(2).copy_(z)
            z.real.float()  # a real view: no warning
        print(r.tolist(), [str(x.message) for x in w], [x.category.__name__ for x in w])
    ''')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)}).stdout
    assert out.strip() == ("[1.0, 3.0] ['Casting complex values to real discards the imaginary part'] "
                           "['UserWarning']"), out
    code = 'import tensorplay as tp\ntry:\n    tp.tensor([1j]).float()\nexcept UserWarning as e:\n    print("raised", e)'
    out = subprocess.run([sys.executable, '-W', 'error', '-c', code], capture_output=True, text=True, check=True,
                         env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)}).stdout
    assert out.strip() == 'raised Casting complex values to real discards the imaginary part', out


def test_cuda_complex_casts_and_products():
    if not tp.cuda.is_available():
        pytest.skip('no CUDA device')
    rs = np.random.RandomState(2)
    a = rs.randn(6, 5).astype(np.float32)
    x = tp.from_numpy(a).cuda()
    for dt, npdt in ((tp.complex64, np.complex64), (tp.complex128, np.complex128)):
        np.testing.assert_array_equal(x.to(dt).cpu().numpy(), a.astype(npdt))  # real -> complex
        np.testing.assert_array_equal(x.t().to(dt).cpu().numpy(), a.T.astype(npdt))
        n = tp.arange(6, device='cuda').to(dt)  # integers
        np.testing.assert_array_equal(n.cpu().numpy(), np.arange(6).astype(npdt))
    c = (rs.randn(4, 3) + 1j * rs.randn(4, 3)).astype(np.complex64)
    z = tp.from_numpy(c).cuda()
    np.testing.assert_array_equal(z.to(tp.complex128).cpu().numpy(), c.astype(np.complex128))
    np.testing.assert_array_equal(z.to(tp.complex128).to(tp.complex64).cpu().numpy(), c)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the warning comes once a process (its own test)
        r = z.to(tp.float64)
    np.testing.assert_array_equal(r.cpu().numpy(), c.real.astype(np.float64))
    dst = tp.zeros(4, 3, dtype=tp.complex64, device='cuda')
    dst.copy_(tp.ones(3, device='cuda', dtype=tp.float64))  # broadcast and cast
    np.testing.assert_array_equal(dst.cpu().numpy(), np.ones((4, 3), np.complex64))
    # products through cuBLAS's complex GEMM / dot
    for npdt, tol in ((np.complex64, 1e-5), (np.complex128, 1e-12)):
        m1 = (rs.randn(2, 7, 9) + 1j * rs.randn(2, 7, 9)).astype(npdt)
        m2 = (rs.randn(2, 9, 4) + 1j * rs.randn(2, 9, 4)).astype(npdt)
        g1, g2 = tp.from_numpy(m1).cuda(), tp.from_numpy(m2).cuda()
        np.testing.assert_allclose((g1 @ g2).cpu().numpy(), m1 @ m2, rtol=tol, atol=tol)
        np.testing.assert_allclose(tp.mm(g1[0], g2[0].mT.contiguous().mT).cpu().numpy(), m1[0] @ m2[0],
                                   rtol=tol, atol=tol)
        bias = tp.from_numpy(m2[0, 0]).cuda()
        np.testing.assert_allclose(tp.addmm(bias, g1[0], g2[0], beta=0.5, alpha=2).cpu().numpy(),
                                   0.5 * m2[0, 0] + 2 * (m1[0] @ m2[0]), rtol=tol, atol=tol)
        v, w = m1[0, 0], m2[0, :, 0]
        np.testing.assert_allclose(tp.dot(g1[0, 0], g2[0, :, 0]).cpu().numpy(), np.dot(v, w), rtol=tol, atol=tol)
        np.testing.assert_allclose(tp.vdot(g1[0, 0], g2[0, :, 0]).cpu().numpy(), np.vdot(v, w), rtol=tol, atol=tol)
        empty = tp.zeros(3, 0, dtype=g1.dtype, device='cuda')
        np.testing.assert_array_equal(tp.addmm(tp.ones(3, 3, dtype=g1.dtype, device='cuda'), empty,
                                               empty.mT, beta=2).cpu().numpy(), np.full((3, 3), 2, npdt))


def _rotary(m, xq, xk, dim, end, theta=10000.0):
    """LLaMA's rotary embedding, as its reference code writes it."""
    freqs = 1.0 / (theta ** (m.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    freqs = m.outer(m.arange(end, dtype=m.float32), freqs)
    freqs_cis = m.polar(m.ones_like(freqs), freqs)
    xq_ = m.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = m.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
    fc = freqs_cis.view(*shape)
    return m.view_as_real(xq_ * fc).flatten(3).type_as(xq), m.view_as_real(xk_ * fc).flatten(3).type_as(xk)


def test_llama_rotary_embedding_forward_and_backward():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 16, 4, 32), dtype=np.float32)
    k = rng.standard_normal((2, 16, 4, 32), dtype=np.float32)
    res = []
    for m in (tp, torch):
        xq, xk = m.tensor(q, requires_grad=True), m.tensor(k, requires_grad=True)
        a, b = _rotary(m, xq, xk, 32, 16)
        ((a * b).sum() + a.pow(2).mean()).backward()
        res.append([np.array(v.tolist()) for v in (a, b, xq.grad, xk.grad)])
    for x, y in zip(*res):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=2e-6)
