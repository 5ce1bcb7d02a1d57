"""The remaining nn names against torch: the top-level recurrent functions (tp.lstm, tp.gru,
tp.rnn_tanh, tp.rnn_relu and their *_cell forms), tp.ctc_loss, tp.affine_grid_generator,
fractional max pooling, CrossMapLRN2d, F.multi_head_attention_forward and
linear_cross_entropy."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().tolist())


def _tp(t):
    return tp.tensor(t.detach().numpy(), requires_grad=t.requires_grad)


def _close(a, b, rtol=1e-7, atol=1e-9):
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split('.')[-1] == str(b.dtype).split('.')[-1]
    np.testing.assert_allclose(_np(b), _np(a), rtol=rtol, atol=atol)


# ---- tp.lstm / gru / rnn_tanh / rnn_relu --------------------------------------------------------

_MODULES = {'lstm': (torch.nn.LSTM, {}), 'gru': (torch.nn.GRU, {}),
            'rnn_tanh': (torch.nn.RNN, {}), 'rnn_relu': (torch.nn.RNN, {'nonlinearity': 'relu'})}


@pytest.mark.parametrize('mode', list(_MODULES))
@pytest.mark.parametrize('bidirectional', [False, True])
@pytest.mark.parametrize('batch_first', [False, True])
@pytest.mark.parametrize('bias', [False, True])
def test_stacked_rnn_functions(mode, bidirectional, batch_first, bias):
    torch.manual_seed(0)
    make, kw = _MODULES[mode]
    m = make(4, 6, 2, bias=bias, bidirectional=bidirectional, **kw).double()
    x = torch.randn(*((3, 5, 4) if batch_first else (5, 3, 4)), dtype=torch.float64, requires_grad=True)
    layers = 2 * (2 if bidirectional else 1)
    h = torch.randn(layers, 3, 6, dtype=torch.float64, requires_grad=True)
    hx = (h, torch.randn(layers, 3, 6, dtype=torch.float64)) if mode == 'lstm' else h
    expected = getattr(torch, mode)(x, hx, m._flat_weights, bias, 2, 0.0, False, bidirectional, batch_first)
    params = [_tp(p) for p in m._flat_weights]
    xt = _tp(x)
    hxt = tuple(_tp(a) for a in hx) if mode == 'lstm' else _tp(hx)
    got = getattr(tp, mode)(xt, hxt, params, bias, 2, 0.0, False, bidirectional, batch_first)
    assert isinstance(got, tuple) and len(got) == len(expected)
    for a, b in zip(got, expected):
        _close(a, b)
    sum((o * o).sum() for o in expected).backward()
    sum((o * o).sum() for o in got).backward()
    _close(xt.grad, x.grad)
    _close((hxt[0] if mode == 'lstm' else hxt).grad, h.grad)
    for p, q in zip(params, m._flat_weights):
        _close(p.grad, q.grad)


def test_lstm_packed_and_projected():
    torch.manual_seed(1)
    m = torch.nn.LSTM(4, 6, 1).double()
    packed = torch.nn.utils.rnn.pack_sequence([torch.randn(n, 4, dtype=torch.float64) for n in (5, 3, 2)])
    h = (torch.randn(1, 3, 6, dtype=torch.float64), torch.randn(1, 3, 6, dtype=torch.float64))
    expected = torch.lstm(packed.data, packed.batch_sizes, h, m._flat_weights, True, 1, 0., False, False)
    got = tp.lstm(_tp(packed.data), tp.tensor(packed.batch_sizes.numpy()), tuple(_tp(a) for a in h),
                  [_tp(p) for p in m._flat_weights], True, 1, 0., False, False)
    for a, b in zip(got, expected):
        _close(a, b)
    m = torch.nn.LSTM(4, 6, 2, proj_size=2, bidirectional=True).double()
    x = torch.randn(5, 3, 4, dtype=torch.float64)
    h = (torch.randn(4, 3, 2, dtype=torch.float64), torch.randn(4, 3, 6, dtype=torch.float64))
    expected = torch.lstm(x, h, m._flat_weights, True, 2, 0., False, True, False)
    got = tp.lstm(_tp(x), tuple(_tp(a) for a in h), [_tp(p) for p in m._flat_weights], True, 2, 0.,
                  False, True, False)
    for a, b in zip(got, expected):
        _close(a, b)


def test_stacked_rnn_dropout_draws():
    torch.manual_seed(2)
    m = torch.nn.GRU(4, 6, 3)
    x, h = torch.randn(5, 3, 4), torch.zeros(3, 3, 6)
    torch.manual_seed(3)
    expected = torch.gru(x, h, m._flat_weights, True, 3, 0.5, True, False, False)
    tp.manual_seed(3)
    got = tp.gru(_tp(x), _tp(h), [_tp(p) for p in m._flat_weights], True, 3, 0.5, True, False, False)
    for a, b in zip(got, expected):
        _close(a, b, rtol=1e-5, atol=1e-6)


def test_stacked_rnn_errors():
    x, h = tp.randn(5, 3, 4), tp.zeros(1, 3, 6)
    w = [tp.randn(18, 4), tp.randn(18, 6)]
    with pytest.raises(RuntimeError, match='incorrect number of RNN parameters'):
        tp.gru(x, h, w[:1] + w, False, 1, 0., False, False, False)
    with pytest.raises(RuntimeError, match='Expected more weights'):
        tp.gru(x, h, w, False, 2, 0., False, False, False)
    with pytest.raises(RuntimeError, match='hidden state'):
        tp.gru(x, tp.zeros(2, 3, 6), w, False, 1, 0., False, False, False)
    with pytest.raises(RuntimeError, match='two hidden states'):
        tp.lstm(x, (h,), [tp.randn(24, 4), tp.randn(24, 6)], False, 1, 0., False, False, False)
    with pytest.raises(TypeError, match='gru'):
        tp.gru(x, h, w, False)


@pytest.mark.parametrize('name,gates', [('lstm_cell', 4), ('gru_cell', 3), ('rnn_tanh_cell', 1),
                                        ('rnn_relu_cell', 1)])
@pytest.mark.parametrize('bias', [False, True])
def test_rnn_cells(name, gates, bias):
    torch.manual_seed(4)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    h = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    w = [torch.randn(gates * 6, 4, dtype=torch.float64, requires_grad=True),
         torch.randn(gates * 6, 6, dtype=torch.float64, requires_grad=True)]
    if bias:
        w += [torch.randn(gates * 6, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    hx = (h, 2 * h) if name == 'lstm_cell' else h
    xt, ht, wt = _tp(x), _tp(h), [_tp(a) for a in w]
    hxt = (ht, 2 * ht) if name == 'lstm_cell' else ht
    expected, got = getattr(torch, name)(x, hx, *w), getattr(tp, name)(xt, hxt, *wt)
    if name != 'lstm_cell':
        expected, got = (expected,), (got,)
    for a, b in zip(got, expected):
        _close(a, b)
    sum(o.sum() for o in expected).backward()
    sum(o.sum() for o in got).backward()
    for a, b in zip([xt, ht] + wt, [x, h] + w):
        _close(a.grad, b.grad)


def test_rnn_cell_errors():
    x = tp.randn(3, 4)
    with pytest.raises(RuntimeError, match='lstm_cell expects two hidden states'):
        tp.lstm_cell(x, (tp.zeros(3, 6),), tp.randn(24, 4), tp.randn(24, 6))
    with pytest.raises(RuntimeError, match='input has inconsistent input_size: got 4 expected 3'):
        tp.gru_cell(x, tp.zeros(3, 6), tp.randn(18, 3), tp.randn(18, 6))
    with pytest.raises(RuntimeError, match='hidden0 has inconsistent hidden_size: got 5, expected 6'):
        tp.gru_cell(x, tp.zeros(3, 5), tp.randn(18, 4), tp.randn(18, 6))
    with pytest.raises(RuntimeError, match="Input batch size 3 doesn't match hidden0 batch size 2"):
        tp.rnn_tanh_cell(x, tp.zeros(2, 6), tp.randn(6, 4), tp.randn(6, 6))
    with pytest.raises(RuntimeError, match='hidden1 has inconsistent hidden_size'):
        tp.lstm_cell(x, (tp.zeros(3, 6), tp.zeros(3, 5)), tp.randn(24, 4), tp.randn(24, 6))


# ---- tp.ctc_loss, tp.affine_grid_generator ------------------------------------------------------

def test_ctc_loss_top_level():
    torch.manual_seed(5)
    lp = torch.randn(6, 2, 5, dtype=torch.float64).log_softmax(2)
    t = torch.randint(1, 5, (2, 3))
    for args in [(), (0,), (0, 0), (0, 1), (0, 2, True)]:
        _close(tp.ctc_loss(_tp(lp), _tp(t), [6, 5], [3, 2], *args),
               torch.ctc_loss(lp, t, [6, 5], [3, 2], *args))
    _close(tp.ctc_loss(_tp(lp), _tp(t), tp.tensor([6, 5]), tp.tensor([3, 2]), 0, 1),
           torch.ctc_loss(lp, t, torch.tensor([6, 5]), torch.tensor([3, 2]), 0, 1))
    with pytest.raises(RuntimeError, match='reduction'):
        tp.ctc_loss(_tp(lp), _tp(t), [6, 5], [3, 2], 0, 3)


@pytest.mark.parametrize('size,align', [([2, 1, 3, 4], False), ([2, 1, 3, 4], True), ([2, 1, 2, 3, 4], False)])
def test_affine_grid_generator(size, align):
    theta = torch.randn(2, len(size) - 2, len(size) - 1, dtype=torch.float64)
    _close(tp.affine_grid_generator(_tp(theta), size, align), torch.affine_grid_generator(theta, size, align))
    with pytest.raises(RuntimeError, match='4d'):
        tp.affine_grid_generator(_tp(theta), [2, 1, 3], align)
    with pytest.raises(TypeError):
        tp.affine_grid_generator(_tp(theta), size)


# ---- fractional max pooling --------------------------------------------------------------------

_FRACTIONAL_CASES = [
    (2, (2, 3, 9, 11), 3, {'output_size': (5, 6)}),
    (2, (3, 10, 7), (2, 3), {'output_size': (6, 4)}),
    (2, (2, 3, 12, 12), 2, {'output_size': 11}),
    (2, (1, 2, 9, 9), 3, {'output_size': 1}),
    (2, (2, 3, 20, 16), 3, {'output_ratio': (0.5, 0.7)}),
    (3, (2, 3, 7, 8, 9), 2, {'output_size': (4, 5, 6)}),
    (3, (3, 7, 8, 9), (1, 2, 3), {'output_size': (5, 6, 5)}),
    (3, (1, 2, 8, 9, 10), 2, {'output_ratio': 0.5}),
]


@pytest.mark.parametrize('dims,shape,kernel,kw', _FRACTIONAL_CASES)
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_fractional_max_pool_seeded(dims, shape, kernel, kw, dtype):
    """Without _random_samples the draws (and so values, indices and gradients) match
    PyTorch's bit for bit under the same seed."""
    for seed in range(3):
        x = torch.randn(*shape, dtype=getattr(torch, dtype), requires_grad=True)
        xt = _tp(x)
        torch.manual_seed(seed)
        expected = getattr(torch.nn.functional, f'fractional_max_pool{dims}d')(x, kernel, return_indices=True, **kw)
        tp.manual_seed(seed)
        got = getattr(tp.nn.functional, f'fractional_max_pool{dims}d')(xt, kernel, return_indices=True, **kw)
        _close(got[0], expected[0], rtol=0, atol=0)
        _close(got[1], expected[1], rtol=0, atol=0)
        g = torch.randn_like(expected[0])
        expected[0].backward(g)
        got[0].backward(_tp(g))
        _close(xt.grad, x.grad, rtol=0, atol=0)


@pytest.mark.parametrize('dtype', ['float16', 'bfloat16'])
def test_fractional_max_pool_reduced_precision(dtype):
    x = torch.randn(2, 3, 50, 40).to(getattr(torch, dtype))
    torch.manual_seed(1)
    expected = torch.nn.functional.fractional_max_pool2d(x, 3, output_ratio=(0.5, 0.5), return_indices=True)
    tp.manual_seed(1)
    got = tp.nn.functional.fractional_max_pool2d(_tp(x.float()).to(getattr(tp, dtype)), 3,
                                                 output_ratio=(0.5, 0.5), return_indices=True)
    _close(got[1], expected[1], rtol=0, atol=0)
    _close(got[0].float(), expected[0].float(), rtol=0, atol=0)


def test_fractional_max_pool_given_samples_and_modules():
    x = torch.randn(2, 3, 9, 9, dtype=torch.float64)
    samples = torch.rand(2, 3, 2, dtype=torch.float64)
    for return_indices in (False, True):
        expected = torch.nn.FractionalMaxPool2d(3, output_size=(5, 4), return_indices=return_indices,
                                                _random_samples=samples)(x)
        m = tp.nn.FractionalMaxPool2d(3, output_size=(5, 4), return_indices=return_indices,
                                      _random_samples=_tp(samples))
        got = m(_tp(x))
        for a, b in zip(got if return_indices else (got,), expected if return_indices else (expected,)):
            _close(a, b, rtol=0, atol=0)
        assert '_random_samples' in dict(m.named_buffers())
    x3 = torch.randn(2, 3, 7, 8, 9, dtype=torch.float64)
    samples3 = torch.rand(4, 3, 3, dtype=torch.float64)  # more rows than the batch is fine
    _close(tp.nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=_tp(samples3))(_tp(x3)),
           torch.nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=samples3)(x3), rtol=0, atol=0)
    assert repr(tp.nn.FractionalMaxPool2d(2, output_ratio=0.5)) == 'FractionalMaxPool2d()'
    torch.manual_seed(7)
    expected = torch.nn.FractionalMaxPool3d(2, output_size=3)(x3)
    tp.manual_seed(7)
    _close(tp.nn.FractionalMaxPool3d(2, output_size=3)(_tp(x3)), expected, rtol=0, atol=0)


def test_fractional_max_pool_nan_and_ties():
    x = torch.tensor([[[[1., float('nan'), 3.], [float('nan'), 5., 5.], [5., 0., 0.]]]])
    s = torch.tensor([[[0.4, 0.6]]])
    for o in (1, 2):
        expected = torch.nn.functional.fractional_max_pool2d(x, 2, output_size=o, return_indices=True,
                                                             _random_samples=s)
        got = tp.nn.functional.fractional_max_pool2d(_tp(x), 2, output_size=o, return_indices=True,
                                                     _random_samples=_tp(s))
        _close(got[1], expected[1], rtol=0, atol=0)
        np.testing.assert_array_equal(_np(got[0]), _np(expected[0]))


_FRACTIONAL_ERRORS = [
    (2, (2, 3, 9, 9), 3, {'output_size': (8, 8)}),
    (2, (2, 3, 9, 9), 3, {'output_size': (7, 8)}),
    (2, (2, 3, 9, 9), 3, {}),
    (2, (2, 3, 9, 9), 3, {'output_ratio': (0.5, 0.5, 0.5)}),
    (2, (2, 3, 9, 9), (3, 3, 3), {'output_size': 4}),
    (2, (2, 3, 9, 9), 3, {'output_size': (4, 4, 4)}),
    (2, (9, 9), 3, {'output_size': 4}),
    (2, (1, 2, 3, 9, 9), 3, {'output_size': 4}),
    (2, (2, 0, 9, 9), 3, {'output_size': 4}),
    (2, (2, 3, 9, 9), 3, {'output_size': 4, '_random_samples': (2, 3, 3)}),
    (2, (2, 3, 9, 9), 3, {'output_size': 4, '_random_samples': (1, 3, 2)}),
    (2, (2, 3, 9, 9), 3, {'output_size': 4, '_random_samples': (2, 4, 2)}),
    (2, (2, 3, 9, 9), 3, {'output_size': 4, '_random_samples': (6, 2)}),
    (2, (2, 3, 9, 9), 3, {'output_size': 4, '_random_samples': 'float64'}),
    (3, (1, 1, 5, 6, 7), 2, {'output_size': (4, 5, 6)}),
    (3, (1, 1, 5, 6, 7), 2, {'output_size': (3, 5, 6)}),
    (3, (1, 1, 5, 6, 7), (1, 1, 2), {'output_size': (4, 6, 5)}),
    (3, (1, 1, 5, 6, 7), 2, {'output_size': (3, 4)}),
    (3, (2, 3, 7, 8, 9), 2, {'output_size': 3, '_random_samples': (2, 3, 2)}),
]


@pytest.mark.parametrize('dims,shape,kernel,kw', _FRACTIONAL_ERRORS)
def test_fractional_max_pool_errors(dims, shape, kernel, kw):
    x = torch.randn(*shape)
    kw_tp = dict(kw)
    s = kw.get('_random_samples')
    if s == 'float64':
        kw['_random_samples'] = torch.rand(shape[0], shape[1], dims, dtype=torch.float64)
    elif s is not None:
        kw['_random_samples'] = torch.rand(*s)
    if s is not None:
        kw_tp['_random_samples'] = _tp(kw['_random_samples'])
    with pytest.raises(Exception) as expected:
        getattr(torch.nn.functional, f'fractional_max_pool{dims}d')(x, kernel, **kw)
    with pytest.raises(expected.type) as got:
        getattr(tp.nn.functional, f'fractional_max_pool{dims}d')(_tp(x), kernel, **kw_tp)
    message = str(expected.value).split(':')[-1].strip()
    if 'Dimension out of range' not in message:
        assert message.split(' (got')[0] in str(got.value)


def test_fractional_max_pool_integer_and_module_errors():
    with pytest.raises(NotImplementedError, match='fractional_max_pool2d'):
        tp.nn.functional.fractional_max_pool2d(tp.ones(1, 1, 5, 5, dtype=tp.int64), 2, output_size=2)
    for make in ('FractionalMaxPool2d', 'FractionalMaxPool3d'):
        for args, kw in [((2,), {}), ((2, 3, 0.5), {}), ((2,), {'output_ratio': 1.5})]:
            with pytest.raises(ValueError) as expected:
                getattr(torch.nn, make)(*args, **kw)
            with pytest.raises(ValueError, match=str(expected.value).split('(')[0]):
                getattr(tp.nn, make)(*args, **kw)


# ---- CrossMapLRN2d -----------------------------------------------------------------------------

@pytest.mark.parametrize('size', [2, 3, 4, 5, 6])
@pytest.mark.parametrize('channels', [1, 3, 8])
def test_cross_map_lrn2d(size, channels):
    """Forward and (legacy-formula) backward as PyTorch's, quirks included."""
    torch.manual_seed(size * 10 + channels)
    x = torch.randn(2, channels, 3, 4, dtype=torch.float64, requires_grad=True)
    m = torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=1.5)
    mt = tp.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=1.5)
    assert repr(mt) == repr(m)
    xt = _tp(x)
    y, yt = m(x), mt(xt)
    _close(yt, y, rtol=1e-12, atol=1e-14)
    g = torch.randn_like(y)
    y.backward(g)
    yt.backward(_tp(g))
    _close(xt.grad, x.grad, rtol=1e-12, atol=1e-14)


def test_cross_map_lrn2d_defaults_and_errors():
    x = torch.randn(2, 6, 5, 5)
    _close(tp.nn.CrossMapLRN2d(3)(_tp(x)), torch.nn.CrossMapLRN2d(3)(x), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match='CrossMapLRN2d: Expected input to be 4D, got 3D instead.'):
        tp.nn.CrossMapLRN2d(3)(tp.randn(6, 5, 5))
    xt = tp.randn(2, 3, 4, 4, requires_grad=True)
    with pytest.raises(RuntimeError):  # PyTorch's legacy backward cannot run size 1
        tp.nn.CrossMapLRN2d(1)(xt).sum().backward()


# ---- F.multi_head_attention_forward ------------------------------------------------------------

def _mha_args(separate, bias, bias_kv, E=8, H=2, kdim=6, vdim=5):
    g = torch.Generator().manual_seed(11)
    r = lambda *s: torch.randn(*s, dtype=torch.float64, generator=g, requires_grad=True)  # noqa: E731
    args = {'in_proj_weight': None if separate else r(3 * E, E),
            'in_proj_bias': r(3 * E) if bias else None,
            'bias_k': r(1, 1, E) if bias_kv else None, 'bias_v': r(1, 1, E) if bias_kv else None,
            'out_proj_weight': r(E, E), 'out_proj_bias': r(E) if bias else None}
    if separate:
        args.update(q_proj_weight=r(E, E), k_proj_weight=r(E, kdim), v_proj_weight=r(E, vdim))
    return args


def _mha_call(lib, q, k, v, E, H, args, zero_attn, **kw):
    conv = (lambda t: t) if lib is torch else (lambda t: None if t is None else _tp(t))
    a = {n: conv(t) for n, t in args.items()}
    fn = lib.nn.functional.multi_head_attention_forward
    return fn(conv(q), conv(k), conv(v), E, H, a['in_proj_weight'], a['in_proj_bias'], a['bias_k'],
              a['bias_v'], zero_attn, 0.0, a['out_proj_weight'], a['out_proj_bias'],
              use_separate_proj_weight='q_proj_weight' in a, q_proj_weight=a.get('q_proj_weight'),
              k_proj_weight=a.get('k_proj_weight'), v_proj_weight=a.get('v_proj_weight'),
              **{n: conv(t) if isinstance(t, torch.Tensor) else t for n, t in kw.items()})


@pytest.mark.parametrize('separate', [False, True])
@pytest.mark.parametrize('bias,bias_kv,zero_attn', [(True, False, False), (False, True, True), (True, True, False)])
@pytest.mark.parametrize('masks', ['none', 'bool', 'float', 'padding', 'both'])
@pytest.mark.parametrize('need_weights,average', [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize('batched', [True, False])
def test_multi_head_attention_forward(separate, bias, bias_kv, zero_attn, masks, need_weights, average, batched):
    E, H, L, S, N = 8, 2, 4, 5, 3
    torch.manual_seed(12)
    kdim, vdim = (6, 5) if separate else (E, E)
    q = torch.randn(*((L, N, E) if batched else (L, E)), dtype=torch.float64)
    k = torch.randn(*((S, N, kdim) if batched else (S, kdim)), dtype=torch.float64)
    v = torch.randn(*((S, N, vdim) if batched else (S, vdim)), dtype=torch.float64)
    kw = {'need_weights': need_weights, 'average_attn_weights': average}
    if masks in ('bool', 'both'):
        kw['attn_mask'] = torch.rand(L, S) > 0.7
    if masks == 'float':
        kw['attn_mask'] = torch.randn(N * H if batched else H, L, S, dtype=torch.float64)
    if masks in ('padding', 'both'):
        kpm = torch.zeros(N, S, dtype=torch.bool)
        kpm[0, -2:] = True
        kw['key_padding_mask'] = kpm if batched else kpm[0]
    args = _mha_args(separate, bias, bias_kv, E, H, kdim, vdim)
    expected = _mha_call(torch, q, k, v, E, H, args, zero_attn, **kw)
    got = _mha_call(tp, q, k, v, E, H, args, zero_attn, **kw)
    _close(got[0], expected[0], rtol=1e-10, atol=1e-12)
    if need_weights:
        _close(got[1], expected[1], rtol=1e-10, atol=1e-12)
    else:
        assert got[1] is None and expected[1] is None


def test_multi_head_attention_forward_static_kv_causal_and_grad():
    E, H, L, S, N = 8, 2, 4, 5, 3
    torch.manual_seed(13)
    q = torch.randn(L, N, E, dtype=torch.float64, requires_grad=True)
    k = torch.randn(S, N, E, dtype=torch.float64)
    sk = torch.randn(N * H, 6, E // H, dtype=torch.float64)
    sv = torch.randn(N * H, 6, E // H, dtype=torch.float64)
    args = _mha_args(False, True, False, E, H)
    kw = dict(static_k=sk, static_v=sv)
    for out_t, out_p in zip(_mha_call(torch, q, k, k, E, H, args, False, **kw),
                            _mha_call(tp, q, k, k, E, H, args, False, **kw)):
        _close(out_p, out_t, rtol=1e-10, atol=1e-12)
    mask = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
    for need in (False, True):
        kw = dict(attn_mask=mask, is_causal=True, need_weights=need)
        expected = _mha_call(torch, q, q, q, E, H, args, False, **kw)
        got = _mha_call(tp, q, q, q, E, H, args, False, **kw)
        _close(got[0], expected[0], rtol=1e-10, atol=1e-12)
    # gradients through every weight
    args = _mha_args(True, True, True, E, H, E, E)
    targs = {n: _tp(t) for n, t in args.items() if t is not None}
    qt = _tp(q)
    out_t = torch.nn.functional.multi_head_attention_forward(
        q, q, q, E, H, None, args['in_proj_bias'], args['bias_k'], args['bias_v'], True, 0.0,
        args['out_proj_weight'], args['out_proj_bias'], use_separate_proj_weight=True,
        q_proj_weight=args['q_proj_weight'], k_proj_weight=args['k_proj_weight'],
        v_proj_weight=args['v_proj_weight'])
    out_p = tp.nn.functional.multi_head_attention_forward(
        qt, qt, qt, E, H, None, targs['in_proj_bias'], targs['bias_k'], targs['bias_v'], True, 0.0,
        targs['out_proj_weight'], targs['out_proj_bias'], use_separate_proj_weight=True,
        q_proj_weight=targs['q_proj_weight'], k_proj_weight=targs['k_proj_weight'],
        v_proj_weight=targs['v_proj_weight'])
    (out_t[0].sum() + out_t[1].sum()).backward()
    (out_p[0].sum() + out_p[1].sum()).backward()
    _close(qt.grad, q.grad, rtol=1e-9, atol=1e-11)
    for n, t in targs.items():
        _close(t.grad, args[n].grad, rtol=1e-9, atol=1e-11)


def test_multi_head_attention_forward_dropout_draws():
    E, H = 8, 2
    torch.manual_seed(14)
    q = torch.randn(4, 3, E)
    args = _mha_args(False, True, False, E, H)
    args = {n: None if t is None else t.detach().float() for n, t in args.items()}
    for need in (True, False):
        outs = []
        for lib in (torch, tp):
            lib.manual_seed(5)
            conv = (lambda t: t) if lib is torch else (lambda t: None if t is None else _tp(t))
            outs.append(lib.nn.functional.multi_head_attention_forward(
                conv(q), conv(q), conv(q), E, H, conv(args['in_proj_weight']), conv(args['in_proj_bias']),
                None, None, False, 0.5, conv(args['out_proj_weight']), conv(args['out_proj_bias']),
                need_weights=need)[0])
        _close(outs[1], outs[0], rtol=1e-5, atol=1e-6)


def test_multi_head_attention_forward_errors():
    E, H = 8, 2
    q = torch.randn(4, 3, E)
    args = _mha_args(False, True, False, E, H)
    args = {n: None if t is None else t.detach().float() for n, t in args.items()}
    cases = [
        ((q, q, q, 6, H), {}),
        ((q, q, q, E, 3), {}),
        ((q[0, 0], q[0, 0], q[0, 0], E, H), {}),
        ((q, q[:, :, :4], q, E, H), {}),
        ((q, q, q, E, H), {'attn_mask': torch.zeros(4, 5)}),
        ((q, q, q, E, H), {'attn_mask': torch.zeros(5, 4, 4)}),
        ((q, q, q, E, H), {'attn_mask': torch.zeros(4, 4, dtype=torch.int64)}),
        ((q, q, q, E, H), {'key_padding_mask': torch.zeros(3, 5, dtype=torch.bool)}),
        ((q, q, q, E, H), {'is_causal': True}),
        ((q, q[:, :2], q[:, :2], E, H), {}),
    ]
    for (qq, kk, vv, e, h), kw in cases:
        tail = (args['in_proj_weight'], args['in_proj_bias'], None, None, False, 0.0,
                args['out_proj_weight'], args['out_proj_bias'])
        with pytest.raises(Exception) as expected:
            torch.nn.functional.multi_head_attention_forward(qq, kk, vv, e, h, *tail, **kw)
        with pytest.raises(expected.type):
            tp.nn.functional.multi_head_attention_forward(
                _tp(qq), _tp(kk), _tp(vv), e, h,
                *[_tp(t) if isinstance(t, torch.Tensor) else t for t in tail],
                **{n: _tp(t) if isinstance(t, torch.Tensor) else t for n, t in kw.items()})


# ---- linear_cross_entropy ----------------------------------------------------------------------

def _lce_options(lib, kw):
    return None if kw is None else lib.nn.LinearCrossEntropyOptions(**kw)


@pytest.mark.parametrize('options', [None, {}, {'batch_chunk_size': 3}, {'chunking_method': 'aspect_ratio:2'},
                                     {'batch_chunk_size': 4, 'allow_retain_graph': True}])
@pytest.mark.parametrize('reduction', ['mean', 'sum', 'none'])
@pytest.mark.parametrize('bias,class_weight', [(False, False), (True, True)])
@pytest.mark.parametrize('batched', [True, False])
def test_linear_cross_entropy(options, reduction, bias, class_weight, batched):
    torch.manual_seed(20)
    x = torch.randn(*((10, 4) if batched else (4,)), dtype=torch.float64, requires_grad=True)
    W = torch.randn(7, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(7, dtype=torch.float64, requires_grad=True) if bias else None
    cw = torch.rand(7, dtype=torch.float64) if class_weight else None
    t = torch.randint(0, 7, (10,) if batched else ())
    if batched:
        t[2] = -100
    ts = [_tp(a) if a is not None else None for a in (x, W, b, cw)]
    expected = torch.nn.functional.linear_cross_entropy(x, W, t, linear_bias=b, weight=cw, reduction=reduction,
                                                        options=_lce_options(torch, options))
    got = tp.nn.functional.linear_cross_entropy(ts[0], ts[1], _tp(t), linear_bias=ts[2], weight=ts[3],
                                                reduction=reduction, options=_lce_options(tp, options))
    _close(got, expected, rtol=1e-10, atol=1e-12)
    g = torch.randn_like(expected)
    expected.backward(g)
    got.backward(_tp(g))
    for a, e in zip(ts[:3], (x, W, b)):
        if e is not None:
            _close(a.grad, e.grad, rtol=1e-10, atol=1e-12)


def test_linear_cross_entropy_k_dim_probabilities_and_smoothing():
    torch.manual_seed(21)
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    W = torch.randn(6, 3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(6, 3, dtype=torch.float64)
    cases = [(torch.randint(0, 6, (5, 3)), {}), (torch.randn(5, 6, 3, dtype=torch.float64).softmax(1), {}),
             (torch.randint(0, 6, (5, 3)), {'label_smoothing': 0.2, 'ignore_index': 1})]
    for t, kw in cases:
        expected = torch.nn.functional.linear_cross_entropy(x, W, t, linear_bias=b, **kw)
        got = tp.nn.functional.linear_cross_entropy(_tp(x), _tp(W), _tp(t), linear_bias=_tp(b), **kw)
        _close(got, expected, rtol=1e-10, atol=1e-12)
    with pytest.warns(UserWarning, match='options'):
        got = tp.nn.functional.linear_cross_entropy(_tp(x), _tp(W), _tp(cases[0][0]),
                                                    options=tp.nn.LinearCrossEntropyOptions())
    _close(got, torch.nn.functional.linear_cross_entropy(x, W, cases[0][0]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize('dtype', ['float16', 'bfloat16'])
def test_linear_cross_entropy_low_precision(dtype):
    torch.manual_seed(22)
    x = torch.randn(16, 8).to(getattr(torch, dtype))
    W = torch.randn(30, 8).to(getattr(torch, dtype))
    t = torch.randint(0, 30, (16,))
    for options in (None, {}):
        expected = torch.nn.functional.linear_cross_entropy(x, W, t, options=_lce_options(torch, options))
        got = tp.nn.functional.linear_cross_entropy(_tp(x.float()).to(getattr(tp, dtype)),
                                                    _tp(W.float()).to(getattr(tp, dtype)), _tp(t),
                                                    options=_lce_options(tp, options))
        assert str(got.dtype) == f'tensorplay.{dtype}'
        _close(got.float(), expected.float(), rtol=1e-2, atol=1e-2)


def test_linear_cross_entropy_module():
    torch.manual_seed(23)
    for kw in [{}, {'bias': True, 'out_features': (3,), 'reduction': 'sum'},
               {'bias': True, 'options': {'batch_chunk_size': 2}, 'weight': torch.rand(7)}]:
        kw_t, kw_p = dict(kw), dict(kw)
        if 'options' in kw:
            kw_t['options'] = _lce_options(torch, kw['options'])
            kw_p['options'] = _lce_options(tp, kw['options'])
        if 'weight' in kw:
            kw_p['weight'] = _tp(kw['weight'])
        m = torch.nn.LinearCrossEntropyLoss(4, 7, **kw_t)
        mt = tp.nn.LinearCrossEntropyLoss(4, 7, **kw_p)
        assert repr(mt) == repr(m).replace('torch.', 'tensorplay.')
        mt.load_state_dict({k: _tp(v) for k, v in m.state_dict().items()})
        x = torch.randn(5, 4)
        t = torch.randint(0, 7, (5,) + tuple(kw.get('out_features', ())))
        _close(mt(_tp(x), _tp(t)), m(x, t), rtol=1e-5, atol=1e-6)


def test_linear_cross_entropy_errors():
    x, W, t = tp.randn(10, 4), tp.randn(7, 4), tp.randint(0, 7, (10,))
    O = tp.nn.LinearCrossEntropyOptions
    F = tp.nn.functional
    cases = [
        (RuntimeError, 'dimensionality 1 or 2, got 3', lambda: F.linear_cross_entropy(x[None], W, t)),
        (RuntimeError, 'at least 2, got 1', lambda: F.linear_cross_entropy(x, W[0], t)),
        (RuntimeError, 'got 4 and 3, respectively', lambda: F.linear_cross_entropy(x, W[:, :3], t)),
        (RuntimeError, r'expected linear_bias shape \(7,\), got \(6,\)',
         lambda: F.linear_cross_entropy(x, W, t, linear_bias=tp.randn(6))),
        (RuntimeError, 'requires batched input', lambda: F.linear_cross_entropy(x[0], W.reshape(7, 1, 4), t[0])),
        (RuntimeError, 'ignore_index cannot be specified',
         lambda: F.linear_cross_entropy(x, W, tp.randn(10, 7).softmax(1), ignore_index=1)),
        (RuntimeError, 'index 9 is out of bounds for dimension 1 with size 7',
         lambda: F.linear_cross_entropy(x, W, tp.full((10,), 9), options=O())),
        (IndexError, 'Target 9 is out of bounds', lambda: F.linear_cross_entropy(x, W, tp.full((10,), 9))),
        (ValueError, 'give different chunk sizes',
         lambda: F.linear_cross_entropy(x, W, t, options=O(batch_chunk_size=3, chunking_method='aspect_ratio'))),
        (ValueError, "invalid acc_policy: 'x'", lambda: O(acc_policy='x')),
        (ValueError, "invalid chunking_method: 'aspect_ratio:0'", lambda: O(chunking_method='aspect_ratio:0')),
        (ValueError, 'batch_chunk_size must be positive int or None, got 0', lambda: O(batch_chunk_size=0)),
        (ValueError, 'acc_dtype must be one of', lambda: O(acc_dtype=tp.int32)),
        (RuntimeError, r'expected weight shape to be \(7,\)', lambda: tp.nn.LinearCrossEntropyLoss(4, 7, weight=tp.ones(3))),
        (RuntimeError, 'label_smoothing to be in range', lambda: tp.nn.LinearCrossEntropyLoss(4, 7, label_smoothing=2)),
    ]
    for exc, match, fn in cases:
        with pytest.raises(exc, match=match):
            fn()
    xr = tp.randn(10, 4, requires_grad=True)
    loss = F.linear_cross_entropy(xr, W, t, options=O(batch_chunk_size=3))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match='backward called twice'):
        loss.backward()
    loss = F.linear_cross_entropy(xr, W, t, options=O(batch_chunk_size=3, allow_retain_graph=True))
    xr.grad = None
    loss.backward(retain_graph=True)
    first = xr.grad.clone()
    loss.backward()
    _close(xr.grad, 2 * first, rtol=1e-6, atol=1e-7)
