"""tp.fft, tp.stft and tp.istft against torch: values, dtypes, shapes and strides (Note [FFT
output layout]), gradients, forward-mode tangents, errors, meta tensors, and CUDA (cuFFT)."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

ONE_D = ['fft', 'ifft', 'rfft', 'irfft', 'hfft', 'ihfft']
N_D = ['fftn', 'ifftn', 'rfftn', 'irfftn', 'hfftn', 'ihfftn', 'fft2', 'ifft2', 'rfft2', 'irfft2', 'hfft2', 'ihfft2']
REAL_ONLY = {'rfft', 'ihfft', 'rfftn', 'ihfftn', 'rfft2', 'ihfft2'}
TAKES_HALF = {'irfft', 'hfft', 'irfftn', 'hfftn', 'irfft2', 'hfft2'}


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().cpu().numpy()
    return t.detach().cpu().numpy()


def _tp(a, device='cpu'):
    return tp.from_numpy(np.array(a, order='C')).to(device)


def _input(name, dtype, shape, seed=0):
    rs = np.random.RandomState(seed)
    x = rs.randn(*shape)
    if dtype in ('complex64', 'complex128'):
        x = x + 1j * rs.randn(*shape)
    if name in REAL_ONLY and dtype.startswith('complex'):
        dtype = 'float64' if dtype == 'complex128' else 'float32'
        x = x.real
    return x.astype(dtype)


def _close(a, b, dtype):
    tol = 1e-4 if dtype in ('float32', 'complex64') else 1e-10
    assert a.shape == tuple(b.shape)
    assert a.dtype == getattr(tp, str(b.dtype).split('.')[-1])
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize('name', ONE_D)
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'complex64', 'complex128'])
@pytest.mark.parametrize('kw', [{}, {'n': 5}, {'n': 12}, {'dim': 0}, {'norm': 'ortho'}, {'norm': 'forward'},
                                {'dim': 0, 'n': 3, 'norm': 'ortho'}])
def test_one_dimensional(name, dtype, kw):
    x = _input(name, dtype, (6, 8))
    a = getattr(tp.fft, name)(_tp(x), **kw)
    b = getattr(torch.fft, name)(torch.from_numpy(x), **kw)
    _close(a, b, dtype)
    assert a.stride() == b.stride()


@pytest.mark.parametrize('name', N_D)
@pytest.mark.parametrize('dtype', ['float32', 'complex128'])
@pytest.mark.parametrize('kw', [{}, {'dim': (0, 2)}, {'dim': (2, 0)}, {'s': (5, 6)}, {'s': (4, -1)},
                                {'dim': (-1, 0), 's': (7, 3)}, {'norm': 'ortho'}, {'norm': 'forward'}])
def test_n_dimensional(name, dtype, kw):
    if name.endswith('2') and 'dim' in kw and 's' not in kw:
        kw = dict(kw)
    x = _input(name, dtype, (3, 4, 6))
    a = getattr(tp.fft, name)(_tp(x), **kw)
    b = getattr(torch.fft, name)(torch.from_numpy(x), **kw)
    _close(a, b, dtype)
    assert a.stride() == b.stride()


def test_strided_and_expanded_inputs():
    x = torch.randn(5, 6, 7, dtype=torch.complex64)
    xp = _tp(x.numpy())
    for perm in [(2, 0, 1), (1, 2, 0)]:
        for dim in [(0,), (1, 2), (0, 2)]:
            a = tp.fft.fftn(xp.permute(*perm), dim=dim)
            b = torch.fft.fftn(x.permute(*perm), dim=dim)
            _close(a, b, 'complex64')
            assert a.stride() == b.stride()
    r = torch.randn(1, 8).expand(4, 8)
    _close(tp.fft.rfft(_tp(r.numpy()).expand(4, 8)), torch.fft.rfft(r), 'float32')
    rr = torch.randn(8, 10)[::2, 1::3]
    _close(tp.fft.rfft(_tp(torch.randn(8, 10).numpy())[::2, 1::3] * 0 + _tp(rr.contiguous().numpy())),
           torch.fft.rfft(rr), 'float32')


def test_promotion_and_special_sizes():
    for x in [torch.arange(6), torch.tensor([True, False, True])]:
        a, b = tp.fft.fft(_tp(x.numpy())), torch.fft.fft(x)
        _close(a, b, 'complex64')
    # prime and odd lengths (Bluestein in pocketfft), length 1
    for n in (1, 2, 97, 1009):
        x = torch.randn(n, dtype=torch.float64)
        _close(tp.fft.fft(_tp(x.numpy())), torch.fft.fft(x), 'float64')
        _close(tp.fft.irfft(tp.fft.rfft(_tp(x.numpy())), n=n), x, 'float64')
    # empty batch
    x = torch.randn(0, 4)
    assert tp.fft.fft(_tp(x.numpy())).shape == (0, 4)
    # fftn over no dims is a complex copy; over a 0-dim tensor too
    s = torch.tensor(3.0)
    _close(tp.fft.fftn(_tp(s.numpy())), torch.fft.fftn(s), 'complex64')


def _raises_like(fn_tp, fn_torch):
    with pytest.raises(Exception) as et:
        fn_torch()
    with pytest.raises(type(et.value)):
        fn_tp()
    return et


@pytest.mark.parametrize('case', [
    lambda m, x: m.fft.fft(x, n=0),
    lambda m, x: m.fft.fft(x, norm='bad'),
    lambda m, x: m.fft.fft(x, dim=3),
    lambda m, x: m.fft.fftn(x, s=(2, 2, 2)),
    lambda m, x: m.fft.fftn(x, dim=(0, 0)),
    lambda m, x: m.fft.fftn(x, s=(2, 3), dim=(0,)),
    lambda m, x: m.fft.fft(x.to(m.float16)),
    lambda m, x: m.fft.fft(x.to(m.bfloat16)),
    lambda m, x: m.fft.rfft(x.to(m.complex64)),
    lambda m, x: m.fft.ihfft(x.to(m.complex64)),
    lambda m, x: m.fft.rfftn(x, dim=()),
    lambda m, x: m.fft.irfft(x[:1, :1].to(m.complex64)),
    lambda m, x: m.fft.fft(x, out=m.empty(4, 4)),
    lambda m, x: m.fft.fft(x[0, 0]),
])
def test_errors(case):
    x = np.random.RandomState(0).randn(4, 4).astype('float32')
    et = _raises_like(lambda: case(tp, _tp(x)), lambda: case(torch, torch.from_numpy(x)))
    assert et is not None


def test_out_and_normalization_identities():
    x = torch.randn(4, 8, dtype=torch.complex64)
    out = tp.empty(0, dtype=tp.complex64)
    r = tp.fft.fft(_tp(x.numpy()), out=out)
    assert r is out
    _close(out, torch.fft.fft(x), 'complex64')
    xp = _tp(x.numpy())
    for norm in (None, 'ortho', 'forward', 'backward'):
        _close(tp.fft.ifft(tp.fft.fft(xp, norm=norm), norm=norm), x, 'complex64')


def _grad_pair(name, x, kw, seed=1):
    xt = torch.from_numpy(x).requires_grad_(True)
    xp = _tp(x.copy()).requires_grad_(True)
    a = getattr(torch.fft, name)(xt, **kw)
    b = getattr(tp.fft, name)(xp, **kw)
    rs = np.random.RandomState(seed)
    g = rs.randn(*a.shape)
    if a.dtype.is_complex:
        g = g + 1j * rs.randn(*a.shape)
    g = g.astype(np.complex128 if a.dtype.is_complex else np.float64)
    a.backward(torch.from_numpy(g))
    b.backward(tp.from_numpy(g))
    return xt.grad, xp.grad


@pytest.mark.parametrize('name', ONE_D + N_D)
@pytest.mark.parametrize('kw', [{}, {'norm': 'ortho'}, {'norm': 'forward'}, 'resize'])
def test_gradients(name, kw):
    if kw == 'resize':
        kw = {'n': 7} if name in ONE_D else {'s': (3, 7)}
    dtype = 'complex128' if name in TAKES_HALF or name not in REAL_ONLY else 'float64'
    x = _input(name, dtype, (3, 6), seed=2)
    gt, gp = _grad_pair(name, x, kw)
    np.testing.assert_allclose(_np(gp), _np(gt), rtol=1e-9, atol=1e-10)
    if name in ('fft', 'ifft', 'fftn', 'fft2'):  # a real input's gradient is real
        gt, gp = _grad_pair(name, _input(name, 'float64', (3, 6), seed=3), kw)
        assert gp.dtype == tp.float64
        np.testing.assert_allclose(_np(gp), _np(gt), rtol=1e-9, atol=1e-10)


def test_gradcheck_and_double_backward():
    x = tp.randn(3, 5, dtype=tp.complex128, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: tp.fft.fft(t, norm='ortho'), (x,))
    r = tp.randn(4, 6, dtype=tp.float64, requires_grad=True)
    assert tp.autograd.gradcheck(lambda t: tp.fft.rfft2(t), (r,))
    assert tp.autograd.gradgradcheck(lambda t: tp.view_as_real(tp.fft.rfft(t)), (r,))
    c = tp.fft.rfft(tp.randn(4, 6, dtype=tp.float64)).requires_grad_(True)
    assert tp.autograd.gradcheck(lambda t: tp.fft.irfft(t, n=6), (c,))


def test_forward_ad():
    import tensorplay.autograd.forward_ad as fwad
    rs = np.random.RandomState(4)
    x, t = rs.randn(3, 8), rs.randn(3, 8)
    for name in ('fft', 'rfft', 'ihfft', 'rfft2'):
        with fwad.dual_level():
            out = getattr(tp.fft, name)(fwad.make_dual(_tp(x), _tp(t)))
            tan = fwad.unpack_dual(out).tangent
        np.testing.assert_allclose(_np(tan), _np(getattr(torch.fft, name)(torch.from_numpy(t))), atol=1e-10)
    c, ct = rs.randn(3, 5) + 1j * rs.randn(3, 5), rs.randn(3, 5) + 1j * rs.randn(3, 5)
    for name in ('irfft', 'hfft', 'ifft'):
        with fwad.dual_level():
            tan = fwad.unpack_dual(getattr(tp.fft, name)(fwad.make_dual(_tp(c), _tp(ct)))).tangent
        np.testing.assert_allclose(_np(tan), _np(getattr(torch.fft, name)(torch.from_numpy(ct))), atol=1e-10)


def test_meta_tensors():
    for name, dtype, shape in [('fft', tp.complex64, (3, 8)), ('rfft', tp.float32, (3, 8)),
                               ('irfft', tp.complex64, (3, 5)), ('fft2', tp.float64, (4, 6))]:
        m = getattr(tp.fft, name)(tp.empty(*shape, dtype=dtype, device='meta'))
        r = getattr(torch.fft, name)(torch.empty(*shape, dtype=getattr(torch, str(dtype).split('.')[-1])))
        assert m.device.type == 'meta' and tuple(m.shape) == tuple(r.shape) and m.stride() == r.stride()


# ---------------------------------------------------------------- stft / istft


@pytest.mark.parametrize('kw', [dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=10),
                                dict(n_fft=16, center=False), dict(n_fft=15, normalized=True),
                                dict(n_fft=16, onesided=False), dict(n_fft=16, pad_mode='constant')])
@pytest.mark.parametrize('window', [None, 'hann'])
def test_stft_istft(kw, window):
    x = torch.randn(2, 100)
    xp = _tp(x.numpy())
    wl = kw.get('win_length', kw['n_fft'])
    wt, wp = (torch.hann_window(wl), tp.hann_window(wl)) if window else (None, None)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        a = torch.stft(x, window=wt, return_complex=True, **kw)
        b = tp.stft(xp, window=wp, return_complex=True, **kw)
        _close(b, a, 'complex64')
        assert a.stride() == b.stride()
        a1 = torch.stft(x[0], window=wt, return_complex=True, **kw)
        b1 = xp[0].stft(window=wp, return_complex=True, **kw)
        _close(b1, a1, 'complex64')
        assert a1.stride() == b1.stride()
        if window and kw.get('center', True):
            ikw = {k: v for k, v in kw.items() if k != 'pad_mode'}
            for length in (None, 90, 120):
                try:
                    ia = torch.istft(a, window=wt, length=length, **ikw)
                except RuntimeError:  # the window's overlap-added square vanishes somewhere
                    with pytest.raises(RuntimeError, match='window overlap add min'):
                        tp.istft(b, window=wp, length=length, **ikw)
                    continue
                ib = tp.istft(b, window=wp, length=length, **ikw)
                _close(ib, ia, 'float32')


def test_stft_errors_and_warnings():
    x = np.random.RandomState(0).randn(2, 100).astype('float32')
    for f in [lambda m, t: m.stft(t, 16),
              lambda m, t: m.stft(t, 0, return_complex=True),
              lambda m, t: m.stft(t, 200, return_complex=True, center=False),
              lambda m, t: m.stft(t, 16, hop_length=0, return_complex=True),
              lambda m, t: m.stft(t, 16, win_length=20, return_complex=True),
              lambda m, t: m.stft(t, 16, window=m.ones(10), return_complex=True),
              lambda m, t: m.stft(t[None], 16, return_complex=True),
              lambda m, t: m.istft(t, 16),
              lambda m, t: m.istft(m.stft(t, 16, window=m.ones(16), return_complex=True), 16,
                                   window=m.zeros(16))]:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            _raises_like(lambda: f(tp, _tp(x)), lambda: f(torch, torch.from_numpy(x)))
    with pytest.warns(UserWarning, match='window was not provided'):
        tp.stft(_tp(x), 16, return_complex=True)
    with pytest.warns(UserWarning, match='return_complex=False is deprecated'):
        r = tp.stft(_tp(x), 16, window=tp.ones(16), return_complex=False)
    assert tuple(r.shape) == (2, 9, 26, 2)


def test_stft_gradient():
    x = torch.randn(300, dtype=torch.float64, requires_grad=True)
    xp = _tp(x.detach().numpy().copy()).requires_grad_(True)
    torch.stft(x, 32, window=torch.hann_window(32, dtype=torch.float64), return_complex=True).abs().sum().backward()
    tp.stft(xp, 32, window=tp.hann_window(32, dtype=tp.float64), return_complex=True).abs().sum().backward()
    np.testing.assert_allclose(_np(xp.grad), _np(x.grad), rtol=1e-9, atol=1e-10)


# ---------------------------------------------------------------- CUDA (cuFFT)

cuda = pytest.mark.skipif(not tp.cuda.is_available(), reason='needs a CUDA device')


@cuda
@pytest.mark.parametrize('name', ONE_D + N_D)
@pytest.mark.parametrize('dtype', ['float32', 'complex128'])
def test_cuda_matches_cpu(name, dtype):
    x = _input(name, dtype, (3, 4, 10))
    for kw in ({}, {'norm': 'ortho'}, {'dim': 0} if name in ONE_D else {'dim': (0, 2)}):
        a = getattr(tp.fft, name)(_tp(x, 'cuda'), **kw)
        b = getattr(torch.fft, name)(torch.from_numpy(x), **kw)
        assert a.device.type == 'cuda'
        _close(a.cpu(), b, dtype)
        assert a.stride() == b.stride()


@cuda
def test_cuda_large_and_many_dims_and_grad():
    x = torch.randn(1 << 20)
    _close(tp.fft.rfft(_tp(x.numpy(), 'cuda')).cpu(), torch.fft.rfft(x), 'float32')
    y = torch.randn(2, 3, 4, 5, 6, dtype=torch.complex64)
    _close(tp.fft.fftn(_tp(y.numpy(), 'cuda')).cpu(), torch.fft.fftn(y), 'complex64')
    z = torch.randn(2, 3, 4, 5, 6)
    _close(tp.fft.rfftn(_tp(z.numpy(), 'cuda')).cpu(), torch.fft.rfftn(z), 'float32')
    c = torch.fft.rfftn(z)
    _close(tp.fft.irfftn(_tp(c.numpy(), 'cuda'), s=z.shape).cpu(), torch.fft.irfftn(c, s=z.shape), 'float32')
    r = _tp(np.random.RandomState(0).randn(4, 16), 'cuda').requires_grad_(True)
    tp.fft.irfft(tp.fft.rfft(r) * 2, n=16).sum().backward()
    np.testing.assert_allclose(_np(r.grad), 2 * np.ones((4, 16)), atol=1e-10)
