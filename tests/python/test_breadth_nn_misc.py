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
