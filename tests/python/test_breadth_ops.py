"""The PyTorch functions composed in Python (python/tensorplay/_statistics.py,
_composite_ops.py, linalg.py's composites, accelerator.py, _device_defaults.py) against torch:
values, dtypes, shapes, gradients and the exception class for bad input."""
import warnings

import numpy as np
import pytest
import torch

import tensorplay as tp

RNG = np.random.default_rng(0)
X35 = RNG.standard_normal((3, 5))
X45 = RNG.standard_normal((4, 5))


def _to(lib, v, requires_grad=False):
    if isinstance(v, np.ndarray):
        t = lib.tensor(v)
        return t.requires_grad_() if requires_grad and t.is_floating_point() else t
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], np.ndarray):
        return type(v)(_to(lib, a, requires_grad) for a in v)
    return v


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()
    return np.array(t.detach().tolist()).reshape(tuple(t.shape))


def _same(ref, got, rtol=1e-6, atol=1e-8):
    if isinstance(ref, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(ref) == len(got)
        for r, g in zip(ref, got):
            _same(r, g, rtol, atol)
        return
    if not isinstance(ref, torch.Tensor):
        assert ref == got
        return
    assert str(ref.dtype) == str(got.dtype).replace('tensorplay', 'torch')
    assert tuple(ref.shape) == tuple(got.shape)
    np.testing.assert_allclose(_np(got), _np(ref), rtol=rtol, atol=atol, equal_nan=True)


def _check(fn, *args, grad=True, rtol=1e-6, atol=1e-8, **kwargs):
    """fn(lib)(*args, **kwargs) in both libraries: results and (float64 inputs) gradients."""
    ta, pa = _to(torch, args, grad), _to(tp, args, grad)
    ref = fn(torch)(*ta, **kwargs)
    got = fn(tp)(*pa, **kwargs)
    _same(ref, got, rtol, atol)
    if grad and isinstance(ref, torch.Tensor) and ref.requires_grad:
        seed = RNG.standard_normal(tuple(ref.shape))
        ref.backward(torch.tensor(seed))
        got.backward(tp.tensor(seed))
        for t, p in zip(ta, pa):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                _same(t.grad, p.grad, rtol, atol)


def _raises(fn, *args, **kwargs):
    """Both libraries raise, with the same exception class."""
    with pytest.raises(Exception) as ref:
        fn(torch)(*_to(torch, args), **kwargs)
    with pytest.raises(Exception) as got:
        fn(tp)(*_to(tp, args), **kwargs)
    assert type(got.value).__name__ == type(ref.value).__name__, (ref.value, got.value)


# ---- statistics ---------------------------------------------------------------------------

W5 = np.array([1, 2, 1, 3, 1])
A5 = np.array([0.5, 1.0, 2.0, 1.0, 0.25])


@pytest.mark.parametrize('kwargs', [{}, {'correction': 0}, {'correction': 2}])
def test_cov(kwargs):
    _check(lambda m: lambda x: m.cov(x, **kwargs), X35)
    _check(lambda m: lambda x: x.cov(**kwargs), X35[0])


def test_cov_weights_and_dtypes():
    _check(lambda m: lambda x, f, a: m.cov(x, fweights=f, aweights=a), X35, W5, A5)
    _check(lambda m: lambda x, f: m.cov(x, correction=0, fweights=f), X35, W5)
    _check(lambda m: lambda x, a: m.cov(x, aweights=a), X35.astype(np.float32), A5.astype(np.float32),
           rtol=1e-5)
    _check(lambda m: m.cov, np.array([[1, 2, 4], [3, 1, 0]]))
    _check(lambda m: m.corrcoef, np.array([[1, 2, 4], [3, 1, 0]]))


@pytest.mark.parametrize('bad', [dict(fweights=np.array([1., 2, 3, 4, 5])), dict(fweights=np.array([1, 2])),
                                 dict(fweights=np.array([-1, 1, 1, 1, 1])), dict(aweights=W5),
                                 dict(aweights=-A5), dict(fweights=np.ones((1, 5), dtype=np.int64))])
def test_cov_bad_weights(bad):
    _raises(lambda m: lambda x, **kw: m.cov(x, **{k: _to(m, v) for k, v in kw.items()}), X35, **bad)


def test_cov_errors():
    _raises(lambda m: m.cov, np.ones((2, 2, 2)))
    _raises(lambda m: m.cov, [1.0, 2.0])
    with pytest.warns(UserWarning):
        assert tp.cov(tp.tensor([1.0])).isnan().item()


def test_corrcoef():
    _check(lambda m: m.corrcoef, X35)
    _check(lambda m: lambda x: x.corrcoef(), X45)
    _check(lambda m: m.corrcoef, X35[0])


@pytest.mark.parametrize('case', ['plain', 'dx', 'x1d', 'xfull', 'dim0', 'int'])
@pytest.mark.parametrize('name', ['trapezoid', 'trapz', 'cumulative_trapezoid'])
def test_trapezoid(name, case):
    y = np.array([1, 2, 4, 7, 3]) if case == 'int' else X35
    if case == 'plain' or case == 'int':
        _check(lambda m: getattr(m, name), y)
    elif case == 'dx':
        _check(lambda m: lambda v: getattr(m, name)(v, dx=0.5), y)
    elif case == 'x1d':
        _check(lambda m: getattr(m, name), y, np.array([0.0, 1.0, 3.0, 4.0, 7.5]))
    elif case == 'xfull':
        _check(lambda m: getattr(m, name), y, np.cumsum(np.abs(X35), 1))
    else:
        _check(lambda m: lambda v, x: getattr(m, name)(v, x, dim=0), y, np.array([0.0, 2.0, 3.0]))


def test_trapezoid_edges():
    _check(lambda m: m.trapezoid, np.ones(0))
    _check(lambda m: m.trapezoid, np.ones(1))
    _check(lambda m: m.cumulative_trapezoid, np.ones(0))
    _raises(lambda m: m.trapezoid, np.ones(3), np.ones(4))
    _raises(lambda m: lambda y: m.trapezoid(y, dim=2), np.ones(3))
    _raises(lambda m: m.trapezoid, [1.0, 2.0])


@pytest.mark.parametrize('p', [0.0, 1.0, 2.0, 3.0, float('inf')])
def test_cdist(p):
    _check(lambda m: lambda a, b: m.cdist(a, b, p=p), X35, X45, rtol=1e-5)
    _check(lambda m: lambda a, b: m.cdist(a, b, p=p), RNG.standard_normal((2, 3, 4)),
           RNG.standard_normal((1, 2, 4)), rtol=1e-5)


def test_cdist_errors():
    _raises(lambda m: m.cdist, X35, X35[:, :4])
    _raises(lambda m: m.cdist, X35[0], X35)
    _raises(lambda m: m.cdist, np.ones((2, 3), dtype=np.int64), np.ones((2, 3), dtype=np.int64))
    _raises(lambda m: lambda a, b: m.cdist(a, b, p=-1.0), X35, X35)


def test_pdist_top_level():
    _check(lambda m: m.pdist, X45)


def test_vander():
    _check(lambda m: m.vander, np.array([1, 2, 3], dtype=np.int8))
    _check(lambda m: lambda x: m.vander(x, 4, True), X35[0], grad=False)
    # PyTorch's own vander backward fails (it writes into a saved tensor): check the
    # gradient against the derivative of x**j instead
    x = tp.tensor(X35[0], requires_grad=True)
    seed = RNG.standard_normal((5, 4))
    tp.vander(x, 4, True).backward(tp.tensor(seed))
    expected = sum(seed[:, j] * j * X35[0] ** (j - 1) for j in range(1, 4))
    np.testing.assert_allclose(_np(x.grad), expected, rtol=1e-12)
    _check(lambda m: lambda x: m.vander(x, N=0), X35[0], grad=False)
    _check(lambda m: m.vander, np.array([True, False]))
    _raises(lambda m: m.vander, X35)
    _raises(lambda m: lambda x: m.vander(x, N=-1), X35[0])


def test_linalg_vander():
    _check(lambda m: m.linalg.vander, np.array([[1, 2, 3], [2, 3, 4]], dtype=np.int8))
    _check(lambda m: lambda x: m.linalg.vander(x, N=4), X35)
    _raises(lambda m: lambda x: m.linalg.vander(x, N=1), X35)


@pytest.mark.parametrize('bins', [4, 'edges'])
@pytest.mark.parametrize('density', [False, True])
def test_histogram(bins, density):
    b = np.array([-1.0, 0.0, 0.5, 2.0], dtype=np.float32) if bins == 'edges' else bins
    x = X35.astype(np.float32)
    _check(lambda m: lambda v, w: m.histogram(v, _to(m, b), weight=w, density=density), x,
           np.abs(x), rtol=1e-5)
    _check(lambda m: lambda v: v.histogram(_to(m, b), density=density), x, rtol=1e-5)
    _check(lambda m: lambda v: m.histogram(v, 3, range=(-0.5, 0.5)), x)


def test_histogramdd():
    _check(lambda m: lambda v: m.histogramdd(v, [3, 2, 2, 2, 4]), X35)
    _check(lambda m: lambda v: m.histogramdd(v[:, :2], 3, range=[-1.0, 1.0, -2.0, 2.0], density=True), X45)
    _check(lambda m: lambda v: m.histogramdd(v, [m.tensor([-1.0, 0.0, 3.0], dtype=m.float64)] * 5), X35)
    _raises(lambda m: lambda v: m.histogramdd(v, [2, 2]), X35)
    _raises(lambda m: lambda v: m.histogram(v, m.tensor([0.0, 1.0], dtype=m.float32)), X35)
    _raises(lambda m: m.histogram, np.array([1, 2, 3]))


# ---- construction and indices -----------------------------------------------------------

@pytest.mark.parametrize('r', [0, 1, 2, 3, 5])
@pytest.mark.parametrize('with_replacement', [False, True])
def test_combinations(r, with_replacement):
    _check(lambda m: lambda x: m.combinations(x, r, with_replacement), X35[0, :4])
    _check(lambda m: lambda x: m.combinations(x, r, with_replacement=with_replacement), np.array([3, 1, 2]))


def test_combinations_errors():
    _raises(lambda m: m.combinations, X35)
    _raises(lambda m: lambda x: m.combinations(x, -1), X35[0])


def test_unravel_index():
    _check(lambda m: lambda i: m.unravel_index(i, (3, 4)), np.array([5, 11, -1, 12]))
    _check(lambda m: lambda i: m.unravel_index(i, (2, 3, 4)), np.array([[1, 7], [23, 0]]))
    _check(lambda m: lambda i: m.unravel_index(i, 4), np.array(3))
    _raises(lambda m: lambda i: m.unravel_index(i, (2, 4)), np.array([1.0]))
    _raises(lambda m: lambda i: m.unravel_index(i, (2, -4)), np.array([1]))
    _raises(lambda m: lambda i: m.unravel_index(i, (2.0,)), np.array([1]))


def test_rsub():
    _check(lambda m: m.rsub, X35, X45[:3])
    _check(lambda m: lambda a: m.rsub(a, 3, alpha=2), X35)
    _check(lambda m: lambda a: m.rsub(a, 3.5, alpha=2), np.array([1, 2]))
    _check(lambda m: lambda a: m.rsub(a, 3), np.array([1, 2]))
    _raises(lambda m: lambda a: m.rsub(a, 3, alpha=2.5), np.array([1, 2]))
    _raises(lambda m: lambda a: m.rsub(a, True), np.array([True]))


def test_scalar_tensor():
    for s, kw in ((3, {}), (2.5, {}), (True, {'dtype': 'int32'}), (7, {'dtype': 'float64'})):
        _check(lambda m: lambda: m.scalar_tensor(s, **{k: getattr(m, v) for k, v in kw.items()}))
    assert tp.scalar_tensor(1.0, requires_grad=True).requires_grad


def test_empty_permuted():
    for layout in ((0, 1, 2), (0, 2, 1), (2, 0, 1)):
        a = torch.empty_permuted((2, 3, 4), layout)
        b = tp.empty_permuted((2, 3, 4), layout, dtype=tp.float64)
        assert a.stride() == b.stride() and tuple(b.shape) == (2, 3, 4) and b.dtype == tp.float64
    _raises(lambda m: lambda: m.empty_permuted((2, 3, 4), (0, 2)))
    _raises(lambda m: lambda: m.empty_permuted((2, 3, 4), (0, 2, 2)))


def test_frombuffer():
    data = bytearray(np.arange(6, dtype=np.float32).tobytes())
    for kw in ({}, {'offset': 4}, {'count': 2, 'offset': 8}):
        _check(lambda m: lambda: m.frombuffer(data, dtype=m.float32, **kw))
    t = tp.frombuffer(data, dtype=tp.int16, count=2)
    data[0] = 1
    assert t[0].item() == 1  # shares the buffer's memory
    for bad in ((b'', {}), (bytearray(8), {'offset': 9}), (bytearray(8), {'offset': 2}),
                (bytearray(8), {'count': 3}), ([1, 2], {})):
        _raises(lambda m: lambda: m.frombuffer(bad[0], dtype=m.float32, **bad[1]))


# ---- scatter ops and copies of views ------------------------------------------------------

def test_scatter_ops():
    _check(lambda m: m.diagonal_scatter, X35, X35[0, :3])
    _check(lambda m: lambda a, s: m.diagonal_scatter(a, s, 1), X35, X35[1, :3])
    _check(lambda m: lambda a, s: a.select_scatter(s, 0, 1), X35, X45[0])
    _check(lambda m: lambda a, s: m.slice_scatter(a, s, 1, 1, 5, 2), X35, X45[:3, :2])
    _check(lambda m: lambda a, s: m.slice_scatter(a, s), X35, X45[:3])
    _check(lambda m: lambda a, s: m.as_strided_scatter(a, s, (2, 2), (5, 1), 1), X35, X45[:2, :2],
           grad=False)
    # PyTorch 2.13's input gradient of as_strided_scatter is the complement of the right one
    # (it keeps the overwritten positions); the gradient passes where input is kept
    a, src = tp.tensor(X35, requires_grad=True), tp.tensor(X45[:2, :2], requires_grad=True)
    seed = RNG.standard_normal((3, 5))
    tp.as_strided_scatter(a, src, (2, 2), (5, 1), 1).backward(tp.tensor(seed))
    kept = seed.copy()
    kept[:2, 1:3] = 0
    np.testing.assert_array_equal(_np(a.grad), kept)
    np.testing.assert_array_equal(_np(src.grad), seed[:2, 1:3])
    _raises(lambda m: m.diagonal_scatter, X35, X35[0, :2])
    _raises(lambda m: lambda a, s: m.select_scatter(a, s, 0, 1), X35, X35[:1])
    _raises(lambda m: lambda a, s: m.select_scatter(a, s, 0, 7), X35, X35[0])


@pytest.mark.parametrize('name,args', [
    ('alias', ()), ('detach', ()), ('diagonal', (1,)), ('expand', ((2, 3, 5),)), ('narrow', (1, 1, 2)),
    ('permute', ((1, 0),)), ('select', (1, 2)), ('split', (2,)), ('split_with_sizes', ([1, 2],)),
    ('squeeze', ()), ('t', ()), ('transpose', (0, 1)), ('unbind', (1,)), ('unfold', (1, 2, 1)),
    ('unsqueeze', (1,)), ('view', ((5, 3),)), ('as_strided', ((2, 2), (1, 2))), ('slice', (1, 1, 4, 2))])
def test_view_copies(name, args):
    grad = name != 'detach'
    _check(lambda m: lambda a: getattr(m, f'{name}_copy')(a, *args), X35, grad=grad)
    got = getattr(tp, f'{name}_copy')(tp.tensor(X35), *args)
    for g in (got if isinstance(got, (tuple, list)) else [got]):
        assert g.is_contiguous()


def test_view_copy_errors():
    _raises(lambda m: m.view_copy, [1.0], (1,))
    _raises(lambda m: lambda a: m.view_copy(a, (4, 4)), X35)


# ---- top-level in-place functions and Tensor methods --------------------------------------

INPLACE = [('exp_', ()), ('sin_', ()), ('relu_', ()), ('sigmoid_', ()), ('clamp_', (-0.5, 0.5)),
           ('clamp_max_', (0.2,)), ('clamp_min_', (0.2,)), ('deg2rad_', ()), ('rad2deg_', ()),
           ('round_', ()), ('square_', ()), ('neg_', ()), ('xlogy_', (2.0,)), ('ldexp_', ('two',)),
           ('nan_to_num_', ()), ('logit_', (0.1,)), ('frac_', ()), ('trunc_', ())]


@pytest.mark.parametrize('name,args', INPLACE)
def test_top_level_inplace(name, args):
    def fn(m):
        def run(a):
            a = a.clone()
            extra = [m.tensor([2.0]) if v == 'two' else v for v in args]
            out = getattr(m, name)(a, *extra)
            assert out is a
            return a
        return run
    _check(fn, X35)


def test_top_level_inplace_methods():
    for name in ('clamp_max_', 'clamp_min_', 'deg2rad_', 'rad2deg_'):
        _check(lambda m: lambda a: getattr(a.clone(), name)(*([0.1] if 'clamp' in name else [])), X35)
    _raises(lambda m: m.exp_, [1.0])


def test_addr():
    v3, v5 = X45[0, :3], X45[1]
    _check(lambda m: m.addr, X35, v3, v5)
    _check(lambda m: lambda a, b, c: a.addr(b, c, beta=2, alpha=0.5), X35, v3, v5)
    _check(lambda m: lambda a, b, c: m.addr(a, b, c, beta=0), np.full((3, 5), np.nan), v3, v5)
    _check(lambda m: m.addr, X35[0], v3, v5)
    _check(lambda m: m.addr, np.ones((3, 5), dtype=np.int64), np.arange(3), np.arange(5))
    _check(lambda m: m.addr, np.zeros((3, 5), dtype=bool), np.array([1, 0, 1], dtype=bool),
           np.array([1, 1, 0, 0, 1], dtype=bool))
    _check(lambda m: lambda a, b, c: a.clone().addr_(b, c, alpha=2), X35, v3, v5)
    _raises(lambda m: m.addr, X35, X35, v5)
    _raises(lambda m: lambda a, b, c: m.addr(a, b, c, alpha=0.5), np.ones((3, 5), dtype=np.int64),
            np.arange(3), np.arange(5))
    _raises(lambda m: m.addr, np.ones((4, 5)), v3, v5)


def test_scans_inplace():
    _check(lambda m: lambda a: a.clone().cumsum_(1), X35)
    _check(lambda m: lambda a: a.clone().cumprod_(0), X35)
    _check(lambda m: lambda a: a.clone().cumsum_(0, dtype=m.float64), X35, grad=False)
    _raises(lambda m: lambda a: a.clone().cumsum_(0, dtype=m.float64), X35.astype(np.float32))
    _raises(lambda m: lambda a: a.clone().cumprod_(0, dtype=m.int64), X35)


def test_predicates():
    for v in (np.array([0.0]), np.array(2), np.array([[True]])):
        _check(lambda m: m.is_nonzero, v, grad=False)
        _check(lambda m: lambda a: a.is_nonzero(), v, grad=False)
    _raises(lambda m: m.is_nonzero, np.ones(2))
    _raises(lambda m: m.is_nonzero, np.ones(0))
    _check(lambda m: m.is_same_size, X35, X45, grad=False)
    _check(lambda m: lambda a, b: a.is_same_size(b), X35, X35 + 1, grad=False)
    _raises(lambda m: m.is_same_size, X35, 1.0)


def test_apply_and_map():
    _check(lambda m: lambda a: a.clone().apply_(lambda v: v * 2 + 1), X35, grad=False)
    _check(lambda m: lambda a, b: a.clone().map_(b, lambda x, y: x - y * 3), X35, X35[0], grad=False)
    _check(lambda m: lambda a, b, c: a.clone().map2_(b, c, lambda x, y, z: x + y * z), X35, X35[0],
           X35[:, :1], grad=False)
    _check(lambda m: lambda a: a.clone().apply_(lambda v: v // 2), np.arange(6), grad=False)


def test_misc_methods():
    _check(lambda m: m.positive, X35)
    _raises(lambda m: m.positive, np.array([True]))
    _check(lambda m: lambda a, b: m.dist(a, b, 3), X35, X45[:3])
    _check(lambda m: lambda a, b: a.dist(b), X35, X45[:3])
    for p, dim, maxnorm in ((2, 0, 1.0), (1, 1, 0.5), (3, -1, 10.0)):
        _check(lambda m: lambda a: a.renorm(p, dim, maxnorm), X35)
        _check(lambda m: lambda a: m.renorm(a, p, dim, maxnorm), X35)
        _check(lambda m: lambda a: a.clone().renorm_(p, dim, maxnorm), X35)
    _raises(lambda m: lambda a: a.renorm(0, 0, 1.0), X35)
    _raises(lambda m: lambda a: a.renorm(2, 0, 1.0), X35[0])
    for size in ((1, 5), (3, 1), (5,), (1, 1), (3, 5)):
        _check(lambda m: lambda a: a.sum_to_size(size), X35)
        _check(lambda m: lambda a: a.sum_to_size(*size), X35)
    _raises(lambda m: lambda a: a.sum_to_size(2, 5), X35)
    _check(lambda m: lambda a: a.split_with_sizes([2, 3], 1), X35)
    _check(lambda m: lambda a: m.split_with_sizes(a, [1, 2]), X35)
    _check(lambda m: lambda a: a.unsafe_chunk(2, 1), X35)
    _check(lambda m: lambda a: m.unsafe_split(a, 2), X35)
    _check(lambda m: lambda a: a.unsafe_split_with_sizes([4, 1], 1), X35)
    _check(lambda m: lambda a: a.hardshrink(0.3), X35)
    _check(lambda m: lambda a, w: a.prelu(w), X35, np.array([0.25]))
    a, b = torch.ones(2).new_empty_strided((2, 3), (1, 2)), tp.ones(2).new_empty_strided((2, 3), (1, 2))
    assert a.stride() == b.stride() and str(b.dtype) == 'tensorplay.float32'


# ---- linalg composites ---------------------------------------------------------------------

def test_linalg_composites():
    _check(lambda m: m.linalg.matmul, X35, X45.T)
    _check(lambda m: lambda a: m.linalg.diagonal(a, offset=1), RNG.standard_normal((2, 3, 4)))
    _check(lambda m: m.linalg.vecdot, X35, X35[0])
    _check(lambda m: lambda a, b: m.linalg.vecdot(a, b, dim=0), X35, X35)
    _raises(lambda m: m.linalg.vecdot, X35, X45)
    shapes = [(3,), (3, 4), (4, 2), (2, 6), (6,)]
    mats = [RNG.standard_normal(s) for s in shapes]
    _check(lambda m: lambda *ts: m.linalg.multi_dot(list(ts)), *mats)
    _check(lambda m: lambda *ts: m.linalg.multi_dot(list(ts)), *[RNG.standard_normal(s) for s in
                                                                 ((5, 2), (2, 7), (7, 3))])
    _raises(lambda m: lambda a: m.linalg.multi_dot([a]), X35)
    _raises(lambda m: lambda a, b: m.linalg.multi_dot([a, b]), RNG.standard_normal((2, 3, 3)), X35)
    _raises(lambda m: lambda a, b: m.linalg.multi_dot([a, b]), X35, X35)
    a = RNG.standard_normal((6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 3
    _check(lambda m: lambda t: m.linalg.tensorinv(t, ind=1), a, rtol=1e-5)
    _raises(lambda m: lambda t: m.linalg.tensorinv(t, ind=1), X45)
    b = RNG.standard_normal((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3
    _check(lambda m: m.linalg.tensorsolve, b, X35[:2, :3], rtol=1e-5)
    _check(lambda m: lambda t, r: m.linalg.tensorsolve(t, r, dims=(0,)), np.moveaxis(b, 2, 0), X35[:2, :3],
           rtol=1e-5)


# ---- devices ------------------------------------------------------------------------------

@pytest.mark.parametrize('name', ['is_xpu', 'is_mps', 'is_mkldnn', 'is_vulkan', 'is_ipu', 'is_maia',
                                  'is_mtia', 'is_xla', 'is_meta', 'is_cpu'])
def test_device_predicates(name):
    assert getattr(tp.ones(2), name) == getattr(torch.ones(2), name)
    assert getattr(tp.ones(2, device='meta'), name) == getattr(torch.ones(2, device='meta'), name)


def test_accelerator_without_gpu():
    if tp.cuda.is_available():
        pytest.skip('checks the no-GPU behaviour')
    assert tp.accelerator.is_available() is False
    assert tp.accelerator.device_count() == 0
    assert tp.accelerator.current_accelerator(check_available=True) is None
    for fn in (tp.accelerator.current_device_index, tp.accelerator.synchronize,
               tp.accelerator.empty_cache, tp.accelerator.memory_allocated,
               lambda: tp.accelerator.set_device_index(0)):
        with pytest.raises(RuntimeError, match='Cannot access accelerator device'):
            fn()
    with tp.accelerator.device_index(None):
        pass


@pytest.mark.skipif(not tp.cuda.is_available(), reason='needs a GPU')
def test_accelerator_cuda():
    assert tp.accelerator.current_accelerator() == tp.device('cuda')
    assert tp.accelerator.device_count() == tp.cuda.device_count()
    tp.accelerator.set_device_index('cuda:0')
    assert tp.accelerator.current_device_index() == 0
    with tp.accelerator.device_index(0):
        tp.ones(3, device='cuda').sum()
    tp.accelerator.synchronize()
    assert tp.accelerator.memory_allocated() >= 0
    with pytest.raises(ValueError):
        tp.accelerator.set_device_index(tp.device('cpu'))


def test_default_device():
    assert tp.get_default_device() == tp.device('cpu')
    try:
        tp.set_default_device('meta')
        assert tp.get_default_device() == tp.device('meta')
        for make in (lambda m: m.zeros(2), lambda m: m.tensor([1.0]), lambda m: m.arange(3),
                     lambda m: m.full((2,), 1.0), lambda m: m.eye(2), lambda m: m.randn(2),
                     lambda m: m.scalar_tensor(1.0), lambda m: m.empty_permuted((2, 3), (1, 0))):
            assert make(tp).device.type == 'meta'
        assert tp.empty(2, device='cpu').device.type == 'cpu'
        assert tp.zeros_like(tp.zeros(2, device='cpu')).device.type == 'cpu'
        tp.set_default_device('cpu')  # replaces, not stacks
        assert tp.zeros(2).device.type == 'cpu'
        assert len(tp.overrides._get_current_function_mode_stack()) == 1
    finally:
        tp.set_default_device(None)
    assert tp.get_default_device() == tp.device('cpu')
    assert tp.overrides._get_current_function_mode_stack() == []
    with pytest.raises(RuntimeError):
        tp.set_default_device('foo')
    with pytest.raises(TypeError):
        tp.set_default_device(3.5)


def test_torch_function_sees_new_functions():
    seen = []

    class Mode(tp.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return func(*args, **(kwargs or {}))

    x = tp.tensor(X35)
    with Mode():
        tp.cov(x)
        tp.exp_(x.clone())
        x.addr(x[:, 0], x[0])
        tp.linalg.vecdot(x, x)
    assert {'cov', 'exp_', 'addr', 'vecdot'} <= set(seen)


# ---- top-level aliases (python/tensorplay/_torch_aliases.py) -------------------------------

@pytest.mark.parametrize('name', ['hann_window', 'hamming_window', 'blackman_window', 'bartlett_window',
                                  'kaiser_window'])
def test_windows(name):
    for n in (0, 1, 2, 7, 16):
        for periodic in (True, False):
            _check(lambda m: lambda: getattr(m, name)(n, periodic), atol=1e-6)
            _check(lambda m: lambda: getattr(m, name)(n, periodic, dtype=m.float64), atol=1e-12)
    _check(lambda m: lambda: getattr(m, name)(5, dtype=m.bfloat16), rtol=1e-2, atol=1e-2)
    assert getattr(tp, name)(4, requires_grad=True).requires_grad
    _raises(lambda m: lambda: getattr(m, name)(5, dtype=m.int64))
    _raises(lambda m: lambda: getattr(m, name)(-1))


def test_window_parameters():
    _check(lambda m: lambda: m.hamming_window(9, False, 0.6, 0.3), atol=1e-6)
    _check(lambda m: lambda: m.kaiser_window(9, False, 5.0, dtype=m.float64), atol=1e-12)


@pytest.mark.parametrize('fn', [
    lambda m: lambda x: m.celu(x, 0.7), lambda m: lambda x: m.selu(x), lambda m: lambda x: m.threshold(x, 0.1, -2.0),
    lambda m: lambda x: m.rrelu(x), lambda m: lambda x: m.hardshrink(x, 0.3),
    lambda m: lambda x: m.pixel_shuffle(x.repeat(4, 1).reshape(1, 4, 3, 5), 2),
    lambda m: lambda x: m.pixel_unshuffle(x.repeat(4, 1).reshape(1, 1, 6, 10), 2),
    lambda m: lambda x: m.channel_shuffle(x.repeat(4, 1).reshape(1, 4, 15), 2),
    lambda m: lambda x: m.cosine_similarity(x, x.flip(0), 0), lambda m: lambda x: m.pairwise_distance(x, x * 2),
    lambda m: lambda x: m.dropout(x, 0.5, False), lambda m: lambda x: m.alpha_dropout(x, 0.3, False),
    lambda m: lambda x: m.feature_alpha_dropout(x, 0.3, False), lambda m: lambda x: m.feature_dropout(x, 0.3, False),
    lambda m: lambda x: m.kl_div(x.log_softmax(1), x.softmax(1), 2),
    lambda m: lambda x: m.kl_div(x.log_softmax(1), x.log_softmax(1), 0, log_target=True),
    lambda m: lambda x: m.binary_cross_entropy_with_logits(x, x.sigmoid(), None, None, 0),
    lambda m: lambda x: m.hinge_embedding_loss(x, m.ones_like(x).neg(), 1.0, 1),
    lambda m: lambda x: m.margin_ranking_loss(x[0], x[1], x[2].sign(), 0.1, 2),
    lambda m: lambda x: m.cosine_embedding_loss(x, x.flip(1), m.tensor([1.0, -1.0, 1.0], dtype=x.dtype), 0.0, 1),
    lambda m: lambda x: m.poisson_nll_loss(x, x.abs(), True, False, 1e-8, 1),
    lambda m: lambda x: m.triplet_margin_loss(x, x * 2, x.flip(0), 1.0, 2.0, 1e-6, True, 1),
    lambda m: lambda x: m.embedding(x, m.tensor([[0, 2], [1, 1]])),
    lambda m: lambda x: m.embedding(x, m.tensor([0, 2, 1]), 1),
    lambda m: lambda x: m.instance_norm(x.reshape(1, 3, 5), None, None, None, None, True, 0.1, 1e-5, False),
])
def test_top_level_nn(fn):
    _check(fn, X35, rtol=1e-6, atol=1e-7)


def test_top_level_nn_inplace_and_random():
    for name, args in (('celu_', (0.5,)), ('selu_', ()), ('threshold_', (0.0, 1.0)), ('dropout_', (0.3, False)),
                       ('rrelu_', (0.1, 0.3, False)), ('alpha_dropout_', (0.2, False)),
                       ('feature_dropout_', (0.2, False)), ('feature_alpha_dropout_', (0.2, False))):
        x = tp.tensor(X35)
        y = getattr(tp, name)(x, *args)
        ref = getattr(torch, name)(torch.tensor(X35), *args)
        _same(ref, x, 1e-6)
        assert y is x
    x = tp.ones(64, 8, 4)
    y = tp.feature_dropout(x, 0.5, True)
    per_channel = y.reshape(64, 8, 4)
    assert bool(((per_channel == 0).all(2) | (per_channel == 2).all(2)).all())
    y = tp.dropout(tp.ones(1000), 0.25, True)
    assert set(y.unique().tolist()) <= {0.0, float(np.float32(4.0 / 3.0))}
    _raises(lambda m: m.dropout, X35, 0.5)  # p and train are required
    _check(lambda m: lambda x: m.kl_div(x, x.abs(), 3), X35)  # other integers: no reduction


def test_top_level_queries():
    for lib_arg in (np.ones(2, dtype=np.float32), np.ones(2, dtype=np.int64), np.ones(2, dtype=np.uint8)):
        _check(lambda m: m.get_device, lib_arg, grad=False)
        _check(lambda m: m.is_signed, lib_arg, grad=False)
        _check(lambda m: m.is_inference, lib_arg, grad=False)
    with tp.inference_mode():
        assert tp.is_inference(tp.ones(2))
    for obj in (3, 2.5, 'x', [1], None):
        assert tp.typename(obj) == torch.typename(obj)
    assert tp.typename(tp.ones(1)) == 'tensorplay.FloatTensor'
    assert tp.typename(tp.ones(1, dtype=tp.int64)) == 'tensorplay.LongTensor'
    assert tp.typename(tp.nn.Linear(1, 1)) == 'tensorplay.nn.modules.linear.Linear'
    _raises(lambda m: m.get_device, 3)


def test_fill_row_stack_chain_matmul_range():
    _check(lambda m: lambda x: m.fill(x, 2.5), X35)
    _check(lambda m: lambda x: m.fill(x, 2.5), np.arange(4))
    _check(lambda m: lambda x, v: m.fill(x, v), X35, np.array(1.5))
    _raises(lambda m: lambda x: m.fill(x, m.ones(2)), X35)
    _check(lambda m: lambda a, b: m.row_stack([a, b]), X35, X45)
    _check(lambda m: lambda a, b: m.row_stack((a[0], b[0])), X35, X45)
    with pytest.warns(UserWarning):
        _check(lambda m: lambda a, b, c: m.chain_matmul(a, b, c), X35, X45.T, X45)
    for args, kw in (((1, 4), {}), ((0, 1, 0.25), {}), ((5, 1, -1.5), {}), ((0, 3), {'dtype': 'int64'}),
                     ((0.5, 2.5, 0.5), {'dtype': 'float64'})):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            _check(lambda m: lambda: m.range(*args, **{k: getattr(m, v) for k, v in kw.items()}))
    with pytest.warns(UserWarning, match='arange'):
        tp.range(0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        _raises(lambda m: lambda: m.range(0, 5, 0))
        _raises(lambda m: lambda: m.range(5, 0, 1))
        _raises(lambda m: lambda: m.range(3))


def test_deterministic_debug_mode_and_anomaly():
    before = tp.get_deterministic_debug_mode()
    try:
        for mode, want in (('warn', 1), (2, 2), ('default', 0), (1, 1), (0, 0)):
            tp.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert tp.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == want
        assert tp.are_deterministic_algorithms_enabled() is False
        for bad, exc in (('loud', RuntimeError), (5, RuntimeError), (1.5, TypeError)):
            with pytest.raises(exc):
                tp.set_deterministic_debug_mode(bad)
            with pytest.raises(exc):
                torch.set_deterministic_debug_mode(bad)
    finally:
        tp.set_deterministic_debug_mode(before)
        torch.set_deterministic_debug_mode(0)
    assert tp.is_anomaly_enabled() is False
    tp.set_anomaly_enabled(True)
    try:
        assert tp.is_anomaly_enabled() is True
    finally:
        tp.set_anomaly_enabled(False)
    assert tp.is_anomaly_enabled() is False


# ---- tp.fft helpers -----------------------------------------------------------------------

@pytest.mark.parametrize('name', ['fftfreq', 'rfftfreq'])
def test_fft_frequencies(name):
    for n in (0, 1, 2, 5, 8):
        for d in (1.0, 0.3):
            _check(lambda m: lambda: getattr(m.fft, name)(n, d), rtol=0, atol=0)
            _check(lambda m: lambda: getattr(m.fft, name)(n, d, dtype=m.float64), rtol=0, atol=0)
    _check(lambda m: lambda: getattr(m.fft, name)(6, dtype=m.bfloat16), rtol=0, atol=0)
    assert getattr(tp.fft, name)(3, requires_grad=True).requires_grad
    out = tp.empty(3)
    assert getattr(tp.fft, name)(4 if name == 'rfftfreq' else 3, out=out) is out
    _raises(lambda m: lambda: getattr(m.fft, name)(3, dtype=m.int64))
    _raises(lambda m: lambda: getattr(m.fft, name)(-5 if name == 'rfftfreq' else -1))
    if name == 'rfftfreq':
        for n in (-1, -2, -3):
            _check(lambda m: lambda: m.fft.rfftfreq(n), rtol=0, atol=0)


@pytest.mark.parametrize('name', ['fftshift', 'ifftshift'])
def test_fft_shifts(name):
    for dim in (None, 0, 1, -1, (0, 1), (1,)):
        _check(lambda m: lambda x: getattr(m.fft, name)(x, dim=dim), X35)
        _check(lambda m: lambda x: getattr(m.fft, name)(x, dim), np.arange(24).reshape(2, 3, 4) if dim != (0, 1)
               else np.arange(6).reshape(2, 3), grad=False)
    _raises(lambda m: getattr(m.fft, name), np.array(2.0))  # no dims to roll: roll refuses
    _raises(lambda m: lambda x: getattr(m.fft, name)(x, dim=()), X35)
    _raises(lambda m: lambda x: getattr(m.fft, name)(x, dim=2), X35)


def test_functional_reexports_and_small_methods():
    F = tp.nn.functional
    for name in ('handle_torch_function', 'has_torch_function', 'has_torch_function_unary',
                 'has_torch_function_variadic'):
        assert getattr(F, name) is getattr(tp.overrides, name)
        assert getattr(torch.nn.functional, name) is getattr(torch.overrides, name)
    _check(lambda m: lambda a: a.narrow_copy(1, 1, 3), X35)
    _check(lambda m: lambda a: a.narrow_copy(0, 0, 0), X35)
    assert tp.tensor(X35).t().narrow_copy(0, 1, 2).is_contiguous()
    _raises(lambda m: lambda a: a.narrow_copy(2, 0, 1), X35)
    a = tp.tensor(X45)
    q, tau = a.geqrf()
    ref_q, ref_tau = torch.tensor(X45).geqrf()
    np.testing.assert_allclose(np.abs(_np(q)), np.abs(_np(ref_q)), rtol=1e-10, atol=1e-12)
    assert tuple(tau.shape) == tuple(ref_tau.shape)


@pytest.mark.parametrize('edge_order', [1, 2])
def test_gradient(edge_order):
    x = RNG.standard_normal((4, 5, 3))
    _check(lambda m: lambda a: m.gradient(a, edge_order=edge_order), x)
    _check(lambda m: lambda a: m.gradient(a, spacing=0.5, dim=1, edge_order=edge_order), x)
    _check(lambda m: lambda a: m.gradient(a, spacing=[2.0, 0.25], dim=(2, 0), edge_order=edge_order), x)
    coords = [np.cumsum(RNG.uniform(0.5, 1.5, n)) for n in (4, 5, 3)]
    _check(lambda m: lambda a, *c: m.gradient(a, spacing=list(c), edge_order=edge_order), x, *coords,
           rtol=1e-9, atol=1e-12)
    _check(lambda m: lambda a, c: m.gradient(a, spacing=[c], dim=-2, edge_order=edge_order), x, coords[1],
           rtol=1e-9, atol=1e-12)
    _check(lambda m: lambda a: m.gradient(a, edge_order=edge_order), np.array([[1, 2, 4, 8], [3, 5, 9, 20], [0, 1, 1, 7]]))
    _check(lambda m: lambda a: m.gradient(a, edge_order=edge_order), X35.astype(np.float32), rtol=1e-5)


def test_gradient_errors():
    _raises(lambda m: lambda a: m.gradient(a, edge_order=3), X35)
    _raises(lambda m: lambda a: m.gradient(a, edge_order=2), np.array([1.0, 2.0]))
    _raises(lambda m: lambda a: m.gradient(a, spacing=[1.0, 2.0, 3.0]), X35)
    _raises(lambda m: lambda a: m.gradient(a, spacing=[1.0, 2.0], dim=0), X35)
    _raises(lambda m: lambda a: m.gradient(a, dim=(0, 0)), X35)
    _raises(lambda m: lambda a: m.gradient(a, dim=2), X35)
    assert tp.gradient(tp.tensor(2.0)) == () == torch.gradient(torch.tensor(2.0))
    _raises(lambda m: m.gradient, np.array([True, False, True]))


# ---- triangular solves ----------------------------------------------------------------------

TRI_A = RNG.standard_normal((3, 4, 4)) + np.eye(4) * 3


@pytest.mark.parametrize('upper', [True, False])
@pytest.mark.parametrize('left', [True, False])
@pytest.mark.parametrize('unitriangular', [False, True])
def test_solve_triangular(upper, left, unitriangular):
    b = RNG.standard_normal((3, 4, 2) if left else (3, 2, 4))
    _check(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=upper, left=left,
                                                            unitriangular=unitriangular),
           TRI_A, b, rtol=1e-10, atol=1e-12)
    # batch broadcasting: one A for every right-hand side
    _check(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=upper, left=left), TRI_A[0], b,
           rtol=1e-10, atol=1e-12)


def test_solve_triangular_edges():
    _check(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=True), np.zeros((2, 2)), np.ones((2, 3)),
           grad=False)
    _check(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=False), TRI_A[0].astype(np.float32),
           np.ones((4, 1)), rtol=1e-5, grad=False)
    _raises(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=True), np.ones((2, 3)), np.ones((2, 3)))
    _raises(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=True, left=False), TRI_A[0],
            np.ones((4, 3)))
    _raises(lambda m: lambda a, v: m.linalg.solve_triangular(a, v), TRI_A[0], np.ones((4, 3)))
    _raises(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=True), np.eye(2, dtype=np.int32),
            np.ones((2, 2), dtype=np.int32))
    _check(lambda m: lambda a, v: m.linalg.solve_triangular(a, v, upper=True), TRI_A[0],
           np.ones((4, 1), dtype=np.float32), rtol=1e-10, grad=False)


@pytest.mark.parametrize('upper', [False, True])
def test_cholesky_solve_and_inverse(upper):
    spd = TRI_A @ np.swapaxes(TRI_A, -1, -2) + np.eye(4)
    factor = np.linalg.cholesky(spd)
    if upper:
        factor = np.swapaxes(factor, -1, -2)
    b = RNG.standard_normal((3, 4, 2))
    _check(lambda m: lambda v, f: m.cholesky_solve(v, f, upper), b, factor, rtol=1e-9, atol=1e-11)
    _check(lambda m: lambda v, f: v.cholesky_solve(f, upper=upper), b, factor, rtol=1e-9, atol=1e-11)
    _check(lambda m: lambda f: m.cholesky_inverse(f, upper), factor, rtol=1e-9, atol=1e-11)
    _check(lambda m: lambda f: f[0].cholesky_inverse(upper=upper), factor, rtol=1e-9, atol=1e-11)
    _raises(lambda m: m.cholesky_inverse, np.ones((2, 3)))
    _raises(lambda m: m.cholesky_solve, np.ones((2, 3)), np.ones((2, 3)))


def test_deprecated_autocast_accessors():
    pairs = [('get_autocast_cpu_dtype', ()), ('is_autocast_cpu_enabled', ()), ('get_autocast_gpu_dtype', ())]
    for name, args in pairs:
        with pytest.warns(DeprecationWarning):
            ours = getattr(tp, name)(*args)
        with pytest.warns(DeprecationWarning):
            ref = getattr(torch, name)(*args)
        assert str(ours).split('.')[-1] == str(ref).split('.')[-1]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            tp.set_autocast_cpu_dtype(tp.float16)
            assert tp.get_autocast_dtype('cpu') == tp.float16
            tp.set_autocast_cpu_enabled(True)
            assert tp.is_autocast_enabled('cpu')
            tp.set_autocast_gpu_dtype(tp.bfloat16)
            assert tp.get_autocast_dtype('cuda') == tp.bfloat16
        finally:
            tp.set_autocast_cpu_enabled(False)
            tp.set_autocast_cpu_dtype(tp.bfloat16)
            tp.set_autocast_gpu_dtype(tp.float16)
    assert tp.GradScaler is tp.amp.GradScaler
    assert tp.get_autocast_cpu_dtype in tp.overrides.get_ignored_functions()


def test_nonzero_static_norm_except_dim_and_devices():
    x = np.array([[0, 1, 0], [2, 0, 3]])
    for size, fill in ((5, -1), (2, 9), (3, 0), (0, -1)):
        _check(lambda m: lambda a: m.nonzero_static(a, size=size, fill_value=fill), x)
        _check(lambda m: lambda a: a.nonzero_static(size=size), x.astype(np.float32), grad=False)
    _check(lambda m: lambda a: m.nonzero_static(a, size=2), np.array(3))
    _raises(lambda m: lambda a: m.nonzero_static(a, size=-1), x)
    v = RNG.standard_normal((3, 4, 5))
    for p, d in ((2, 0), (2, 1), (3, 2), (2, -1), (1, 1)):
        _check(lambda m: lambda a: m.norm_except_dim(a, p, d), v, rtol=1e-10)
    assert tp.get_device_module('cpu') is tp.cpu and tp.get_device_module(tp.device('cpu')) is tp.cpu
    assert tp.get_device_module('cuda') is tp.cuda
    if not tp.cuda.is_available():
        assert tp.get_device_module() is tp.cpu
    with pytest.raises(RuntimeError, match="'meta'"):
        tp.get_device_module('meta')
    t = tp.arange(4.0)
    back = tp.from_dlpack(tp.to_dlpack(t))
    back[0] = 7.0
    assert t[0].item() == 7.0  # shares memory
    _raises(lambda m: m.to_dlpack, [1.0])
