"""The top-level recurrent functions PyTorch exposes beside nn.RNN/LSTM/GRU: tp.lstm, tp.gru,
tp.rnn_tanh, tp.rnn_relu (whole stacked layers from a flat parameter list) and their one-step
*_cell forms, with PyTorch's positional signatures.

The layers run the recurrence of nn.RNNBase (nn/modules/rnn.py) through _ParamStack, which
answers the few attributes that recurrence reads from a parameter list instead of a module, so
the functional and module forms compute (and differentiate) identically.
"""
from tensorplay import _C
from tensorplay.nn import functional as F
from tensorplay.nn.modules.rnn import RNNBase
from tensorplay.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

Tensor = _C.Tensor


class _ParamStack:
    """What RNNBase's recurrence needs (mode, sizes, dropout, weights per layer and direction)
    taken from a flat parameter list ordered as nn.RNNBase._flat_weights."""

    _cell = RNNBase._cell
    _run_direction = RNNBase._run_direction
    _can_fuse = RNNBase._can_fuse
    _layer_dropout = RNNBase._layer_dropout
    _forward_fused = RNNBase._forward_fused
    _forward_steps = RNNBase._forward_steps

    def __init__(self, name, mode, params, has_biases, num_layers, dropout, train, bidirectional,
                 proj):
        self.mode, self.num_layers, self.bidirectional = mode, int(num_layers), bool(bidirectional)
        self.dropout, self.training = float(dropout), bool(train)
        self.proj_size = 1 if proj else 0  # only its truth is read (the step uses weight_hr)
        self._per = 2 + (2 if has_biases else 0) + (1 if proj else 0)
        self._has_biases, self._proj = bool(has_biases), bool(proj)
        params = list(params)
        if len(params) % self._per:
            raise RuntimeError(f"{name}: got an incorrect number of RNN parameters ({len(params)} "
                               f"is not a multiple of {self._per})")
        needed = self._per * self.num_layers * (2 if self.bidirectional else 1)
        if len(params) < needed:
            raise RuntimeError(f"{name}: Expected more weights in stacked_rnn (got {len(params)}, "
                               f"need {needed})")
        self._params = params

    def _weights_of(self, layer, direction):
        k = (layer * (2 if self.bidirectional else 1) + direction) * self._per
        p = self._params[k:k + self._per]
        w_ih, w_hh = p[0], p[1]
        b_ih, b_hh = (p[2], p[3]) if self._has_biases else (None, None)
        return w_ih, w_hh, b_ih, b_hh, (p[-1] if self._proj else None)


def _check_tensor(name, what, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{what}' must be Tensor, not {type(t).__name__}")


def _stacked(name, mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
             bidirectional, batch_first):
    """Runs a stacked recurrent layer; returns (output, h_n, c_n or None)."""
    _check_tensor(name, 'input', input)
    is_lstm = mode == "LSTM"
    if is_lstm:
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise RuntimeError(f"{name}: expects two hidden states (h0, c0)")
        h0, c0 = hx
        _check_tensor(name, 'hx[0]', h0)
        _check_tensor(name, 'hx[1]', c0)
    else:
        h0, c0 = hx, None
        _check_tensor(name, 'hx', h0)
    if num_layers < 1:
        raise RuntimeError(f"{name}: num_layers must be at least 1, got {num_layers}")
    # Note [projected LSTM]: as in PyTorch, an LSTM has projections exactly when h0 and c0
    # differ in their last size (h is proj_size wide, c hidden_size wide).
    proj = is_lstm and h0.dim() == 3 and c0.dim() == 3 and h0.size(2) != c0.size(2)
    stack = _ParamStack(name, mode, params, has_biases, num_layers, dropout, train, bidirectional,
                        proj)
    lengths = None
    if batch_sizes is not None:
        _check_tensor(name, 'batch_sizes', batch_sizes)
        x, lengths = pad_packed_sequence(PackedSequence(input, batch_sizes))
        lengths = lengths.to(x.device)
    else:
        if input.dim() != 3:
            raise RuntimeError(f"{name}: input must have 3 dimensions (sequence, batch, "
                               f"features), got {input.dim()}")
        x = input.transpose(0, 1) if batch_first else input
    directions = 2 if stack.bidirectional else 1
    for k, h in enumerate((h0, c0)):
        if h is None:
            continue
        if h.dim() != 3 or h.size(0) != stack.num_layers * directions or h.size(1) != x.size(1):
            raise RuntimeError(f"{name}: Expected hidden state {k} of shape (num_layers * "
                               f"num_directions, batch, hidden) = ({stack.num_layers * directions}, "
                               f"{x.size(1)}, *), got {list(h.shape)}")
    w_ih = stack._weights_of(0, 0)[0]
    if w_ih.dim() != 2 or w_ih.size(1) != x.size(-1):
        raise RuntimeError(f"{name}: input.size(-1) must be equal to the input size of the first "
                           f"weight. Expected {w_ih.size(-1)}, got {x.size(-1)}")
    if stack._can_fuse(x, lengths):
        out, h_n, c_n = stack._forward_fused(x, h0, c0)
    else:
        out, h_n, c_n = stack._forward_steps(x, h0, c0, lengths)
    if lengths is not None:
        out = pack_padded_sequence(out, lengths.cpu(), enforce_sorted=True).data
    elif batch_first:
        out = out.transpose(0, 1)
    return out, h_n, c_n


def _split_packed(args):
    """(input, batch_sizes, rest): the packed overload passes (data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional), the padded one (input, hx, params,
    has_biases, num_layers, dropout, train, bidirectional, batch_first)."""
    if len(args) == 9 and isinstance(args[1], Tensor) and isinstance(args[2], (tuple, list, Tensor)) \
            and isinstance(args[3], (tuple, list)):
        return args[0], args[1], tuple(args[2:]) + (False,)
    if len(args) != 9:
        return None
    return args[0], None, tuple(args[1:])


def _layer_function(name, mode):
    def fn(*args):
        split = _split_packed(args)
        if split is None:
            raise TypeError(f"{name}() takes 9 positional arguments (input, hx, params, "
                            f"has_biases, num_layers, dropout, train, bidirectional, batch_first) "
                            f"or (data, batch_sizes, hx, params, has_biases, num_layers, dropout, "
                            f"train, bidirectional), got {len(args)}")
        input, batch_sizes, rest = split
        out, h_n, c_n = _stacked(name, mode, input, batch_sizes, *rest)
        return (out, h_n, c_n) if mode == "LSTM" else (out, h_n)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"A stacked {mode.replace('_', ' ').lower()} layer over the padded sequence "
                  f"input (or packed data with batch_sizes), weights taken in order from the "
                  f"flat list params (w_ih, w_hh[, b_ih, b_hh][, w_hr] per layer and "
                  f"direction). Returns the output and the final hidden state"
                  f"{'s h_n, c_n' if mode == 'LSTM' else ' h_n'}.")
    return fn


lstm = _layer_function('lstm', 'LSTM')
gru = _layer_function('gru', 'GRU')
rnn_tanh = _layer_function('rnn_tanh', 'RNN_TANH')
rnn_relu = _layer_function('rnn_relu', 'RNN_RELU')


def _check_cell(name, input, hiddens, w_ih, w_hh, gated=False):
    """PyTorch's checks, in its order (a missing dimension raises IndexError from size())."""
    _check_tensor(name, 'input', input)
    _check_tensor(name, 'w_ih', w_ih)
    _check_tensor(name, 'w_hh', w_hh)
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"{name}: input has inconsistent input_size: got {input.size(1)} "
                           f"expected {w_ih.size(1)}")
    for k, h in enumerate(hiddens):
        _check_tensor(name, f'hx[{k}]' if len(hiddens) > 1 else 'hx', h)
        if input.size(0) != h.size(0):
            raise RuntimeError(f"{name}: Input batch size {input.size(0)} doesn't match hidden{k} "
                               f"batch size {h.size(0)}")
        if h.size(1) != w_hh.size(1):
            raise RuntimeError(f"{name}: hidden{k} has inconsistent hidden_size: got {h.size(1)}, "
                               f"expected {w_hh.size(1)}")
    if gated and not (input.is_floating_point() or input.is_complex()) and input.dtype != _C.bool:
        # Note [integer gated cells]: PyTorch's LSTM / GRU cells apply their gates in place,
        # which cannot hold the float gates in an integer tensor (the Elman cells can)
        from tensorplay.nn.functional._common import _scalar_name
        raise RuntimeError(f"{name}: result type Float can't be cast to the desired output type "
                           f"{_scalar_name(input.dtype)}")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: (h, c) from input (batch, input_size) and hx = (h0, c0)."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell('lstm_cell', input, tuple(hx), w_ih, w_hh, gated=True)
    gates = F.linear(input, w_ih, b_ih) + F.linear(hx[0], w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * hx[1] + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: the new hidden state from input (batch, input_size) and hx."""
    _check_cell('gru_cell', input, (hx,), w_ih, w_hh, gated=True)
    ir, iz, inn = F.linear(input, w_ih, b_ih).chunk(3, 1)
    hr, hz, hn = F.linear(hx, w_hh, b_hh).chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return (1 - z) * n + z * hx


def _simple_cell(name, activation):
    def fn(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        _check_cell(name, input, (hx,), w_ih, w_hh)
        return activation(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"One Elman RNN step with {activation.__name__}: "
                  f"{activation.__name__}(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh).")
    return fn


rnn_tanh_cell = _simple_cell('rnn_tanh_cell', _C.tanh)
rnn_relu_cell = _simple_cell('rnn_relu_cell', _C.relu)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """F.ctc_loss with the reduction as PyTorch's enum (0 none, 1 mean, 2 sum).

    Note [ctc_loss default]: PyTorch's top-level binding declares Mean as the default but,
    called without it, returns the per-sample losses; that observed behaviour is kept."""
    names = {0: 'none', 1: 'mean', 2: 'sum'}
    if isinstance(reduction, bool) or reduction not in names:
        raise RuntimeError(f"ctc_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                           f"{reduction!r}")
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, names[reduction],
                      zero_infinity)


def affine_grid_generator(theta, size, align_corners):
    """F.affine_grid's sampling grid, as the op PyTorch's F.affine_grid calls (no defaults,
    no warnings)."""
    _check_tensor('affine_grid_generator', 'theta', theta)
    size = list(size)
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return F.affine_grid(theta, size, bool(align_corners))


__all__ = ['lstm', 'gru', 'rnn_tanh', 'rnn_relu', 'lstm_cell', 'gru_cell', 'rnn_tanh_cell',
           'rnn_relu_cell', 'ctc_loss', 'affine_grid_generator']
