"""GRU and plain RNN layers while exporting (Note [Recurrent layers in the export]).

Note [Recurrent layers in the export]
tp.nn.LSTM runs each layer and direction as one op (``aten._lstm_layer``), which the table
turns into an ONNX Scan. GRU and RNN (and LSTM's step path) loop over time in Python, one
group of ops per step, so a traced graph holds as many steps as the example sequence had:
it exports with a fixed length, and a dynamic sequence axis makes the traces differ. While
exporting, ``RNNBase._forward_steps`` of GRU / RNN_TANH / RNN_RELU modules is replaced by
the same computation with one op per layer and direction, ``tp_onnx::rnn_layer`` (the input
projections of all steps as one linear, then the recurrence), which the table translates to
a Scan over the steps. Packed sequences and inter-layer dropout in training mode keep the
Python loop.
"""
import contextlib
from typing import Optional

import tensorplay as tp
from tensorplay.nn import functional as F

__all__ = ['rnn_layer_op', 'recurrent_layers_as_ops']

_OP = None


def rnn_layer_op():
    """The ``tp_onnx::rnn_layer`` op handle (registered on first use)."""
    global _OP
    if _OP is None:
        @tp.library.custom_op('tp_onnx::rnn_layer', mutates_args=())
        def rnn_layer(gi: tp.Tensor, h0: tp.Tensor, w_hh: tp.Tensor, b_hh: Optional[tp.Tensor],
                      mode: str, reverse: bool) -> tuple[tp.Tensor, tp.Tensor]:
            """One GRU / RNN layer and direction from the input projections gi (seq, batch,
            gates * hidden): (the hidden state of every step, the last one)."""
            h, outs = h0, [None] * gi.shape[0]
            steps = range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])
            for t in steps:
                h = _step(gi[t], h, w_hh, b_hh, mode)
                outs[t] = h
            return tp.stack(outs), h.clone()

        @rnn_layer.register_fake
        def _(gi, h0, w_hh, b_hh, mode, reverse):
            return gi.new_empty((gi.shape[0],) + tuple(h0.shape)), h0.new_empty(tuple(h0.shape))

        _OP = tp.ops.tp_onnx.rnn_layer.default
    return _OP


def _step(gi_t, h, w_hh, b_hh, mode):
    """RNNBase._cell's arithmetic, for GRU and the plain RNNs."""
    if mode == 'GRU':
        gh = F.linear(h, w_hh, b_hh)
        ir, iz, inn = gi_t.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r = tp.sigmoid(ir + hr)
        z = tp.sigmoid(iz + hz)
        n = tp.tanh(inn + r * hn)
        return (1 - z) * n + z * h
    pre = gi_t + F.linear(h, w_hh, b_hh)
    return tp.tanh(pre) if mode == 'RNN_TANH' else tp.relu(pre)


def _forward_steps(self, x, h0, c0, lengths, _original):
    if self.mode not in ('GRU', 'RNN_TANH', 'RNN_RELU') or lengths is not None or (
            self.training and self.dropout > 0 and self.num_layers > 1):
        return _original(self, x, h0, c0, lengths)
    op = rnn_layer_op()
    directions = 2 if self.bidirectional else 1
    seq, h_n = x, []
    for layer in range(self.num_layers):
        outs = []
        for d in range(directions):
            w_ih, w_hh, b_ih, b_hh, _ = self._weights_of(layer, d)
            out, h = op(F.linear(seq, w_ih, b_ih), h0[layer * directions + d], w_hh, b_hh,
                        self.mode, d == 1)
            outs.append(out)
            h_n.append(h)
        seq = outs[0] if directions == 1 else tp.cat(outs, 2)
    return seq, tp.stack(h_n), None


@contextlib.contextmanager
def recurrent_layers_as_ops():
    """Within: GRU and RNN modules run each layer and direction as one tp_onnx::rnn_layer."""
    from tensorplay.nn.modules.rnn import RNNBase
    original = RNNBase._forward_steps

    def patched(self, x, h0, c0, lengths):
        return _forward_steps(self, x, h0, c0, lengths, original)
    RNNBase._forward_steps = patched
    try:
        yield
    finally:
        RNNBase._forward_steps = original
